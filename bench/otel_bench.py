"""What exporting a run's trace costs: per model turn, beside export off.

Two measures, both against a local OTLP/HTTP sink (a loopback HTTP server that answers 200, so the
network is not what is measured):
- in process: building the spans of a recorded stretch (trace/otlp.py spans()) and sending them in one
  request (send()), for runs of 1 to 64 turns (each turn a model call and two tool calls, as the Xi'an
  demo's first turn), with and without message contents; the slope is the cost per model turn;
- end to end: `python agent.py --offline` (the Xi'an run up to its proposal, 2 model turns) in a fresh
  process with export off and on (the difference adds importing the SDK and the exporter once per
  process);
- with --temporal: the Xi'an run on a Temporal dev server (bench/durable_bench.py's), begun and confirmed,
  alternating between a worker and a client that trace (Temporal's tracing interceptor, trace/temporal.py,
  exporting to the sink) and ones that do not; the per-turn overhead of each side and the difference: what
  Temporal's own spans cost a turn (the stretch's spans from the audit file are the first measure's).

    python -m bench.otel_bench [--reps N] [--temporal]
Needs the `otel` extra (pip install -r requirements-otel.txt), and for --temporal the `temporal` one. With
--temporal this process is a Temporal client: it leaves with os._exit (see bench/durable_bench.py).
"""
import argparse
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from bench import workload

ROOT = workload.ROOT


class Sink:
    """A loopback OTLP/HTTP endpoint that accepts everything; counts the bytes it got."""

    def __init__(self):
        sink = self
        self.bytes = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                sink.bytes += len(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def snapshot(turns):
    """A recorded run of `turns` model turns: each but the last asks for two reads, the last answers."""
    messages = [{"role": "system", "content": "You book hotels. " * 40}, {"role": "user", "content": "Book Xi'an."}]
    trace = []
    for n in range(1, turns):
        calls = [{"id": f"c{n}_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                 for i, (name, args) in enumerate((("get_weather", {"city": "Xi'an", "date": "2026-10-01"}),
                                                   ("search_hotels", {"city": "Xi'an", "check_in": "2026-10-01"})))]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": json.dumps({"ok": True, "n": n})}
                     for c in calls]
        trace.append({"turn": n, "model_seconds": 0.5, "tokens": 900 + n, "tokens_estimated": False,
                      "used_tokens": 0, "chars_sent": 900, "chars_full": 900, "notes": [],
                      "tools": [{"id": c["id"], "name": c["function"]["name"], "status": "ok", "guard": None,
                                 "seconds": 0.01, "concurrent": True} for c in calls]})
    messages.append({"role": "assistant", "content": "Done."})
    trace.append({"turn": turns, "model_seconds": 0.3, "tokens": 1000, "tokens_estimated": False, "used_tokens": 0,
                  "chars_sent": 900, "chars_full": 900, "notes": [], "tools": []})
    return {"run_id": f"bench-{turns}", "created": "2026-12-01T00:00:00+0000", "status": "done", "reason": "final",
            "model": "bench", "mode": "local", "messages": messages, "trace": trace,
            "agent": {"name": "bench", "language": "en", "confirm": ["confirm"]}, "tools": []}


def in_process(reps):
    from handloop.trace import otlp, timeline
    sink, before = Sink(), os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = sink.endpoint         # what the exporter reads, for this measure only
    rows = []
    try:
        for capture in (False, True):
            for turns in (1, 4, 16, 64):
                snap = snapshot(turns)
                build, both, sent = [], [], sink.bytes
                for _ in range(reps):
                    started = time.perf_counter()
                    spans = otlp.spans(snap, timeline.build(snap), 0, time.time_ns(), time.time_ns(), "", capture)
                    built = time.perf_counter()
                    assert otlp.send(spans)[0]
                    build.append(built - started)
                    both.append(time.perf_counter() - started)
                rows.append({"capture": capture, "turns": turns, "spans": len(spans),
                             "build_ms": 1000 * statistics.median(build), "total_ms": 1000 * statistics.median(both),
                             "bytes": (sink.bytes - sent) // reps})
    finally:
        sink.close()
        if before is None:
            os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
        else:
            os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = before
    return rows


def end_to_end(reps):
    sink, out = Sink(), {}
    try:
        for label, extra in (("off", {}), ("on", {"OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint})):
            walls = []
            for i in range(reps + 1):
                folder = tempfile.mkdtemp(prefix="otel-bench-")
                env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_", "OTEL_"))}
                env.update(extra, PYTHONPATH=ROOT)
                started = time.perf_counter()
                done = subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), "--offline", "--audit-dir",
                                       folder], env=env, capture_output=True, text=True, timeout=120)
                if done.returncode != 0 or "Trace not exported" in done.stderr:
                    raise SystemExit(done.stderr)
                if i:
                    walls.append(time.perf_counter() - started)
            out[label] = statistics.median(walls)
    finally:
        sink.close()
    return out


def on_temporal(runs):
    """Per-turn overhead of the Xi'an run on Temporal, traced and not, alternating: {side: [seconds per turn]}."""
    import asyncio
    from bench import durable_bench
    sink, found = Sink(), {"export off": [], "export on": []}
    with tempfile.TemporaryDirectory() as folder, durable_bench.dev_server(folder) as address:
        server = durable_bench.Model(0.0)
        places = {"export off": _place(durable_bench, address, folder, server, None),
                  "export on": _place(durable_bench, address, folder, server, sink.endpoint)}
        try:
            for n in range(runs + 1):                          # the first round warms both up
                for side in (("export off", "export on") if n % 2 else ("export on", "export off")):
                    _environ(sink.endpoint if side == "export on" else None)
                    served, started = server.served(), time.perf_counter()
                    turns = asyncio.run(places[side].one(f"{side[7:]}{n}"))
                    if n:
                        found[side].append((time.perf_counter() - started - (server.served() - served)) / turns)
        finally:
            _environ(None)
            for place in places.values():
                place.close()
            server.endpoint.close()
            sink.close()
    found["bytes"] = sink.bytes
    return found


def per_span(count=2000):
    """Microseconds of this process's CPU-side work per Temporal span (trace/temporal.py's provider: made, ended,
    batched and sent to the sink), the thing the noise of a Temporal round trip hides."""
    sink, before = Sink(), os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    _environ(sink.endpoint)
    try:
        from handloop.trace import temporal
        tracer = temporal._provider().get_tracer("bench")
        started = time.perf_counter()
        for n in range(count):
            with tracer.start_as_current_span("RunActivity:agent.tool", attributes={
                    "temporalWorkflowID": "bench", "temporalRunID": "r", "temporalActivityID": str(n)}) as span:
                span.set_attributes({"handloop.attempt": 1, "gen_ai.tool.name": "get_weather"})
        made = time.perf_counter()
        temporal.flush()
        return {"made_us": 1e6 * (made - started) / count, "sent_us": 1e6 * (time.perf_counter() - started) / count,
                "bytes": sink.bytes}
    finally:
        _environ(before)
        sink.close()


def _place(durable_bench, address, folder, server, endpoint):
    """A queue whose worker traces to `endpoint` (None: no export)."""
    _environ(endpoint)
    try:
        return durable_bench.Place(address, folder, server, 1)
    finally:
        _environ(None)


def _environ(endpoint):
    os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    if endpoint:
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--temporal", action="store_true")
    args = p.parse_args(argv)
    rows = in_process(args.reps)
    print("| contents | turns | spans | build ms | build + send ms | bytes sent | ms per turn |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {'on' if r['capture'] else 'off'} | {r['turns']} | {r['spans']} | {r['build_ms']:.2f} | "
              f"{r['total_ms']:.2f} | {r['bytes']} | {r['total_ms'] / r['turns']:.3f} |")
    for capture in (False, True):
        few, many = [r for r in rows if r["capture"] == capture and r["turns"] in (4, 64)]
        slope = (many["total_ms"] - few["total_ms"]) / (many["turns"] - few["turns"])
        print(f"\ncost per model turn (slope 4 -> 64 turns), contents {'on' if capture else 'off'}: {slope:.3f} ms")
    wall = end_to_end(max(3, args.reps // 4))
    print(f"\n`python agent.py --offline` (2 model turns), fresh process: export off {wall['off']:.3f} s, "
          f"on {wall['on']:.3f} s (+{1000 * (wall['on'] - wall['off']):.0f} ms: SDK import, exporter, one request)")
    cost = per_span()
    print(f"\nTemporal's spans (trace/temporal.py): {cost['made_us']:.0f} µs per span made, {cost['sent_us']:.0f} µs "
          f"with its share of the batched export")
    if args.temporal:
        found = on_temporal(max(4, args.reps // 2))
        off, on = (statistics.median(found[k]) for k in ("export off", "export on"))
        print(f"\nOn Temporal (the Xi'an run begun and confirmed, one worker, instant model, "
              f"{len(found['export on'])} runs per side, alternating): overhead per turn {1000 * off:.1f} ms "
              f"untraced, {1000 * on:.1f} ms with Temporal's spans exported (+{1000 * (on - off):.1f} ms per turn; "
              f"{found['bytes']} bytes sent in all)")


if __name__ == "__main__":
    main()
    if "--temporal" in sys.argv:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

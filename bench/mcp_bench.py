"""MCP round trips, measured in one run: one `tools/call` (get_weather) at a time over a persistent
stdio session, our hand-written client and server beside the official SDK's client and server
(and the two crossed), then the seed article's approach of spawning a server per call.

    python -m bench.mcp_bench [--seconds S] [--spawns N] [--sdk-spawns N] [--json PATH]
    python -m bench.mcp_bench --http-vs-stdio [N]

`--http-vs-stdio`: only our client against our server, N (default 100) sequential calls over a
stdio session and over a Streamable HTTP session (`mcp_tools.py --http 127.0.0.1:0`), in both
protocol eras; prints each median and the HTTP/stdio ratio.

Prints, per setup: the median and 90th-percentile round trip and calls per second (sequential
calls, one in flight). The SDK rows need the `mcp` package (test-only dependency); without it
they are skipped. Finishes in well under a minute with the defaults.
"""
import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from handloop import mcp_tools  # noqa: E402

OUR_SERVER = [sys.executable, "-m", "handloop.demo.weather_server"]
SDK_SERVER = [sys.executable, os.path.join(ROOT, "tests", "mcp_sdk_server.py")]
ARGS = {"latitude": 34.2583, "longitude": 108.9286, "date": "2026-10-01"}
WARMUP = 20


def environment():
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}


def summary(name, times, wall):
    """One row: round-trip median and p90 in ms, calls per second over the measured wall time."""
    ordered = sorted(times)
    return {"setup": name, "calls": len(times), "median_ms": statistics.median(ordered) * 1000,
            "p90_ms": ordered[int(len(ordered) * 0.9) - 1] * 1000 if len(ordered) >= 10 else max(ordered) * 1000,
            "calls_per_s": len(times) / wall}


def timed_loop(call, seconds=None, count=None):
    """Call `call()` for about `seconds`, or `count` times, after a warm-up; the list of round trips
    and the wall time."""
    for _ in range(WARMUP):
        call()
    times, started = [], time.perf_counter()
    while (len(times) < count) if count is not None else (time.perf_counter() - started < seconds):
        begin = time.perf_counter()
        call()
        times.append(time.perf_counter() - begin)
    return times, time.perf_counter() - started


def ours_persistent(command, mode, seconds=None, count=None):
    client = mcp_tools.Client(command, env=environment(), mode=mode, timeout=30).start()
    try:
        return timed_loop(lambda: client.call_tool("get_weather", ARGS), seconds, count), client.version
    finally:
        client.close()


def ours_http_counted(mode, count):
    """Our client against `python -m handloop.demo.weather_server --http 127.0.0.1:0` (stopped with SIGTERM after)."""
    from handloop.mcp import http as mcp_http
    proc = subprocess.Popen(OUR_SERVER + ["--http", "127.0.0.1:0"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment())
    try:
        url = proc.stderr.readline().decode().split()[-1]
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        client = mcp_http.HTTPClient(url, mode=mode, timeout=30).start()
        try:
            return timed_loop(lambda: client.call_tool("get_weather", ARGS), count=count), client.version
        finally:
            client.close()
    finally:
        proc.terminate()
        proc.wait(10)


def http_vs_stdio(count):
    print(f"MCP tools/call (get_weather), ours client -> ours server, {count} sequential calls per row · "
          f"Python {platform.python_version()} · {platform.system()} {platform.machine()} · {os.cpu_count()} CPUs")
    rows = []
    for mode in ("auto", "legacy"):
        stdio, http = (dict(summary(name, *outcome[0]), protocol=outcome[1]) for name, outcome in
                       ((f"stdio ({mode})", ours_persistent(OUR_SERVER, mode, count=count)),
                        (f"Streamable HTTP ({mode})", ours_http_counted(mode, count))))
        rows += [stdio, http]
        print(f"  {mode:<6} protocol {stdio['protocol']}: median stdio {stdio['median_ms']:.3f} ms · "
              f"HTTP {http['median_ms']:.3f} ms · HTTP/stdio {http['median_ms'] / stdio['median_ms']:.2f}x")
    print(table(rows))
    return rows


def ours_spawned(count):
    """A new server process, handshake, one call and close, for every call."""
    times, started = [], time.perf_counter()
    for _ in range(count):
        begin = time.perf_counter()
        client = mcp_tools.Client(OUR_SERVER, env=environment(), timeout=30)
        try:
            client.call_tool("get_weather", ARGS)
        finally:
            client.close()
        times.append(time.perf_counter() - begin)
    return (times, time.perf_counter() - started), client.version


async def _sdk_persistent(command, seconds):
    import mcp
    params = mcp.StdioServerParameters(command=command[0], args=command[1:], env=environment())
    async with mcp.Client(params, mode="auto") as client:
        for _ in range(WARMUP):
            await client.call_tool("get_weather", ARGS)
        times, started = [], time.perf_counter()
        while time.perf_counter() - started < seconds:
            begin = time.perf_counter()
            result = await client.call_tool("get_weather", ARGS)
            times.append(time.perf_counter() - begin)
        if result.is_error:
            raise RuntimeError(f"the SDK call failed: {result.content}")
        return (times, time.perf_counter() - started), client.session.protocol_version


async def _sdk_spawned(command, count):
    import mcp
    params = mcp.StdioServerParameters(command=command[0], args=command[1:], env=environment())
    times, started = [], time.perf_counter()
    for _ in range(count):
        begin = time.perf_counter()
        async with mcp.Client(params, mode="auto") as client:
            await client.call_tool("get_weather", ARGS)
            version = client.session.protocol_version
        times.append(time.perf_counter() - begin)
    return (times, time.perf_counter() - started), version


def sdk_available():
    try:
        import mcp  # noqa: F401
    except ImportError:
        return False
    return True


def measure(options):
    rows = []

    def add(name, outcome):
        (times, wall), version = outcome
        rows.append(dict(summary(name, times, wall), protocol=version))

    add("ours client -> ours server, persistent", ours_persistent(OUR_SERVER, "auto", options.seconds))
    add("ours client -> ours server, persistent", ours_persistent(OUR_SERVER, "legacy", options.seconds))
    if sdk_available():
        add("SDK client -> SDK server, persistent", asyncio.run(_sdk_persistent(SDK_SERVER, options.seconds)))
        add("SDK client -> ours server, persistent", asyncio.run(_sdk_persistent(OUR_SERVER, options.seconds)))
        add("ours client -> SDK server, persistent", ours_persistent(SDK_SERVER, "auto", options.seconds))
    add("ours, spawn+handshake+call+close per call", ours_spawned(options.spawns))
    if sdk_available() and options.sdk_spawns:
        add("SDK, spawn+handshake+call+close per call", asyncio.run(_sdk_spawned(SDK_SERVER, options.sdk_spawns)))
    return rows


def table(rows):
    lines = [f"{'setup':<42} {'protocol':<11} {'calls':>6} {'median ms':>10} {'p90 ms':>9} {'calls/s':>9}"]
    for row in rows:
        lines.append(f"{row['setup']:<42} {row['protocol']:<11} {row['calls']:>6} {row['median_ms']:>10.3f} "
                     f"{row['p90_ms']:>9.3f} {row['calls_per_s']:>9.1f}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description="MCP round-trip benchmark (stdio, tools/call)")
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per persistent setup")
    parser.add_argument("--spawns", type=int, default=20, help="calls for our spawn-per-call row")
    parser.add_argument("--sdk-spawns", type=int, default=5, help="calls for the SDK spawn-per-call row (0: skip)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--http-vs-stdio", type=int, nargs="?", const=100, metavar="N",
                        help="only: N calls over stdio and over Streamable HTTP, medians and their ratio")
    options = parser.parse_args(argv)
    if options.http_vs_stdio:
        rows = http_vs_stdio(options.http_vs_stdio)
        if options.json:
            with open(options.json, "w", encoding="utf-8") as f:
                json.dump({"python": platform.python_version(), "rows": rows}, f, indent=1)
        return 0
    if not sdk_available():
        print("mcp (the official SDK) is not installed: SDK rows skipped", file=sys.stderr)
    started = time.perf_counter()
    rows = measure(options)
    print(f"MCP stdio round trips: get_weather, one call in flight · Python {platform.python_version()} · "
          f"{platform.system()} {platform.machine()} · {os.cpu_count()} CPUs")
    print(table(rows))
    print(f"(total {time.perf_counter() - started:.1f} s)")
    if options.json:
        with open(options.json, "w", encoding="utf-8") as f:
            json.dump({"python": platform.python_version(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

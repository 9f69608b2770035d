"""Benchmark harness: our loop's own cost beside the OpenAI Agents SDK, pydantic-ai, LangGraph
and a plain loop (the floor), with the model replaced by a scripted one answering at once.

    python -m bench.run                 # everything, under five minutes; prints the tables
    python -m bench.run --quick         # fewer runs, for a quick look
    python -m bench.run --only ours,floor --markdown bench/RESULTS.md

Peers are optional (pip install -r bench/requirements-peers.txt); one that is not installed
is skipped with a note. Every (system, task) runs in its own worker process.
"""
import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

from bench import workload

SYSTEMS = ("floor", "ours", "ours_fsync", "ours_tmpfs", "agents", "pydantic_ai", "langgraph",
           "agents_sqlite", "langgraph_sqlite")
PEERS = ("agents", "pydantic_ai", "langgraph")                 # in memory: nothing persisted
DURABLE_PEERS = ("agents_sqlite", "langgraph_sqlite")         # every step persisted to SQLite
IN_MEMORY_ONLY = ("ours_fsync", "ours_tmpfs") + DURABLE_PEERS  # these take part in the overhead blocks only
TMPFS = "/dev/shm"          # the same audit writes, with no block device under them
_MODULES = {"ours_fsync": "sys_ours", "ours_tmpfs": "sys_ours", "agents_sqlite": "sys_agents",
            "langgraph_sqlite": "sys_langgraph"}


def system_module(name):
    return importlib.import_module("bench." + _MODULES.get(name, f"sys_{name}"))


def label(name):
    return {"ours": "ours, fsync off", "ours_fsync": "ours, fsync on (production)",
            "ours_tmpfs": "ours, fsync off, audit on tmpfs",
            "agents_sqlite": "OpenAI Agents SDK + SQLiteSession",
            "langgraph_sqlite": "LangGraph + SqliteSaver (durability=sync)"}.get(name) or \
        system_module(name).LABEL


NEEDS = {"agents": ("agents",), "agents_sqlite": ("agents",), "pydantic_ai": ("pydantic_ai",),
         "langgraph": ("langgraph", "langchain_core"),
         "langgraph_sqlite": ("langgraph", "langchain_core", "langgraph.checkpoint.sqlite")}


def available(name):
    """Whether a system can run, found without importing it: the parent stays small (a worker's
    max RSS starts from the parent's, which the kernel carries over the exec)."""
    from importlib.util import find_spec
    if name == "ours_tmpfs" and not os.path.isdir(TMPFS):
        return False, f"no {TMPFS} on this machine"
    for module in NEEDS.get(name, ()):
        try:
            found = find_spec(module) is not None
        except ImportError:
            found = False
        if not found:
            return False, f"not installed ({module}); pip install -r bench/requirements-peers.txt"
    return True, ""


def make_harness(name, task="overhead"):
    reply_for = workload.concurrent_reply if task == "concurrency" else workload.timed_reply
    options = {"folder": TMPFS} if name == "ours_tmpfs" else {}
    if name in DURABLE_PEERS:
        options["durable"] = True
    return system_module(name).Harness(fsync=name == "ours_fsync", reply_for=reply_for, **options)


# ---- inside a worker process ----
def serve(name):
    """A worker of the interleaved overhead benchmark: answers on the real stdout, everything
    else printed goes to stderr."""
    from bench import tasks
    out = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stdout = sys.stderr
    harness = make_harness(name)
    try:
        tasks.serve(harness, sys.stdin, lambda data: out.write(json.dumps(data) + "\n"))
    finally:
        harness.close()


def worker(name, task, args):
    from bench import tasks
    harness = make_harness(name, task)
    try:
        if task == "overhead":
            result = tasks.overhead(harness, args.runs, args.warmup)
        elif task == "concurrency":
            result = tasks.concurrency(harness, args.reps)
        else:
            result = tasks.many(harness, args.many)
    finally:
        harness.close()
    print(json.dumps(result))


def special(task, args):
    from bench import history
    from bench import startup
    if task == "history":
        result = history.scaling(args.turns, args.history_reps)
    elif task == "profile":
        from bench import profile_ours
        result = profile_ours.profile(300 if args.runs >= 1000 and not args.quick else 100)
    elif task == "finish":
        from bench import finish
        result = finish.measure()
    elif task == "cache":
        from bench import cache
        result = cache.measure(args.turns)
        for run in ("xian", "long"):
            for layout in result[run].values():
                layout.pop("per_turn")           # the summary only: per-turn rows are for cache.py's own use
    else:
        result = {"cli": startup.cli(args.reps), "imports": startup.imports(), "first": startup.first_request(args.reps)}
    print(json.dumps(result))


# ---- the parent ----
def interleaved(args, names):
    """Loop overhead of every system, in blocks interleaved in rotating order: one worker
    process per system stays alive; block by block each system in turn runs for `--slice`
    seconds while the others wait. The machine's speed drifts within a run; each block sees
    all systems within a few seconds of one another, so per-block ratios cancel the drift."""
    import tempfile
    procs, errors, ready = {}, {}, {}
    for name in names:
        log = tempfile.TemporaryFile(mode="w+")
        p = subprocess.Popen([sys.executable, "-m", "bench.run", "--serve", name], cwd=ROOT, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)
        procs[name] = (p, log)
    for name, (p, log) in list(procs.items()):
        reply = _ask(p, log, None)
        if "error" in reply:
            errors[name] = reply
            del procs[name]
        else:
            ready[name] = reply
    live = [n for n in names if n in procs]
    blocks = {n: [] for n in live}
    for b in range(args.blocks):
        _say(f"overhead block {b + 1}/{args.blocks} ...")
        k = b % len(live) if live else 0
        for name in live[k:] + live[:k]:
            if name in errors:
                continue
            p, log = procs[name]
            reply = _ask(p, log, {"cmd": "block", "seconds": args.slice, "max_runs": args.runs,
                                  "warmup_runs": args.warmup if b == 0 else 0, "warmup_seconds": 3.0})
            if "error" in reply:
                errors[name] = reply
            else:
                blocks[name].append(reply)
    out = {}
    for name in live:
        p, log = procs[name]
        if name not in errors:
            final = _ask(p, log, {"cmd": "finish", "peak_runs": 10 if args.quick else 50})
            if "error" in final:
                errors[name] = final
            else:
                out[name] = _pool(blocks[name], final, ready[name]["model_turns"])
        p.stdin.close()
        p.wait(timeout=60)
        log.close()
    out.update({name: {"overhead": e} for name, e in errors.items()})
    return out


def _ask(p, log, command):
    """Send one command to a serving worker, read its one-line answer (or its error)."""
    try:
        if command is not None:
            p.stdin.write(json.dumps(command) + "\n")
            p.stdin.flush()
        line = p.stdout.readline()
        if line:
            return json.loads(line)
    except (BrokenPipeError, ValueError):
        pass
    p.wait(timeout=60)
    log.seek(0)
    return {"error": (log.read().strip().splitlines() or ["exit %s" % p.returncode])[-1]}


def _pool(blocks, final, turns):
    import statistics
    from bench import tasks
    samples = [x for b in blocks for x in b["samples"]]
    runs = [len(b["samples"]) for b in blocks]
    cpu = sum(b["cpu_us"] * n for b, n in zip(blocks, runs)) / sum(runs)
    return {"overhead": dict(tasks._spread(samples), runs=len(samples), cpu_us=cpu, model_turns=turns,
                             blocks=[statistics.fmean(b["samples"]) for b in blocks], peak_kb=final["peak_kb"],
                             rss_mb=final["rss_mb"])}


def spawn(args, *worker_args):
    """Run one worker; its JSON result, or {"error": ...}."""
    command = [sys.executable, "-m", "bench.run", "--worker", *worker_args, "--runs", str(args.runs),
               "--warmup", str(args.warmup), "--reps", str(args.reps), "--many", str(args.many),
               "--turns", str(args.turns), "--history-reps", str(args.history_reps)]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1], "seconds": seconds}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["seconds"] = seconds
    return result


def _load():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def machine():
    info = {"python": platform.python_version(), "executable": sys.executable, "platform": platform.platform(),
            "nproc": os.cpu_count(), "load_start": _load()}
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
        with open("/proc/meminfo") as f:
            info["ram_gb"] = round(int(f.readline().split()[1]) / 1024 ** 2, 1)
    except OSError:
        pass
    return info


def versions(names):
    from importlib.metadata import PackageNotFoundError, version
    out = {}
    for package in ("openai", "json5", "openai-agents", "pydantic-ai-slim", "pydantic", "langgraph", "langchain-core",
                    "langgraph-checkpoint-sqlite"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = None
    return out


def collect(args):
    chosen = [s for s in SYSTEMS if not args.only or s in args.only or (s.startswith("ours_") and "ours" in args.only)]
    results = {"machine": machine(), "versions": versions(chosen), "settings": vars(args).copy(), "systems": {},
               "notes": []}
    ok_names = []
    for name in chosen:
        ok, note = available(name)
        if ok:
            ok_names.append(name)
        else:
            results["notes"].append(f"{label(name)} skipped: {note}")
    started = time.perf_counter()
    results["systems"] = {name: dict(entry) for name, entry in interleaved(args, ok_names).items()}
    results["overhead_seconds"] = time.perf_counter() - started
    for name in ok_names:
        entry = results["systems"].setdefault(name, {})
        for task in ("concurrency", "many"):
            if name in IN_MEMORY_ONLY:
                continue
            _say(f"{name}: {task} ...")
            entry[task] = spawn(args, name, task)
    if not args.only or "ours" in args.only:
        for task in ("cache", "finish", "profile", "history", "startup"):
            _say(f"ours: {task} ...")
            results[task] = spawn(args, "special", task)
    return results


def _say(text):
    print(text, file=sys.stderr, flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="200 runs instead of 2,000, fewer repetitions")
    p.add_argument("--only", type=lambda s: set(s.split(",")), help=f"comma-separated subset of {','.join(SYSTEMS)}")
    p.add_argument("--json", metavar="FILE", help="also write the raw results as JSON")
    p.add_argument("--markdown", metavar="FILE", help="also write the tables as Markdown")
    p.add_argument("--worker", nargs=2, metavar=("SYSTEM", "TASK"), help=argparse.SUPPRESS)
    p.add_argument("--serve", metavar="SYSTEM", help=argparse.SUPPRESS)
    p.add_argument("--blocks", type=int, default=20, help="interleaved overhead blocks (default 20)")
    p.add_argument("--slice", type=float, default=0.5, help="seconds each system runs per block (default 0.5)")
    p.add_argument("--runs", type=int, default=2000, help="at most this many runs per system per block")
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--many", type=int, default=100)
    p.add_argument("--turns", type=int, default=200)
    p.add_argument("--history-reps", type=int, default=3)
    args = p.parse_args(argv)
    if args.quick:
        args.warmup, args.reps, args.history_reps, args.blocks, args.slice = 50, 3, 1, 5, 0.15
    if args.serve:
        return serve(args.serve)
    if args.worker:
        name, task = args.worker
        return special(task, args) if name == "special" else worker(name, task, args)
    started = time.perf_counter()
    results = collect(args)
    results["total_seconds"] = time.perf_counter() - started
    results["machine"]["load_end"] = _load()
    from bench import report
    text = report.render(results, label)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, ensure_ascii=False, indent=1)
    if args.markdown:
        before = open(args.markdown, encoding="utf-8").read() if os.path.exists(args.markdown) else ""
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(report.document(text, results, before))
    return 0


if __name__ == "__main__":
    sys.exit(main())

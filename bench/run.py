"""Benchmark harness: our loop's own cost beside the OpenAI Agents SDK, pydantic-ai, LangGraph
and a plain loop (the floor), with the model replaced by a scripted one answering at once.

    python bench/run.py                 # everything, under five minutes; prints the tables
    python bench/run.py --quick         # fewer runs, for a quick look
    python bench/run.py --only ours,floor --markdown bench/RESULTS.md

Peers are optional (pip install -r bench/requirements-peers.txt); one that is not installed
is skipped with a note. Every (system, task) runs in its own worker process.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import workload  # noqa: E402  (puts the project root on sys.path)

SYSTEMS = ("floor", "ours", "ours_fsync", "ours_tmpfs", "agents", "pydantic_ai", "langgraph")
PEERS = ("agents", "pydantic_ai", "langgraph")
TMPFS = "/dev/shm"          # the same audit writes, with no block device under them


def system_module(name):
    return __import__({"ours_fsync": "sys_ours", "ours_tmpfs": "sys_ours"}.get(name, f"sys_{name}"))


def label(name):
    return {"ours": "ours, fsync off", "ours_fsync": "ours, fsync on (production)",
            "ours_tmpfs": "ours, fsync off, audit on tmpfs"}.get(name) or \
        system_module(name).LABEL


# ---- inside a worker process ----
def worker(name, task, args):
    import tasks
    module = system_module(name)
    reply_for = workload.concurrent_reply if task == "concurrency" else workload.timed_reply
    options = {"folder": TMPFS} if name == "ours_tmpfs" else {}
    harness = module.Harness(fsync=name == "ours_fsync", reply_for=reply_for, **options)
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
    import history
    import startup
    if task == "history":
        result = history.scaling(args.turns, args.history_reps)
    elif task == "cache":
        import cache
        result = cache.measure(args.turns)
        for run in ("xian", "long"):
            for layout in result[run].values():
                layout.pop("per_turn")           # the summary only: per-turn rows are for cache.py's own use
    else:
        result = {"cli": startup.cli(args.reps), "imports": startup.imports(), "first": startup.first_request(args.reps)}
    print(json.dumps(result))


# ---- the parent ----
def spawn(args, *worker_args):
    """Run one worker; its JSON result, or {"error": ...}."""
    command = [sys.executable, os.path.abspath(__file__), "--worker", *worker_args, "--runs", str(args.runs),
               "--warmup", str(args.warmup), "--reps", str(args.reps), "--many", str(args.many),
               "--turns", str(args.turns), "--history-reps", str(args.history_reps)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
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
    for package in ("openai", "json5", "openai-agents", "pydantic-ai-slim", "pydantic", "langgraph", "langchain-core"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = None
    return out


def collect(args):
    chosen = [s for s in SYSTEMS if not args.only or s in args.only or (s.startswith("ours_") and "ours" in args.only)]
    results = {"machine": machine(), "versions": versions(chosen), "settings": vars(args).copy(), "systems": {},
               "notes": []}
    for name in chosen:
        ok, note = system_module(name).available()
        if name == "ours_tmpfs" and not os.path.isdir(TMPFS):
            ok, note = False, f"no {TMPFS} on this machine"
        if not ok:
            results["notes"].append(f"{label(name)} skipped: {note}")
            continue
        entry = results["systems"][name] = {}
        for task in ("overhead", "concurrency", "many"):
            if name in ("ours_fsync", "ours_tmpfs") and task != "overhead":
                continue
            _say(f"{name}: {task} ...")
            entry[task] = spawn(args, name, task)
    if not args.only or "ours" in args.only:
        for task in ("cache", "history", "startup"):
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
    p.add_argument("--runs", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--many", type=int, default=100)
    p.add_argument("--turns", type=int, default=200)
    p.add_argument("--history-reps", type=int, default=3)
    args = p.parse_args(argv)
    if args.quick:
        args.runs, args.warmup, args.reps, args.history_reps = 200, 50, 3, 1
    if args.worker:
        name, task = args.worker
        return special(task, args) if name == "special" else worker(name, task, args)
    started = time.perf_counter()
    results = collect(args)
    results["total_seconds"] = time.perf_counter() - started
    results["machine"]["load_end"] = _load()
    import report
    text = report.render(results, label)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, ensure_ascii=False, indent=1)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(report.document(text, results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

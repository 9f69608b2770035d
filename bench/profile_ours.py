"""Where our loop's time goes per model turn: cProfile over runs of the overhead workload
(fsync off, audit on disk), own time per function and per module, as shares of the total.
cProfile slows Python code more than C code, so the shares, not the µs, are the figures to read;
it sees the main thread only, so the tools (run on the executor's worker threads) show up as the
main thread's wait for them.

    python -m bench.profile_ours [RUNS]
"""
import cProfile
import os
import pstats
import sys

from bench import sys_ours

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _where(filename):
    if filename.startswith(ROOT):
        return os.path.relpath(filename, ROOT)
    if filename.startswith("~") or filename.startswith("<"):
        return "builtins (C)"
    return "stdlib: " + os.path.basename(filename)


# the loop's steps, cumulative time (the function and everything it calls)
STEPS = (("audit.py", "write", "audit write (encode + spare file, link, rename)"),
         ("audit.py", "parts", "  of which JSON encoding of the snapshot (Writer.parts)"),
         ("executor.py", "execute", "executor (tools run, thread hand-off included)"),
         ("executor.py", "wait", "  of which waiting for the worker thread"),
         ("toolset.py", "prepare", "parse + validate the calls (ToolSet.prepare)"),
         ("guards.py", "screen", "guards (screen)"),
         ("loop.py", "compact", "request layout (loop.compact)"),
         ("memory.py", "absorb_turn", "memory update (absorb_turn)"),
         ("executor.py", "tool_messages", "tool messages (JSON results)"),
         ("runs.py", "begin", "run setup (runs.begin, first audit file included)"))


def profile(runs=300, top=15):
    harness = sys_ours.Harness()
    try:
        for _ in range(30):                                   # warm-up
            state = harness.prepare()
            harness.go(state)
            harness.check(state)
        states = [harness.prepare() for _ in range(runs)]
        profiler = cProfile.Profile()
        profiler.enable()
        for state in states:
            harness.go(state)
        profiler.disable()
        for state in states:
            harness.check(state)
    finally:
        harness.close()
    stats = pstats.Stats(profiler).stats
    turns = runs * sys_ours.Harness.model_turns
    total = sum(v[2] for v in stats.values())
    functions, modules = [], {}
    for (filename, line, name), (cc, nc, tt, ct, callers) in stats.items():
        where = _where(filename)
        functions.append({"function": f"{where}:{line}({name})" if not where.startswith("builtins") else name,
                          "own_us": tt / turns * 1e6, "share": tt / total, "calls_per_turn": nc / turns})
        modules[where] = modules.get(where, 0.0) + tt
    functions.sort(key=lambda f: -f["own_us"])
    steps = []
    for module, name, title in STEPS:
        cum = sum(v[3] for (filename, _, fn), v in stats.items() if fn == name and filename.endswith(os.sep + module)
                  and filename.startswith(ROOT))
        steps.append({"step": title, "cum_us": cum / turns * 1e6, "share": cum / total})
    by_module = sorted(({"module": m, "own_us": t / turns * 1e6, "share": t / total} for m, t in modules.items()),
                       key=lambda m: -m["own_us"])
    return {"runs": runs, "model_turns": turns, "total_us_per_turn": total / turns * 1e6,
            "functions": functions[:top], "modules": by_module[:12], "steps": steps}


if __name__ == "__main__":
    result = profile(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
    print(f"{result['total_us_per_turn']:.0f} µs per model turn under cProfile")
    for m in result["steps"]:
        print(f"{m['share'] * 100:5.1f} %  {m['cum_us']:7.1f} µs  {m['step']}")
    print()
    for m in result["modules"]:
        print(f"{m['share'] * 100:5.1f} %  {m['own_us']:7.1f} µs  {m['module']}")
    print()
    for f in result["functions"]:
        print(f"{f['share'] * 100:5.1f} %  {f['own_us']:7.1f} µs  {f['calls_per_turn']:6.1f}/turn  {f['function']}")

"""The measurements that every system takes part in, run inside one worker process per
(system, task) so that imports, caches and garbage of one system never weigh on another.

Each task prepares its runs untimed (Harness.prepare), times only Harness.go, checks every
run afterwards (Harness.check and the tool-call counts: the tools really ran), and returns
a JSON-able dict.
"""
import asyncio
import gc
import inspect
import json
import resource
import statistics
import threading
import time
import tracemalloc

from bench import workload


CPU = {"seconds": 0.0}        # process CPU time (all threads) spent inside timed runs


def _cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _driver(harness):
    """(timed(state) -> wall seconds, event loop or None), whether the harness is sync or async.
    Also adds the run's process CPU time to CPU: less disturbed than wall time by other
    processes on the machine."""
    if inspect.iscoroutinefunction(harness.go):
        loop = asyncio.new_event_loop()

        async def timed(state):
            cpu, started = _cpu(), time.perf_counter()
            await harness.go(state)
            wall = time.perf_counter() - started
            CPU["seconds"] += _cpu() - cpu
            return wall
        return (lambda state: loop.run_until_complete(timed(state))), loop

    def timed_sync(state):
        cpu, started = _cpu(), time.perf_counter()
        harness.go(state)
        wall = time.perf_counter() - started
        CPU["seconds"] += _cpu() - cpu
        return wall
    return timed_sync, None


def _expected(harness, expected):
    """The tool calls of one timed run: the workload's, plus those of a timed preface (ours)."""
    extra = getattr(harness, "preface_calls", {})
    return {name: expected.get(name, 0) + extra.get(name, 0) for name in set(expected) | set(extra)}


def _one(harness, timed, expected=workload.EXPECTED, turns=workload.TURNS):
    state = harness.prepare()
    before = workload.COUNTS.snapshot()
    seconds = timed(state)
    harness.check(state, turns)
    workload.COUNTS.expect(before, expected=_expected(harness, expected), what=harness.__class__.__module__)
    return seconds


def model_turns(harness):
    """Model turns one timed run makes (ours times its preface too)."""
    return getattr(harness, "model_turns", workload.TURNS)


def overhead(harness, runs, warmup):
    """Seconds per run of the workload → per-model-turn mean and p99, and memory (one slot)."""
    timed, loop = _driver(harness)
    turns = model_turns(harness)
    for _ in range(warmup):
        _one(harness, timed)
    CPU["seconds"] = 0.0
    samples = [_one(harness, timed) for _ in range(runs)]
    cpu_us = CPU["seconds"] / runs / turns * 1e6
    peak = _peak_bytes(harness, timed, runs=min(50, runs))
    per_turn = sorted(s / turns * 1e6 for s in samples)
    if loop:
        loop.close()
    return dict(_spread(per_turn), runs=runs, warmup=warmup, cpu_us=cpu_us, model_turns=turns,
                peak_kb=peak / 1024, rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def _spread(per_turn):
    per_turn = sorted(per_turn)
    return {"mean_us": statistics.fmean(per_turn), "p50_us": per_turn[len(per_turn) // 2],
            "p99_us": per_turn[min(len(per_turn) - 1, int(len(per_turn) * 0.99))]}


def serve(harness, commands, answer):
    """The interleaved overhead benchmark, one system's side: the parent sends commands (one
    JSON object a line) and this worker answers each with one JSON line. While the other systems
    take their blocks, this process waits on its pipe and uses no CPU.

      {"cmd": "block", "seconds": s, "max_runs": n, "warmup_runs": w, "warmup_seconds": ws}
          warm-up runs (untimed, first block only), then timed runs until s seconds of wall
          time have passed (at least 3 runs): per-model-turn µs of each run, and CPU µs
      {"cmd": "finish", "peak_runs": n}   peak memory of one run, max RSS; then the worker exits
    """
    timed, loop = _driver(harness)
    turns = model_turns(harness)
    answer({"ready": True, "model_turns": turns})
    for line in commands:
        command = json.loads(line)
        if command["cmd"] == "block":
            started = time.perf_counter()
            for i in range(command.get("warmup_runs", 0)):
                _one(harness, timed)
                if time.perf_counter() - started > command.get("warmup_seconds", 1e9):
                    break
            CPU["seconds"], samples, started = 0.0, [], time.perf_counter()
            while len(samples) < 3 or (time.perf_counter() - started < command["seconds"]
                                       and len(samples) < command["max_runs"]):
                samples.append(_one(harness, timed) / turns * 1e6)
            answer({"samples": samples, "cpu_us": CPU["seconds"] / len(samples) / turns * 1e6})
        else:
            peak = _peak_bytes(harness, timed, runs=command.get("peak_runs", 50))
            answer({"peak_kb": peak / 1024, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
            break
    if loop:
        loop.close()


def _peak_bytes(harness, timed, runs):
    """Most memory a single run held at once beyond what was allocated before it (tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    worst = 0
    try:
        for _ in range(runs):
            state = harness.prepare()
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            timed(state)
            worst = max(worst, tracemalloc.get_traced_memory()[1] - base)
            harness.check(state)
    finally:
        tracemalloc.stop()
    return worst


def concurrency(harness, reps):
    """One turn with three tools sleeping 0.2 s each, then the answer: wall time over 0.2 s."""
    timed, loop = _driver(harness)
    workload.SLEEP["seconds"] = workload.CONCURRENT_SECONDS
    try:
        walls = [_one(harness, timed, workload.CONCURRENT_EXPECTED, turns=2) for _ in range(reps)]
    finally:
        workload.SLEEP["seconds"] = 0.0
        if loop:
            loop.close()
    ratios = sorted(w / workload.CONCURRENT_SECONDS for w in walls)
    return {"reps": reps, "median_ratio": statistics.median(ratios), "worst_ratio": ratios[-1],
            "median_s": statistics.median(walls)}


def many(harness, n):
    """n runs one after another, then n runs at once in this process: runs per second."""
    timed, loop = _driver(harness)
    for _ in range(20):
        _one(harness, timed)                                     # warm-up
    states = [harness.prepare() for _ in range(n)]
    before = workload.COUNTS.snapshot()
    started = time.perf_counter()
    for state in states:
        timed(state)
    sequential = time.perf_counter() - started
    _check_all(harness, states, before)
    states = [harness.prepare() for _ in range(n)]
    before = workload.COUNTS.snapshot()
    at_once = _at_once(harness, states, loop)
    _check_all(harness, states, before)
    if loop:
        loop.close()
    return {"n": n, "sequential_rps": n / sequential, "at_once_rps": n / at_once,
            "how": "asyncio.gather" if loop else "one thread per run"}


def _at_once(harness, states, loop):
    started = time.perf_counter()
    if loop:
        async def all_runs():
            await asyncio.gather(*(harness.go(s) for s in states))
        loop.run_until_complete(all_runs())
    else:
        errors = []

        def work(state):
            try:
                harness.go(state)
            except BaseException as exc:      # surfaced below: a failed run fails the benchmark
                errors.append(exc)
        threads = [threading.Thread(target=work, args=(s,)) for s in states]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
    return time.perf_counter() - started


def _check_all(harness, states, before):
    for state in states:
        harness.check(state)
    workload.COUNTS.expect(before, runs=len(states), expected=_expected(harness, workload.EXPECTED),
                           what=harness.__class__.__module__)

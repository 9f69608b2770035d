"""Scaling with history, and context sent: one 200-turn run of our loop with 2 KB tool results.

Turn 1 sets the plan, looks at the weather and searches; every later turn searches hotels for another check-in
date (distinct arguments, so no spin), each result padded to about 2 KB; the last turn
calls book_hotel, which the unconfirmed-write guard holds as the proposal, so the run suspends waiting for the
user's confirmation (a proposal in words would not end it: the loop would ask for the call). The loop's steps are timed where the loop calls them (loop.compact, loop.save,
Memory.render are wrapped, nothing else changes), and the trace's chars_sent/chars_full give
what was sent against the full history. At the last turn the compacted request is checked:
every tool call answered in order (the fake endpoint's rules) and no message dropped.
"""
import datetime
import json
import os
import shutil
import statistics
import tempfile
import time

from bench import workload
from handloop import audit
from handloop import context
from handloop import loop
from handloop import runs
from handloop import model
from handloop.llm import endpoint
from bench import sys_ours

PAD = 2048
AT = (10, 100, 200)


class PaddedToolSet(sys_ours.BenchToolSet):
    """search_hotels results padded to about 2 KB (a long free-text field, as real APIs send)."""

    def run(self, call, mem):
        result = super().run(call, mem)
        if call.name == "search_hotels":
            size = len(json.dumps(result, ensure_ascii=False))
            result["notes"] = "附近景点与交通说明。" * max(0, (PAD - size) // 10)
        return result


def _ask(turns, sink):
    def ask(messages, tools, final=False):
        n = sum(1 for m in messages if m["role"] == "assistant")
        if final:                                       # asked for words only (the turn limit): no call
            message = {"role": "assistant", "content": "各入住日期都查过了，要订哪一天？"}
        elif n == turns - 1:                            # the booking: held, the run waits for the user
            message = workload.calls_message(workload.call(f"h{n}", "book_hotel", workload.BOOK))
        else:
            day = (datetime.date(2026, 1, 1) + datetime.timedelta(days=n)).isoformat()
            calls = [workload.call(f"h{n}", "search_hotels", {"city": "西安", "check_in": day, "nights": 2})]
            if n == 0:                                  # the plan and its first step beside the first search
                calls[:0] = [workload.call("plan", "set_plan", {"steps": workload.PLAN}),
                             workload.call("weather", "get_weather", workload.WEATHER)]
            message = workload.calls_message(*calls)
        sink["last_request"] = messages
        sink.setdefault("sizes", []).append((context.chars(messages), context.chars(sink["run"].messages)))
        sink.setdefault("asked", []).append(time.perf_counter())
        return model.Reply(message, message.get("tool_calls") or [], 100, False, 0.0, [])
    return ask


class _Timer:
    """Wraps a function; records the seconds of each call in order."""

    def __init__(self, fn):
        self.fn, self.seconds = fn, []

    def __call__(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds.append(time.perf_counter() - started)


def one_run(turns, fsync, compact_budget=None):
    """Per-turn seconds of each step, the trace, and the last request of one long run."""
    folder = tempfile.mkdtemp(prefix="bench-history-", dir=os.environ.get("BENCH_TMP"))
    compact, write = _Timer(loop.compact), _Timer(loop.save)
    loop.compact, loop.save = compact, write
    try:
        ts = PaddedToolSet("history", workload.AGENT)
        r = runs.begin(folder, "history", workload.GOAL, ts, "scripted", max_turns=turns + 1,
                       budget=10 ** 9, fsync=fsync)
        r.compact_budget = compact_budget or r.compact_budget
        render = _Timer(r.memory.render)
        r.memory.render = render
        write.seconds.clear()
        sink = {"run": r}
        loop.run(r, _ask(turns, sink), ts)
        size = os.path.getsize(r.path)
    finally:
        loop.compact, loop.save = compact.fn, write.fn
        shutil.rmtree(folder, ignore_errors=True)
    if r.status not in ("done", "suspended") or r.turn != turns:
        raise RuntimeError(f"history run ended {r.status}/{r.reason} at turn {r.turn}: {r.detail}")
    asked = sink["asked"]
    return {"compact": compact.seconds, "write": write.seconds, "render": render.seconds,
            "turn": [b - a for a, b in zip(asked, asked[1:])], "sizes": sink["sizes"], "request": sink["last_request"],
            "messages": r.messages, "audit_bytes": size}


def _at(values, turn, window=2):
    """Median of the values around a 1-based turn."""
    lo, hi = max(0, turn - 1 - window), min(len(values), turn + window)
    return statistics.median(values[lo:hi])


def scaling(turns=200, reps=3):
    runs = [one_run(turns, fsync=False) for _ in range(reps)]
    fsynced = one_run(turns, fsync=True)
    rows = {}
    renders = [x for run in runs for x in run["render"]] or [0.0]   # the memory block: at epoch starts only
    for t in AT:
        rows[t] = {step: statistics.median(_at(run[step], t) for run in runs) * 1e6
                   for step in ("write", "compact", "turn")}
        rows[t]["render"] = statistics.median(renders) * 1e6
        rows[t]["write_fsync"] = _at(fsynced["write"], t) * 1e6
    first = runs[0]
    return {"turns": turns, "reps": reps, "steps_us": rows, "renders": len(runs[0]["render"]), "audit_kb_at_end": first["audit_bytes"] / 1024,
            "context": _context(first), "tool_result_chars": PAD}


def _context(run):
    """Characters (and estimated tokens) of the request at a turn, compacted and in full."""
    request, messages = run["request"], run["messages"]
    rows = {}
    for t in AT:
        sent, full = run["sizes"][t - 1]
        rows[t] = {"sent_chars": sent, "full_chars": full, "sent_tokens": model.estimate_tokens(sent),
                   "full_tokens": model.estimate_tokens(full), "ratio": sent / full}
    problem = endpoint.check_request({"messages": request}) or audit.pairing_problem(request)
    kept = [m.get("tool_call_id") for m in request if m["role"] == "tool"]
    full = [m.get("tool_call_id") for m in messages[:len(request)] if m["role"] == "tool"]
    return {"at": rows, "pairing_ok": problem is None and kept == full, "problem": problem,
            "messages_sent": len(request), "messages_full": len(messages) - 1}

"""Our loop on the workload: loop.run() with a scripted `ask` (no HTTP), the real tool set,
guards, executor and audit file (in a temporary folder on disk).

A run is timed whole, from its setup on, like the peers' runs: the tool set, runs.begin()
(the first snapshot on disk), loop.run() over the preface (set_plan + weather + hotels; then
book_hotel, held by the unconfirmed-write guard as the proposal: suspended awaiting confirmation),
the user's reply workload.CHECK_AGAIN (runs.answer: no confirmation, so it declines the held call),
then loop.run() over the workload's turns: the reads, book_hotel held again (suspended), the user's
「确认」 (runs.answer, Resume.CONFIRM), and loop.run() once more: the loop makes the approved call itself
(no model request), then the model's final answer; the run ends done with the booking made. That is
five model turns (two preface, three timed in the peers' sense) besides the loop's own call, and
per-turn figures divide by five. With fsync on, every one of the run's audit writes is fsynced.
"""
import dataclasses
import itertools
import os
import shutil
import tempfile
import time

from bench import workload
from handloop import loop
from handloop import runs
from handloop import model
from handloop import toolset

NAME, LABEL = "ours", "ours (this project)"
_ids = itertools.count()


def available():
    return True, ""


def versions():
    return {}


class BenchToolSet(toolset.ToolSet):
    """The real tool set, counting the calls that reach a tool (and sleeping when asked). Here the
    two reads are pure lookups in memory, so, as a user would for such tools, they are declared
    inline (run in the loop's thread, no hop), except when the concurrency benchmark makes them
    sleep: then they are what the demo declares, reads run together on worker threads."""

    sleeps = True      # off during the preface: the concurrency benchmark's sleeps are for the timed turns
    PURE = ("get_weather", "search_hotels")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not workload.SLEEP["seconds"]:
            self.tools = {n: dataclasses.replace(t, inline=True) if n in self.PURE else t for n, t in self.tools.items()}

    def run(self, call, memory):
        workload.COUNTS.hit(call.name)
        if call.kind != "state" and self.sleeps:
            workload._pause()
        return super().run(call, memory)


def scripted(reply_for):
    """An `ask` answering at once from the tool results since the last user message."""
    def ask(messages, tools, final=False):
        message = reply_for(workload.results_since_user(messages))
        return model.Reply(message, message.get("tool_calls") or [], 100, False, 0.0, [])
    return ask


def playback(replies):
    """An `ask` that plays these reply factories in order."""
    it = iter(replies)

    def ask(messages, tools, final=False):
        message = next(it)()
        return model.Reply(message, message.get("tool_calls") or [], 100, False, 0.0, [])
    return ask


class Harness:
    """Runs of our loop in one temporary audit folder."""
    concurrent = "threads"
    model_turns = len(workload.PREFACE_REPLIES) + workload.TURNS
    preface_calls = {"set_plan": 1, "get_weather": 1, "search_hotels": 1}

    def __init__(self, fsync=False, reply_for=workload.timed_reply, folder=None):
        self.fsync = fsync
        self.audit_dir = tempfile.mkdtemp(prefix="bench-ours-", dir=folder or os.environ.get("BENCH_TMP"))
        self.ask = scripted(reply_for)

    def close(self):
        shutil.rmtree(self.audit_dir, ignore_errors=True)

    def prepare(self):
        return {"run_id": f"b{os.getpid()}-{next(_ids)}"}

    def start(self, state):
        """A new run suspended on its held booking, then told by the user to check again (which declines it)."""
        ts = BenchToolSet(state["run_id"], workload.AGENT)
        ts.sleeps = False
        r = runs.begin(self.audit_dir, state["run_id"], workload.GOAL, ts, "scripted", fsync=self.fsync)
        loop.run(r, playback(workload.PREFACE_REPLIES), ts)
        if (r.status, r.reason) != ("suspended", "awaiting_confirmation"):
            raise RuntimeError(f"preface ended {r.status}/{r.reason}, not awaiting confirmation")
        runs.answer(r, runs.Resume.REPLY, workload.CHECK_AGAIN)
        ts.sleeps = True
        state["run"], state["toolset"] = r, ts
        return r, ts

    def go(self, state):
        r, ts = self.start(state)
        loop.run(r, self.ask, ts)
        if (r.status, r.reason) == ("suspended", "awaiting_confirmation"):     # the booking held: the user confirms,
            runs.answer(r, runs.Resume.CONFIRM)                              # the loop makes it, the model answers
            loop.run(r, self.ask, ts)

    def check(self, state, expected_turns=workload.TURNS):
        """The workload's run ended done with the booking, its one held call made by the loop; a shorter workload
        (the concurrency one: reads, then an answer) may end waiting for the user. Every other tool ran ok."""
        if "run" not in state:
            raise RuntimeError(f"run {state['run_id']} never started")
        r = state["run"]
        whole = expected_turns == workload.TURNS
        finished = r.status == "done" or not whole and (r.status, r.reason) == ("suspended", "awaiting_reply")
        if not finished or r.memory.fact("booking") is None and whole:
            raise RuntimeError(f"run {r.run_id} ended {r.status}/{r.reason}: {r.detail}")
        timed = [t for rec in r.trace[len(workload.PREFACE_REPLIES):] for t in rec["tools"]]
        held = [t for t in timed if (t["status"], t["guard"]) == ("blocked", "unconfirmed_write")]
        if any(t["status"] != "ok" for t in timed if t not in held) or len(held) != whole:
            raise RuntimeError(f"run {r.run_id}: timed tool outcomes {[t['status'] for t in timed]}")
        for path in (r.path, *r.writer.slots):
            try:
                os.remove(path)          # the run's file and its two spares (audit.Writer)
            except OSError:
                pass


def preface_messages():
    """The conversation as our loop recorded it after the preface and the user's reply (CHECK_AGAIN)."""
    h = Harness(fsync=False)
    try:
        r, ts = h.start(h.prepare())
        return [dict(m) for m in r.messages[1:]]
    finally:
        h.close()


def turn_timer():
    """Not used by the runner: a quick manual check (python -m bench.sys_ours)."""
    h = Harness()
    states = [h.prepare() for _ in range(500)]
    started = time.perf_counter()
    for s in states:
        h.go(s)
    per_turn = (time.perf_counter() - started) / len(states) / Harness.model_turns
    for s in states:
        h.check(s)
    h.close()
    return per_turn


if __name__ == "__main__":
    print(f"{turn_timer() * 1e6:.1f} µs per turn")

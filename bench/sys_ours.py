"""Our loop on the workload: loop.run() with a scripted `ask` (no HTTP), the real tool set,
guards, executor and audit file (in a temporary folder on disk).

A run is timed whole, from its setup on, like the peers' runs: the tool set, runs.begin()
(the first snapshot on disk), loop.run() over the preface (set_plan + weather + hotels;
book_hotel blocked by the unconfirmed-write guard and turned into a proposal; the proposal put
to the user: suspended), runs.add_user(r, 「确认」), then loop.run() over the three turns of the
workload, ending with status done and the booking made by the confirmed book_hotel. That is six
model turns (three preface, three timed in the peers' sense), and per-turn figures divide by six.
With fsync on, every one of the run's eight audit writes is fsynced.
"""
import dataclasses
import itertools
import os
import shutil
import tempfile
import time

from bench import workload
from handloop import tools
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
        """A new run suspended on its proposal, then confirmed by the user."""
        ts = BenchToolSet(state["run_id"], workload.AGENT)
        ts.sleeps = False
        r = runs.begin(self.audit_dir, state["run_id"], workload.GOAL, ts, "scripted", fsync=self.fsync)
        loop.run(r, playback(workload.PREFACE_REPLIES), ts)
        if (r.status, r.reason) != ("suspended", "awaiting_confirmation"):
            raise RuntimeError(f"preface ended {r.status}/{r.reason}, not awaiting confirmation")
        runs.add_user(r, tools.CONFIRM[0])
        ts.sleeps = True
        state["run"], state["toolset"] = r, ts
        return r, ts

    def go(self, state):
        r, ts = self.start(state)
        loop.run(r, self.ask, ts)

    def check(self, state, expected_turns=workload.TURNS):
        if "run" not in state:
            raise RuntimeError(f"run {state['run_id']} never started")
        r = state["run"]
        finished = r.status == "done" or expected_turns != workload.TURNS and r.reason == "confirmed_no_write"
        if not finished or r.memory.fact("booking") is None and expected_turns == workload.TURNS:
            raise RuntimeError(f"run {r.run_id} ended {r.status}/{r.reason}: {r.detail}")
        last = [t["status"] for rec in r.trace[-expected_turns:] for t in rec["tools"]]
        if any(s != "ok" for s in last):
            raise RuntimeError(f"run {r.run_id}: timed tool outcomes {last}")
        for path in (r.path, *r.writer.slots):
            try:
                os.remove(path)          # the run's file and its two spares (audit.Writer)
            except OSError:
                pass


def preface_messages():
    """The conversation as our loop recorded it after the preface and the 「确认」."""
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

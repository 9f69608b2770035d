"""The order of a turn without I/O: loop.turns() driven by a test's own world (no HTTP, no file
written by the loop), as a process (loop.run) and a Temporal workflow (durable/workflow.py) drive it.

What a world sees is the order itself: every Execute comes after the Ask of its turn, and the
audit snapshot of a turn is taken after its calls ran and before the next question."""
import json

import pytest

from handloop import audit
from handloop import executor
from handloop import loop
from handloop import runs
from handloop import model
from handloop import texts
from conftest import BOOK, GOAL, PLAN, read_audit, text, tool_calls

WEATHER = {"city": "西安", "date": "2026-10-01"}
HOTELS = {"city": "西安", "check_in": "2026-10-01", "nights": 2}
SCRIPT = [tool_calls(("set_plan", {"steps": PLAN}), ("get_weather", WEATHER), ("search_hotels", HOTELS)),
          tool_calls(("book_hotel", BOOK)),                          # blocked: the proposal; the run waits
          tool_calls(("book_hotel", BOOK)),                          # after the confirmation: booked
          text("已订好。")]


class World:
    """A test's world: scripted replies, the real executor, a log of what was asked of it."""

    def __init__(self, r, ts, replies, log):
        self.r, self.ts, self.replies, self.log = r, ts, list(replies), log

    def ask(self, effect):
        self.log.append("ask")
        if not self.replies:
            raise model.ModelError("timeout", texts.Said("model.timeout", where="the scripted model"))
        message = {"role": "assistant", **self.replies.pop(0)}
        return model.Reply(message, message.get("tool_calls") or [], 100, False, 0.0, [])

    def execute(self, effect):
        self.log.append("execute:" + ",".join(c.name for c in effect.calls))
        return executor.execute(self.r.memory, effect.calls, self.ts)


class Kept:
    """A writer that keeps each snapshot (as JSON text, taken at once) and logs when it was written."""

    def __init__(self, log):
        self.log, self.snapshots = log, []

    def write(self, snapshot):
        self.log.append("save")
        self.snapshots.append(json.dumps(snapshot, ensure_ascii=False))


class Clock:
    """A clock the test sets: as a workflow's clock, the run reads time only through it."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        self.now += 2.0
        return self.now

    @staticmethod
    def stamp():
        return "2030-01-01T00:00:00+0000"


def test_a_world_of_its_own_drives_the_same_order_and_the_audit_follows_every_flatten(new_run):
    r, ts, store = new_run()
    log = []
    r.writer, r.clock = Kept(log), Clock()
    world = World(r, ts, SCRIPT, log)
    loop.drive(loop.turns(r, ts), world)
    assert (r.status, r.reason) == ("suspended", "awaiting_confirmation") and store.count() == 0
    runs.answer(r, "confirm")
    loop.drive(loop.turns(r, ts), world)
    assert r.status == "done" and store.count() == 1
    # every turn with calls: the question, then its calls, then the snapshot, before anything else is asked
    for i, entry in enumerate(log):
        if entry.startswith("execute"):
            rest = log[i + 1:]
            assert "save" in rest and ("ask" not in rest or rest.index("save") < rest.index("ask"))
    assert log[0] == "ask" and log[-1] == "save"
    last = json.loads(r.writer.snapshots[-1])
    assert last["updated"] == "2030-01-01T00:00:00+0000" and last["elapsed"] > 0   # the world's clock
    assert audit.pairing_problem(last["messages"]) is None and last["status"] == "done"


def test_a_model_error_thrown_into_the_generator_ends_the_run_as_on_one_machine(new_run):
    r, ts, _ = new_run()
    log = []
    r.writer = Kept(log)
    loop.drive(loop.turns(r, ts), World(r, ts, SCRIPT[:1], log))
    assert (r.status, r.reason) == ("error", "timeout")
    assert json.loads(r.writer.snapshots[-1])["status"] == "error"


def test_run_in_this_process_writes_the_file_the_generator_describes(new_run, fake_model):
    """loop.run is turns() driven by Local: the file on disk is the run's snapshot, as before."""
    r, ts, store = new_run()
    ask, _ = fake_model(SCRIPT)
    loop.run(r, ask, ts)
    assert (r.status, r.reason) == ("suspended", "awaiting_confirmation")
    on_disk = read_audit(r.path.rsplit("/", 1)[0], r.run_id)
    assert on_disk["messages"] == json.loads(json.dumps(r.messages, ensure_ascii=False))
    assert on_disk["messages"][1]["content"] == GOAL


@pytest.mark.parametrize("final", [False, True])
def test_effects_are_plain_requests(final):
    effect = loop.Ask([{"role": "user", "content": "hi"}], final=final)
    assert effect.final is final and loop.Execute([]).calls == []

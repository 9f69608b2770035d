"""Concurrency, order, timeouts and flattening."""
import json
import threading
import time

from conftest import BOOK, PLAN
from handloop.executor import execute, tool_messages
from handloop.memory import Memory
from handloop import tools
from handloop.toolset import ToolSet


class SlowTools(ToolSet):
    """A tool set whose reads sleep, to show what runs together."""

    def __init__(self, delay=0.2, store=None, hang=()):
        super().__init__("r", tools.xian_agent(store))
        self.delay, self.hang, self.threads = delay, set(hang), []

    def run(self, call, memory):
        self.threads.append(threading.current_thread().name)
        if call.name in self.hang:
            time.sleep(30)
        if self.kind(call.name) == "read":
            time.sleep(self.delay)
        return super().run(call, memory)


def calls(ts, *items):
    raw = [{"id": f"c{i}", "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False)}}
           for i, (n, a) in enumerate(items, 1)]
    return ts.prepare(raw)


def test_three_slow_reads_run_together_and_come_back_in_request_order():
    ts = SlowTools(0.2)
    pending = calls(ts, ("get_weather", {"city": "西安", "date": "2026-10-01"}),
                    ("search_hotels", {"city": "西安", "check_in": "2026-10-01"}),
                    ("get_weather", {"city": "北京", "date": "2026-10-01"}))
    started = time.perf_counter()
    outcomes = execute(Memory(), pending, ts)
    elapsed = time.perf_counter() - started
    assert elapsed < 0.5, elapsed                 # three 0.2 s reads, concurrently (loose bound)
    messages = tool_messages(pending, outcomes)
    assert [m["tool_call_id"] for m in messages] == ["c1", "c2", "c3"]
    assert json.loads(messages[2]["content"])["city"] == "北京"
    assert all(o.concurrent for o in outcomes.values())


def test_two_plan_updates_in_one_turn_both_stick():
    ts, memory = ToolSet("r", tools.xian_agent(None)), Memory()
    memory.done_tools.add("get_weather")            # step 1's tool succeeded: it may be marked done
    pending = calls(ts, ("set_plan", {"steps": PLAN}), ("mark_step", {"index": 1, "status": "done"}),
                    ("mark_step", {"index": 3, "status": "failed", "note": "x"}))
    outcomes = execute(memory, pending, ts)
    assert all(o.status == "ok" for o in outcomes.values()), outcomes
    assert memory.plan == []                       # the run's memory changes only through absorb
    for call, message in zip(pending, tool_messages(pending, outcomes)):
        memory.absorb(call, json.loads(message["content"]))
    assert [memory.step_status(i) for i in (1, 2, 3)] == ["done", "pending", "failed"]


def test_a_step_whose_tool_has_not_succeeded_cannot_be_marked_done():
    ts, memory = ToolSet("r", tools.xian_agent(None)), Memory()
    pending = calls(ts, ("set_plan", {"steps": PLAN}))
    memory.absorb(pending[0], execute(memory, pending, ts)["c1"].result)
    marks = calls(ts, ("mark_step", {"index": 3, "status": "done"}), ("mark_step", {"index": 2, "status": "failed"}))
    outcomes = execute(memory, marks, ts)
    refused = outcomes[marks[0].id].result
    assert "error" in refused and PLAN[2]["tool"] in refused["error"]           # names the tool
    assert outcomes[marks[1].id].status == "ok"                                # failed may always be said
    for call in marks:
        memory.absorb(call, outcomes[call.id].result)
    assert [memory.step_status(i) for i in (1, 2, 3)] == ["pending", "failed", "pending"]


def test_mark_step_without_a_plan_is_an_error_for_the_model():
    ts = ToolSet("r", tools.xian_agent(None))
    outcome = execute(Memory(), calls(ts, ("mark_step", {"index": 1, "status": "done"})), ts)["c1"]
    assert outcome.status == "error" and "set_plan" in outcome.result["error"]


def test_a_hung_read_times_out_and_the_turn_finishes_on_time():
    ts = SlowTools(0.0, hang={"search_hotels"})
    pending = calls(ts, ("get_weather", {"city": "西安", "date": "2026-10-01"}),
                    ("search_hotels", {"city": "西安", "check_in": "2026-10-01"}))
    started = time.perf_counter()
    outcomes = execute(Memory(), pending, ts, timeout=0.3)
    assert time.perf_counter() - started < 1.0
    assert outcomes["c1"].status == "ok" and outcomes["c2"].status == "timeout"
    assert "超过" in outcomes["c2"].result["error"]


def test_a_hung_write_is_reconciled_through_its_key_never_retried(tmp_path):
    store = tools.BookingStore(tmp_path / "b.db")

    class LateWrite(ToolSet):
        def run(self, call, memory):
            result = super().run(call, memory)     # the booking lands...
            time.sleep(1)                          # ...but the answer comes too late
            return result

    ts = LateWrite("r", tools.xian_agent(store))
    outcome = execute(Memory(), calls(ts, ("book_hotel", BOOK)), ts, timeout=0.3)["c1"]
    assert outcome.status == "ok" and outcome.result["reconciled"] is True
    assert store.count() == 1


def test_a_write_that_never_lands_reports_an_unknown_outcome(tmp_path):
    ts = SlowTools(0.0, store=tools.BookingStore(tmp_path / "b.db"), hang={"book_hotel"})
    outcome = execute(Memory(), calls(ts, ("book_hotel", BOOK)), ts, timeout=0.2)["c1"]
    assert outcome.status == "unknown" and outcome.result["outcome"] == "unknown"
    assert "不会重复执行" in outcome.result["error"]


def test_tools_run_in_daemon_threads_and_inline_ones_in_the_loops_thread():
    ts = SlowTools(0.0)
    seen = []
    original = ts.run
    ts.run = lambda call, memory: (seen.append((call.name, threading.current_thread().daemon)), original(call, memory))[1]
    pending = calls(ts, ("get_weather", {"city": "西安", "date": "2026-10-01"}), ("set_plan", {"steps": PLAN}),
                    ("book_hotel", BOOK))
    execute(Memory(), pending, ts)
    assert sorted(seen) == [("book_hotel", True), ("get_weather", True), ("set_plan", False)]
    assert [ts.inline(c) for c in pending] == [False, True, False]      # set_plan is declared pure and bounded


def test_a_crashing_tool_becomes_an_error_message():
    class Broken(ToolSet):
        def run(self, call, memory):
            raise ZeroDivisionError("boom")
    ts = Broken("r", tools.xian_agent(None))
    outcome = execute(Memory(), calls(ts, ("get_weather", {"city": "西安", "date": "2026-10-01"})), ts)["c1"]
    assert outcome.status == "error" and "ZeroDivisionError" in outcome.result["error"]


def test_long_results_are_cut_head_and_tail():
    from handloop.calls import Outcome
    ts = ToolSet("r", tools.xian_agent(None))
    pending = calls(ts, ("get_weather", {"city": "西安", "date": "2026-10-01"}))
    huge = Outcome({"blob": "头" + "x" * 5_000_000 + "尾", "id": "A-1"})
    content = tool_messages(pending, {"c1": huge})[0]["content"]
    result = json.loads(content)                     # still a JSON object, with its short fields whole
    assert len(content) <= 16_000 and result["id"] == "A-1" and "_cut" in result
    assert result["blob"].startswith("头") and result["blob"].endswith("尾") and "中间省略" in result["blob"]


def test_the_tool_sets_own_timeout_applies_when_none_is_given():
    ts = SlowTools(0.0, hang={"search_hotels"})
    ts.timeout = 0.2
    started = time.perf_counter()
    outcome = execute(Memory(), calls(ts, ("search_hotels", {"city": "西安", "check_in": "2026-10-01"})), ts)["c1"]
    assert outcome.status == "timeout" and "超过 0.2 秒" in outcome.result["error"]
    assert time.perf_counter() - started < 1.0

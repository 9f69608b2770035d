"""A run's policy as one object (limits, deadline, visible tools) and tools users bring: async
ones run concurrently on the executor's event loop and are cancelled at their timeout."""
import asyncio
import json
import time

from handloop import audit
from handloop import config
from handloop import loop
from handloop import runs
from handloop.cli import session
from handloop.agents import Agent
from handloop.calls import Tool
from conftest import PLAN, read_audit, run_cli, text, tool_calls
from handloop.executor import execute
from handloop.memory import Memory
from handloop.toolset import ToolSet

WEATHER = {"city": "西安", "date": "2026-10-01"}


def test_past_its_deadline_a_run_stops_at_the_next_turn_and_a_resume_with_more_time_goes_on(fake_model, tmp_path):
    from handloop import tools
    ts = ToolSet("d", tools.xian_agent(tools.BookingStore(tmp_path / "b.db")))
    r = runs.begin(str(tmp_path), "d", "goal", ts, "m", policy=config.Policy(deadline=0.2), fsync=False)

    def slow(request):
        time.sleep(0.3)
        return tool_calls(("set_plan", {"steps": PLAN}))
    ask, _ = fake_model([slow, tool_calls(("get_weather", WEATHER)), text("你想住几晚？")])
    loop.run(r, ask, ts)
    assert (r.status, r.reason, r.turn) == ("stopped", "deadline", 1)
    snap = audit.load(r.path)
    assert snap["policy"]["deadline"] == 0.2 and snap["elapsed"] >= 0.3
    session.accept("resume", snap)                                   # a deadline stop may be resumed
    again, ts2, _ = session.reopen(str(tmp_path), "d", "resume", policy=config.Policy(deadline=30))
    session.answer(again, "resume")
    loop.run(again, ask, ts2)
    assert again.status == "suspended" and again.turn == 3 and read_audit(tmp_path, "d")["policy"]["deadline"] == 30


def test_a_policy_file_sets_the_limits_and_which_tools_the_model_sees(tmp_path):
    (tmp_path / "p.json").write_text(json.dumps({"max_turns": 5, "tools": ["get_weather", "search_hotels"],
                                                 "compact_budget": 9000}))
    out = run_cli("--run-id", "p", "--policy", "p.json", cwd=tmp_path)
    snap = read_audit(tmp_path / "audit", "p")
    assert out.returncode == 0, out.stderr
    assert [t["function"]["name"] for t in snap["tools"]] == ["set_plan", "mark_step", "get_weather", "search_hotels"]
    assert snap["policy"]["max_turns"] == 5 and snap["policy"]["compact_budget"] == 9000


def test_a_bad_policy_file_is_refused_with_what_is_wrong(tmp_path):
    (tmp_path / "p.json").write_text(json.dumps({"max_turns": 0, "colour": "blue"}))
    out = run_cli("--run-id", "p", "--policy", "p.json", cwd=tmp_path)
    assert out.returncode == 2 and "colour" in out.stderr and "Traceback" not in out.stderr
    (tmp_path / "p.json").write_text(json.dumps({"deadline": "soon"}))
    out = run_cli("--run-id", "p", "--policy", "p.json", cwd=tmp_path)
    assert out.returncode == 2 and "deadline" in out.stderr
    assert not (tmp_path / "audit" / "run-p.json").exists()


def _agent_of(tools):
    """A user's agent of just these tools, with a plain prompt."""
    return Agent("custom", "You act only through tools; a write waits for the user's confirmation.", tools)


def _async_tools(log):
    async def lookup(key):
        await asyncio.sleep(0.2)
        return {"key": key}

    async def stuck(key):
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            log.append("cancelled")
            raise
    schema = {"type": "object", "required": ["key"], "properties": {"key": {"type": "string"}}}
    return [Tool("lookup", "d", schema, lookup), Tool("stuck", "d", schema, stuck, timeout=0.3)]


def test_async_tools_run_together_and_a_hung_one_is_cancelled_at_its_timeout():
    log = []
    ts = ToolSet("a", _agent_of(_async_tools(log)))
    raw = [{"id": f"c{i}", "function": {"name": n, "arguments": json.dumps({"key": str(i)})}}
           for i, n in enumerate(["lookup", "lookup", "lookup", "stuck"])]
    started = time.perf_counter()
    outcomes = execute(Memory(), ts.prepare(raw), ts)
    elapsed = time.perf_counter() - started
    assert [outcomes[f"c{i}"].status for i in range(4)] == ["ok", "ok", "ok", "timeout"]
    assert elapsed < 0.9 and outcomes["c0"].concurrent                 # three 0.2 s lookups together (loose)
    deadline = time.time() + 2
    while not log and time.time() < deadline:
        time.sleep(0.01)
    assert log == ["cancelled"]


def test_a_users_tool_set_gets_the_planning_tools_and_the_guards_without_naming_them(fake_model, tmp_path):
    ts = ToolSet("u", _agent_of(_async_tools([])))
    assert [t["function"]["name"] for t in ts.schemas] == ["set_plan", "mark_step", "lookup", "stuck"]
    r = runs.begin(str(tmp_path), "u", "查一下 k1", ts, "m", fsync=False)
    ask, _ = fake_model([tool_calls(("lookup", {"key": "k1"})),
                         tool_calls(("set_plan", {"steps": [{"title": "查", "tool": "lookup"}]}), ("lookup", {"key": "k1"})),
                         text("查到了 k1。")])
    loop.run(r, ask, ts)
    guards = [t["guard"] for rec in r.trace for t in rec["tools"]]
    assert guards == ["plan_first", None, None] and r.memory.progress == 1


def test_a_run_whose_model_went_silent_takes_a_reply_and_moves_on(fake_model, tmp_path):
    from handloop import tools
    ts = ToolSet("e", tools.xian_agent(tools.BookingStore(tmp_path / "b.db")))
    r = runs.begin(str(tmp_path), "e", "goal", ts, "m", fsync=False)
    ask, endpoint = fake_model([text(""), text(""), text("你想住几晚？")])
    loop.run(r, ask, ts)
    assert (r.status, r.reason) == ("error", "empty_reply")
    for how, refused in (("confirm", True), ("reply", False)):
        try:
            session.accept(how, audit.load(r.path))
            assert not refused
        except session.Refused as exc:
            assert refused and "--resume" in str(exc)
    again, ts2, _ = session.reopen(str(tmp_path), "e", "reply")
    session.answer(again, "reply", "住两晚")
    loop.run(again, ask, ts2)
    assert again.status == "suspended" and again.memory.said[-1] == "住两晚"
    assert endpoint.requests[2]["messages"][-1]["content"] == "住两晚"      # the reply reached the model

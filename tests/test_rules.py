"""The agent's rules decide before the user is asked (issue 35): a write that breaks a rule (calls.Rule, declared on
the Tool or the Agent) is blocked before it becomes a proposal, with the rule's reason for the model, which corrects
it; --check applies the same rule to the record; a forced call blocked for its arguments (or by a rule) is pushed
again once; a final answer that names another value than a write's receipt is noted on the printout and failed by
--check.

Through the CLI in real processes, the real `openai` client and a loopback endpoint answered by stateless scripted
models (tests/policies.py's Xi'an policies, and an English agent file written here). Assertions read states, stores,
audit files and the judge's verdicts, never the model's wording.
"""
import json

import pytest

import policies
from conftest import run_agent, store_rows
from handloop import Agent, DeclarationError, Rule, Tool
from handloop.judge import texts as check_texts
from handloop import texts
from test_real_models import bookings, state

ZH = texts.of("zh")


def tool_results(data):
    return [json.loads(m["content"]) for m in data["messages"] if m["role"] == "tool"]


def checked(run, *more):
    out = run("--check", "r", "--json", *more)
    entry = json.loads(out.stdout)["files"][0]
    return out.returncode, {c["id"]: c["verdict"] for c in entry["checks"]}, entry


# ---- the Xi'an agent: the room follows the weather ----
def deluxe_first(request):
    """Plans and looks up, then books the cheapest Deluxe at once (it rains on 2026-10-01); told by the rule, it
    books the room the rule asks for; once booked, the answer."""
    talk = policies.Talk(request)
    if not talk.results or policies.finished(talk):
        return policies.opening_or_end(talk)
    refused = [r for n, _, r in talk.results if n == "book_hotel" and r.get("blocked_by") == "rule"]
    return policies.calls(("book_hotel", talk.choice()[0] if refused else talk.choice("Deluxe")[0]))


def test_the_xian_rule_blocks_a_deluxe_in_the_rain_before_any_proposal(cli, tmp_path):
    run = cli(deluxe_first)
    first = run("--run-id", "r")
    assert first.returncode == 0, first.stderr
    status, reason, data = state(tmp_path)
    assert (status, reason, bookings(tmp_path)) == ("suspended", "awaiting_confirmation", 0)
    refused = [r for r in tool_results(data) if r.get("blocked_by") == "rule"]
    assert len(refused) == 1 and refused[0]["rule"] == "room_type_follows_weather"
    assert "Suite" in refused[0]["error"]                      # the reason says what the rule asks for
    shown = [c for p in data["memory"]["proposals"] for c in p["calls"]]
    assert shown and all(c["args"]["room_type"] == "Suite" for c in shown)      # no proposal ever showed the Deluxe
    assert ZH("cli.blocked", guard="rule") in first.stdout
    done = run("--confirm", "r")
    assert done.returncode == 0, done.stderr
    status, _, data = state(tmp_path)
    assert (status, bookings(tmp_path)) == ("done", 1)
    assert data["memory"]["booking"]["room_type"] == "Suite"
    assert all(c["args"]["room_type"] == "Suite" for p in data["memory"]["proposals"] for c in p["calls"])
    assert run("--check", "r", "--strict").returncode == 0
    code, verdicts, _ = checked(run)
    assert code == 0 and verdicts["room_type"] == "pass" and verdicts["answer_matches_receipt"] == "pass"


def test_the_judges_weather_check_and_the_rule_read_the_weather_alike(cli, tmp_path):
    # the record of a Deluxe booked in the rain (as the runs before the rule booked it), judged: the judge's own
    # check of the same name fails it, and the rule's code, run on the record's facts, refuses it with its reason
    from handloop import tools
    from handloop.texts.rules import Facts
    rain = {"city": "西安", "date": "2026-10-01", "condition": "rain", "high": 19, "low": 14}
    booking = {"hotel_id": "XA-001", "room_type": "Deluxe", "check_in": "2026-10-01", "nights": 2}
    facts = Facts([("get_weather", {"city": "西安", "date": "2026-10-01"}, rain)])
    assert "Suite" in tools.room_follows_weather(booking, facts)
    assert tools.room_follows_weather(dict(booking, room_type="Suite"), facts) is None
    assert "get_weather" in tools.room_follows_weather(booking, Facts())          # no weather yet: look it up
    clear = Facts([("get_weather", {"date": "2026-10-01"}, dict(rain, condition="clear"))])
    assert tools.room_follows_weather(dict(booking, room_type="Standard"), clear) is None
    messages = [{"role": "user", "content": "订 2026-10-01 西安的酒店，两晚，下雨订 Suite"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "w", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps(
                        {"city": "西安", "date": "2026-10-01"})}}]},
                {"role": "tool", "tool_call_id": "w", "content": json.dumps(rain)},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "b", "type": "function", "function": {"name": "book_hotel", "arguments": json.dumps(booking)}}]},
                {"role": "tool", "tool_call_id": "b", "content": json.dumps(dict(booking, booking_id="BK-1"))},
                {"role": "assistant", "content": "已订好 Deluxe。"}]
    path = tmp_path / "other.json"
    path.write_text(json.dumps(messages, ensure_ascii=False), encoding="utf-8")
    out = run_agent("--check", str(path), "--json", cwd=tmp_path)
    entry = json.loads(out.stdout)["files"][0]
    assert out.returncode == 1 and {c["id"]: c["verdict"] for c in entry["checks"]}["room_type"] == "fail"


# ---- an English agent of our own, with a rule over the run's facts ----
AGENT_FILE = '''
import os
import sqlite3

from handloop import Agent, Rule, Source, Tool, ToolError

ROOMS = [{"room_id": "R-101", "name": "Oak", "seats": 4}, {"room_id": "R-202", "name": "Maple", "seats": 10}]
BUSY = {"R-202": ["10:00", "11:00"], "R-101": []}


def list_rooms():
    return {"rooms": ROOMS}


def get_calendar(room_id, day):
    return {"room_id": room_id, "day": day, "busy": BUSY.get(room_id, [])}


def book_room(room_id, day, hour, idempotency_key):
    with sqlite3.connect(os.path.join(os.environ["AGENT_AUDIT_DIR"], "rooms.db")) as db:
        db.execute("CREATE TABLE IF NOT EXISTS booked (key TEXT PRIMARY KEY, room_id TEXT, day TEXT, hour TEXT)")
        db.execute("INSERT OR IGNORE INTO booked VALUES (?, ?, ?, ?)", (idempotency_key, room_id, day, hour))
    return {"booking_id": "MR-" + idempotency_key[:6], "room_id": room_id, "day": day, "hour": hour}


def free_hour(args, facts):
    """The hour must be free in the calendar the run looked up for that room and day."""
    calendar = facts.last("get_calendar", room_id=args["room_id"], day=args["day"])
    if calendar is None:
        return "Look up the calendar of " + args["room_id"] + " on " + args["day"] + " first (get_calendar)."
    if args["hour"] in calendar["busy"]:
        return (args["room_id"] + " is busy at " + args["hour"] + " on " + args["day"] + " (busy: " +
                ", ".join(calendar["busy"]) + "): pick a free hour.")
    return None


HOURS = {"type": "string", "enum": ["09:00", "10:00", "11:00", "12:00", "13:00", "14:00"]}
TEXT = {"type": "string"}
AGENT = Agent(
    name="rooms-rules", language="en", planning=False,
    instructions="You book meeting rooms. Look up the room's calendar, propose the booking, book once confirmed.",
    goal="Book Maple (R-202) on 2026-12-03 at the earliest hour.",
    rules=[Rule("free_hour", free_hour, tools=("book_room",))],
    tools=[Tool("list_rooms", "The rooms.", {"type": "object", "properties": {}}, list_rooms),
           Tool("get_calendar", "A room's busy hours on a day.", {"type": "object", "required": ["room_id", "day"],
                "properties": {"room_id": TEXT, "day": TEXT}}, get_calendar),
           Tool("book_room", "Book a room for one hour (a write).", {"type": "object", "required": ["room_id", "day", "hour"],
                "properties": {"room_id": TEXT, "day": TEXT, "hour": HOURS}}, book_room, kind="write",
                takes=("idempotency_key",), requires=("list_rooms", "get_calendar"),
                effect=(("room_id", "id"), ("day", "date"), ("hour", "choice")),
                sources=(Source(("room_id",), "list_rooms", ("room_id",), "rooms[]"),))])
'''


def rooms_model(final=None):
    """A stateless model: lists the rooms, reads Maple's calendar, books 10:00 (the earliest it wants); told by
    the rule, the first free hour of the calendar; once booked, `final` (default: what the receipt says)."""
    def respond(request):
        talk = policies.Talk(request)
        done = {n: r for n, _, r in talk.results if "error" not in r}
        if "list_rooms" not in done:
            return policies.calls(("list_rooms", {}))
        if "get_calendar" not in done:
            return policies.calls(("get_calendar", {"room_id": "R-202", "day": "2026-12-03"}))
        if "book_room" in done:
            receipt = done["book_room"]
            return policies.say(final or f"Booked {receipt['room_id']} on {receipt['day']} at {receipt['hour']}.")
        refused = any(n == "book_room" and r.get("blocked_by") == "rule" for n, _, r in talk.results)
        busy = done["get_calendar"]["busy"]
        hour = next(h for h in ("09:00", "10:00", "11:00", "12:00") if h not in busy) if refused else "10:00"
        return policies.calls(("book_room", {"room_id": "R-202", "day": "2026-12-03", "hour": hour}))
    return respond


@pytest.fixture
def rooms(agent_files):
    return lambda model: agent_files(model, "rooms_rules.py", AGENT_FILE)


def booked(tmp_path):
    return store_rows(tmp_path, "rooms.db", "SELECT room_id, day, hour FROM booked")


def test_an_english_agents_rule_over_the_runs_facts_decides_before_the_user_is_asked(rooms, tmp_path):
    path, run = rooms(rooms_model())
    first = run("--agent", str(path), "--run-id", "r")
    assert first.returncode == 0, first.stdout + first.stderr
    status, reason, data = state(tmp_path)
    assert (status, reason, booked(tmp_path)) == ("suspended", "awaiting_confirmation", [])
    refused = [r for r in tool_results(data) if r.get("blocked_by") == "rule"]
    assert [r["rule"] for r in refused] == ["free_hour"] and "busy" in refused[0]["error"]
    assert [c["args"]["hour"] for p in data["memory"]["proposals"] for c in p["calls"]] == ["09:00"]
    assert data["agent"]["tools"]["book_room"]["rules"] == ["free_hour"]       # the run records the rule's name
    done = run("--agent", str(path), "--confirm", "r")
    assert done.returncode == 0, done.stdout + done.stderr
    assert state(tmp_path)[0] == "done" and booked(tmp_path) == [("R-202", "2026-12-03", "09:00")]
    # --check with the agent given runs the rule's code on the record; without it, only its name is recorded
    assert run("--check", "r", "--strict", "--agent", str(path)).returncode == 0
    code, verdicts, entry = checked(run, "--agent", str(path))
    assert code == 0 and verdicts["free_hour"] == "pass" and verdicts["answer_matches_receipt"] == "pass"
    assert not check_texts.CJK.search(json.dumps(entry, ensure_ascii=False))
    code, verdicts, entry = checked(run)
    assert code == 0 and verdicts["free_hour"] == "pending"
    cause = {c["id"]: c["cause"] for c in entry["checks"]}["free_hour"]
    assert cause == "not_declared" and "--agent" in {c["id"]: c["reason"] for c in entry["checks"]}["free_hour"]
    assert run("--check", "r", "--strict").returncode == 1


def test_a_rule_broken_by_a_write_in_another_systems_transcript_fails_its_check(rooms, tmp_path):
    path, run = rooms(rooms_model())
    call = lambda i, name, args: {"role": "assistant", "content": None, "tool_calls": [     # noqa: E731
        {"id": i, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}
    result = lambda i, value: {"role": "tool", "tool_call_id": i, "content": json.dumps(value)}   # noqa: E731
    booking = {"room_id": "R-202", "day": "2026-12-03", "hour": "10:00"}
    messages = [{"role": "user", "content": "Book Maple on 2026-12-03 at the earliest hour."},
                call("a", "list_rooms", {}), result("a", {"rooms": [{"room_id": "R-202", "name": "Maple"}]}),
                call("b", "get_calendar", {"room_id": "R-202", "day": "2026-12-03"}),
                result("b", {"room_id": "R-202", "day": "2026-12-03", "busy": ["10:00"]}),
                {"role": "assistant", "content": "Shall I book Maple (R-202) on 2026-12-03 at 10:00?"},
                {"role": "user", "content": "yes"},
                call("c", "book_room", booking), result("c", dict(booking, booking_id="MR-1")),
                {"role": "assistant", "content": "Booked R-202 on 2026-12-03 at 10:00."}]
    other = tmp_path / "other.json"
    other.write_text(json.dumps(messages), encoding="utf-8")
    out = run("--check", str(other), "--json", "--agent", str(path))
    entry = json.loads(out.stdout)["files"][0]
    verdicts = {c["id"]: c["verdict"] for c in entry["checks"]}
    assert out.returncode == 1 and verdicts["free_hour"] == "fail" and verdicts["write_after_confirmation"] == "pass"
    assert "busy at 10:00" in {c["id"]: c["reason"] for c in entry["checks"]}["free_hour"]


# ---- a forced call whose arguments fail validation is pushed again once ----
def plan_as_one(always):
    """The 1.5 B model behind a server without a grammar: forced to call set_plan, it answers `"arguments": 1`
    (the first time, or `always`); otherwise as tests/policies.py's SmallModel."""
    def args(talk, name):
        tried = any(n == "set_plan" for n, _, _ in talk.results)
        if name == "set_plan" and (always or not tried):
            return 1
        return policies.xian_args(talk, name)
    return policies.SmallModel(args=args)


def test_a_forced_call_with_invalid_arguments_is_pushed_again_once_and_the_run_goes_on(cli, tmp_path):
    server = policies.Server(plan_as_one(always=False))
    run = cli(server)
    assert run("--run-id", "r").returncode == 0
    status, reason, data = state(tmp_path)
    assert (status, reason) == ("suspended", "awaiting_confirmation")
    assert [r.get("blocked_by") for r in tool_results(data)][0] == "arguments"       # `1` is no plan
    assert [s["tool"] for s in data["memory"]["plan"]] == ["get_weather", "search_hotels", "book_hotel"]
    after = [q for q in server.requests if q["messages"][-1]["role"] == "tool" and policies.forced(q)]
    assert [policies.forced_tool(q) for q in after] == ["set_plan"]                  # pushed again, once
    assert run("--confirm", "r").returncode == 0
    assert (state(tmp_path)[0], bookings(tmp_path)) == ("done", 1)
    assert run("--check", "r", "--strict").returncode == 0


def test_a_forced_call_that_fails_again_is_not_pushed_a_third_time(cli, tmp_path):
    server = policies.Server(plan_as_one(always=True))
    run = cli(server)
    assert run("--run-id", "r").returncode == 0
    status, _, data = state(tmp_path)
    assert status in ("suspended", "stopped") and not data["memory"]["plan"] and bookings(tmp_path) == 0
    forced_plans = [q for q in server.requests if policies.forced_tool(q) == "set_plan"]
    assert len(forced_plans) == 2                      # the nudge's, and once more after its call failed


# ---- a final answer that names another value than the receipt ----
def suite_then_claims(request):
    """As the eager model, but its final answer says it booked the Deluxe over the Suite's receipt."""
    talk = policies.Talk(request)
    if talk.ok("book_hotel"):
        return policies.say("下雨了，所以我为你订了古城墙酒店的 Deluxe，两晚。")
    return policies.eager(request)


def test_a_final_answer_contradicting_the_receipt_is_noted_and_fails_the_check(cli, tmp_path):
    run = cli(suite_then_claims)
    assert run("--run-id", "r").returncode == 0
    done = run("--confirm", "r")
    assert done.returncode == 0
    status, _, data = state(tmp_path)
    assert (status, bookings(tmp_path), data["memory"]["booking"]["room_type"]) == ("done", 1, "Suite")
    assert ZH("cli.contradicts", tool="book_hotel", arg="room_type", named="Deluxe", written="Suite") in done.stdout
    assert any("receipt of book_hotel says Suite" in n for t in data["trace"] for n in t["notes"])
    code, verdicts, entry = checked(run)
    assert code == 1 and verdicts["answer_matches_receipt"] == "fail" and verdicts["room_type"] == "pass"
    assert "Deluxe" in {c["id"]: c["reason"] for c in entry["checks"]}["answer_matches_receipt"]


def test_an_english_final_answer_naming_another_hour_fails_in_english(rooms, tmp_path):
    path, run = rooms(rooms_model(final="Done: Maple is yours on 2026-12-03 at 12:00."))
    assert run("--agent", str(path), "--run-id", "r").returncode == 0
    done = run("--agent", str(path), "--confirm", "r")
    assert done.returncode == 0 and booked(tmp_path) == [("R-202", "2026-12-03", "09:00")]
    en = texts.of("en")
    assert en("cli.contradicts", tool="book_room", arg="hour", named="12:00", written="09:00") in done.stdout
    code, verdicts, entry = checked(run, "--agent", str(path))
    assert code == 1 and verdicts["answer_matches_receipt"] == "fail" and verdicts["free_hour"] == "pass"
    assert not check_texts.CJK.search(json.dumps(entry, ensure_ascii=False))


# ---- declarations ----
def test_rule_mistakes_are_declaration_errors():
    tool = Tool("w", "a write", {"type": "object", "properties": {"x": {"type": "string"}}}, lambda x: {},
                kind="write", effect=(("x", "id"),))
    with pytest.raises(DeclarationError, match="check must be callable"):
        Rule("r", None)
    with pytest.raises(DeclarationError, match="not one of the agent's tools"):
        Agent("a", "i", [tool], rules=[Rule("r", lambda a, f: None, tools=("nope",))])
    with pytest.raises(DeclarationError, match="two rules are named 'r'"):
        Agent("a", "i", [tool], rules=[Rule("r", lambda a, f: None), Rule("r", lambda a, f: "no")])
    with pytest.raises(DeclarationError, match="tools= is for an agent's rule"):
        Tool("v", "a read", {"type": "object", "properties": {}}, lambda: {}, rules=(Rule("r", len, tools=("v",)),))
    assert Tool("v", "a read", {"type": "object", "properties": {}}, lambda: {}, rules=Rule("one", len)).rules[0].name == "one"
    agent = Agent("a", "i", [tool], rules=[Rule("every_write", lambda a, f: None)])
    assert [r.name for r in agent.rules_for(tool)] == ["every_write"]         # no tools named: every write
    assert agent.declared()["tools"]["w"]["rules"] == ["every_write"]


def test_a_rule_dropped_between_suspend_and_resume_weakens_the_write():
    from handloop import runs
    write = {"kind": "write", "requires": [], "sources": [], "effect": [["x", "id"]]}
    recorded = {"confirm": ["ok"], "tools": {"w": dict(write, rules=["free_hour"])}}
    dropped = runs.changes(recorded, {"confirm": ["ok"], "tools": {"w": dict(write)}})
    assert [(c.values["field"], c.weakens) for c in dropped] == [("rules", True)]
    older = runs.changes({"confirm": ["ok"], "tools": {"w": dict(write)}},        # a run that recorded no rules
                         {"confirm": ["ok"], "tools": {"w": dict(write, rules=["free_hour"])}})
    assert older == []

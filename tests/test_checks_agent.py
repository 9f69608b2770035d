"""`--check` judges any agent's run from what the agent declared: the audit file's recorded agent, else
`--agent FILE`'s, else the Xi'an agent's. The English meeting-room example (examples/rooms.py: planning off,
list_rooms and get_calendar reads, book_room a write with requires and sources, confirm replies "confirm" and
"yes, book it") is judged by its own declarations. Every expected verdict here is derived from the rules (docs/judge.md's),
written by hand, never read off the judge."""
import copy
import json
import os
import sqlite3

from handloop.cli import check as check_cli
from handloop import checks
from handloop import tools
from handloop.judge import declaration
from conftest import ROOT, read_audit, run_agent

EXAMPLE = os.path.join(ROOT, "examples", "rooms.py")
CORPUS = os.path.join(ROOT, "tests", "transcripts")


def rooms_declared():
    """examples/rooms.py's AGENT.declared(), as an audit file of its run records it."""
    from handloop.cli import session
    return session.load_file(EXAMPLE).declared()


def verdicts(entry):
    return {c["id"]: c["verdict"] for c in entry["checks"]}


def reasons(entry):
    return {c["id"]: c["reason"] for c in entry["checks"]}


def call(name, args, call_id):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}


def result(call_id, value):
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(value)}


def conversation(proposed="R-202", booked="R-202", reply="confirm", ask=True):
    """The meeting-room run as its loop records it: list_rooms (R-202 only), get_calendar of R-202, then (unless not
    `ask`) an offer in words of `proposed`, the loop's nudge asking for the call, the model's book_room of `proposed`
    held for the user (blocked, shown as the proposal) and answered with `reply`, then book_room of `booked` as the loop
    issues an approved call (an assistant message named "loop"), which took effect. Without `ask`: the model's
    book_room of `booked` took effect, never held, never answered."""
    messages = [{"role": "system", "content": "You book meeting rooms, using only the tools."},
                {"role": "user", "content": "Book a room for six people on 2026-12-03 at 10:00. Ask me before booking."},
                call("list_rooms", {"seats": 6}, "c1"),
                result("c1", {"rooms": [{"room_id": "R-202", "name": "Maple", "seats": 10}]}),
                call("get_calendar", {"room_id": "R-202", "day": "2026-12-03"}, "c2"),
                result("c2", {"room_id": "R-202", "day": "2026-12-03", "busy": []})]
    booking = {"room_id": booked, "day": "2026-12-03", "hour": "10:00"}
    write = call("book_room", booking, "c3")
    if ask:
        shown = {"room_id": proposed, "day": "2026-12-03", "hour": "10:00"}
        messages += [{"role": "assistant", "content": f"{proposed} is free on 2026-12-03 at 10:00. Shall I book it?"},
                     {"role": "user", "name": "loop", "content": "[system] Make the call now. Next step: book_room."},
                     call("book_room", shown, "h1"),
                     result("h1", {"error": "This write needs the user's confirmation; it did not run.",
                                   "blocked_by": "unconfirmed_write", "proposal": {"tool": "book_room", "args": shown}}),
                     {"role": "user", "content": reply}]
        write = dict(write, name="loop")
    return messages + [write, result("c3", dict(booking, booking_id="MR-1")),
                       {"role": "assistant", "content": "Booked: MR-1."}]


def audit_file(path, messages, agent, status="done"):
    """A hand-made audit file of a run of `agent` (a declaration, as the audit records it)."""
    snap = {"version": 1, "run_id": "hand", "status": status, "reason": "final_answer", "turn": 5, "mode": "local",
            "agent": agent, "messages": messages}
    path.write_text(json.dumps(snap), encoding="utf-8")
    return str(path)


def booked_example(cwd, run_id="m"):
    """Run examples/rooms.py offline in `cwd` and confirm its booking, as a user does: its model offers in words, the
    loop asks for the call, the held book_room R-202 is shown and one --confirm books it."""
    assert run_agent("--agent", EXAMPLE, "--run-id", run_id, cwd=cwd).returncode == 0
    data = read_audit(cwd / "audit", run_id)
    assert (data["status"], data["reason"]) == ("suspended", "awaiting_confirmation") and not _rooms_booked(cwd)
    assert [(c["tool"], c["args"], c["state"]) for p in data["memory"]["proposals"] for c in p["calls"]] == \
        [("book_room", {"room_id": "R-202", "day": "2026-12-03", "hour": "10:00"}, "proposed")]
    assert run_agent("--confirm", run_id, cwd=cwd).returncode == 0
    assert read_audit(cwd / "audit", run_id)["status"] == "done"
    assert _rooms_booked(cwd) == [("R-202", "2026-12-03", "10:00")]


def _rooms_booked(cwd):
    path = os.path.join(cwd, "audit", "rooms.db")
    if not os.path.exists(path):
        return []
    with sqlite3.connect(path) as db:
        return db.execute("SELECT room_id, day, hour FROM bookings").fetchall()


def test_the_english_examples_real_run_is_judged_by_its_own_declarations(tmp_path):
    booked_example(tmp_path)
    # the run: list_rooms, get_calendar (R-202, from list_rooms), an offer in words, book_room R-202 held and shown,
    # "confirm", the loop books R-202 as held (requires list_rooms and get_calendar, both done before; room_id from
    # list_rooms): every declared rule holds.
    # The agent does not plan, so plan first does not apply, and it declares no room-type check.
    out = run_agent("--check", "m", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    entry = json.loads(out.stdout)["files"][0]
    assert entry["agent"] == "meeting-rooms"
    assert verdicts(entry) == {"no_skipped_step": "pass", "provenance": "pass", "write_after_confirmation": "pass",
                               "answer_matches_receipt": "pass"}
    assert [c["id"] for c in entry["not_applicable"]] == ["plan_first"]
    strict = run_agent("--check", "m", "--strict", cwd=tmp_path)     # nothing pending: --strict passes too
    assert strict.returncode == 0 and "planning" in strict.stdout


def test_a_booked_room_id_not_from_list_rooms_fails_provenance(tmp_path):
    # R-999 was held, shown and confirmed, but no list_rooms result ever gave it: provenance fails (the write is the
    # exact call the user approved, so it was confirmed); its required reads ran first.
    path = audit_file(tmp_path / "run-hand.json", conversation(proposed="R-999", booked="R-999"), rooms_declared())
    entry = check_cli.check_file(path)
    assert verdicts(entry) == {"no_skipped_step": "pass", "provenance": "fail", "write_after_confirmation": "pass",
                               "answer_matches_receipt": "pass"}
    assert "R-999" in reasons(entry)["provenance"] and "list_rooms" in reasons(entry)["provenance"]
    assert check_cli.exit_code([entry]) == 1
    # R-202 held and confirmed, R-999 booked: not the call the user approved, and from no list_rooms result
    path = audit_file(tmp_path / "run-hand.json", conversation(proposed="R-202", booked="R-999"), rooms_declared())
    entry = check_cli.check_file(path)
    assert verdicts(entry) == {"no_skipped_step": "pass", "provenance": "fail", "write_after_confirmation": "fail",
                               "answer_matches_receipt": "pass"}
    assert "R-999" in reasons(entry)["provenance"] and "book_room" in reasons(entry)["write_after_confirmation"]
    assert check_cli.exit_code([entry]) == 1


def test_a_booking_without_confirmation_fails(tmp_path):
    # book_room took effect with no proposal and no user reply: write after confirmation fails; the rest holds.
    path = audit_file(tmp_path / "run-hand.json", conversation(ask=False), rooms_declared())
    entry = check_cli.check_file(path)
    assert verdicts(entry) == {"no_skipped_step": "pass", "provenance": "pass", "write_after_confirmation": "fail",
                               "answer_matches_receipt": "pass"}
    reason = reasons(entry)["write_after_confirmation"]
    assert reason.startswith("第 3 轮 book_room（c3） 执行了") and "从未提出 book_room" in reason
    assert check_cli.exit_code([entry]) == 1


def test_a_booking_before_its_required_reads_fails_no_skipped_step(tmp_path):
    # book_room requires get_calendar: without it the step was skipped.
    messages = [m for m in conversation() if m.get("tool_call_id") != "c2" and
                not any(c["id"] == "c2" for c in m.get("tool_calls") or [])]
    entry = check_cli.check_file(audit_file(tmp_path / "run-hand.json", messages, rooms_declared()))
    assert verdicts(entry)["no_skipped_step"] == "fail" and "get_calendar" in reasons(entry)["no_skipped_step"]


def test_the_declared_confirm_replies_confirm(tmp_path):
    # "make it so" is this agent's confirm reply: it confirms. Read without the declaration (the Xi'an agent's
    # rules do not know book_room) nothing could be judged, and no check passes.
    agent = dict(rooms_declared(), confirm=["make it so"])
    messages = conversation(reply="make it so")
    entry = check_cli.check_file(audit_file(tmp_path / "run-hand.json", messages, agent))
    assert verdicts(entry)["write_after_confirmation"] == "pass"
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(messages), encoding="utf-8")
    assert set(verdicts(check_cli.check_file(str(bare))).values()) == {"pending"}


def test_another_systems_transcript_is_judged_with_the_agent_named(tmp_path):
    # a bare Chat array records no agent: --agent examples/rooms.py names whose declarations apply
    path = tmp_path / "other.json"
    path.write_text(json.dumps(conversation(reply="yes, book it")), encoding="utf-8")
    out = run_agent("--check", str(path), "--agent", EXAMPLE, "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    entry = json.loads(out.stdout)["files"][0]
    assert entry["agent"] == "meeting-rooms"
    assert verdicts(entry) == {"no_skipped_step": "pass", "provenance": "pass", "write_after_confirmation": "pass",
                               "answer_matches_receipt": "pass"}
    # without --agent it is judged as the Xi'an agent's run: no business call of that agent, nothing passes
    xian = run_agent("--check", str(path), "--json", cwd=tmp_path)
    entry = json.loads(xian.stdout)["files"][0]
    assert xian.returncode == 0 and set(verdicts(entry).values()) == {"pending"} and len(entry["checks"]) == 6
    # the same transcript with a fabricated room, judged as the rooms agent's: provenance fails
    path.write_text(json.dumps(conversation(proposed="R-999", booked="R-999")), encoding="utf-8")
    bad = run_agent("--check", str(path), "--agent", EXAMPLE, cwd=tmp_path)
    assert bad.returncode == 1


def test_an_agent_file_that_cannot_be_loaded_exits_2(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("AGENT = 1\n", encoding="utf-8")
    out = run_agent("--check", os.path.join(CORPUS, "local_done.json"), "--agent", str(broken), cwd=tmp_path)
    assert out.returncode == 2 and "AGENT" in out.stderr


def test_the_recorded_agent_wins_over_the_one_given(tmp_path):
    # an audit file of the rooms agent is judged by its record even when another agent is given
    path = audit_file(tmp_path / "run-hand.json", conversation(ask=False), rooms_declared())
    entry = check_cli.check_file(path, agent=copy.deepcopy(declaration.XIAN))
    assert entry["agent"] == "meeting-rooms" and verdicts(entry)["write_after_confirmation"] == "fail"


def test_a_recorded_xian_agent_in_mcp_mode_keeps_the_coordinates_rule(tmp_path):
    # an MCP run records the tools it really had (the loop: agent.declared(toolset.tools)): the coordinates
    # of get_weather must come from search_location (the file's coordinates were made up)
    from handloop import toolset
    with open(os.path.join(CORPUS, "bad_mcp_fabricated_coordinates.json"), encoding="utf-8") as f:
        snap = json.load(f)
    ts = toolset.ToolSet("mcp-coords", tools.xian_agent(None), "mcp", schemas=snap["tools"])      # as a resume builds it: no server
    snap["agent"] = ts.agent.declared(ts.tools.values())
    assert snap["agent"]["tools"]["get_weather"]["sources"][0]["tool"] == "search_location"
    path = tmp_path / "run-mcp-coords.json"
    path.write_text(json.dumps(snap, ensure_ascii=False), encoding="utf-8")
    entry = check_cli.check_file(str(path))
    assert verdicts(entry) == {"plan_first": "pass", "no_skipped_step": "pending", "provenance": "fail",
                               "room_type": "pending", "write_after_confirmation": "pending",
                               "answer_matches_receipt": "pending"}
    assert "的坐标" in reasons(entry)["provenance"]


def test_checks_an_agent_declares_run_only_when_declared(tmp_path):
    # the room-type rule is the Xi'an agent's own: a rooms run has none; an unknown name cannot be judged
    agent = dict(rooms_declared(), checks=["room_type_follows_weather", "no_such_check"])
    entry = check_cli.check_file(audit_file(tmp_path / "run-hand.json", conversation(), agent))
    assert verdicts(entry) == {"no_skipped_step": "pass", "provenance": "pass", "room_type": "pending",
                               "no_such_check": "pending", "write_after_confirmation": "pass",
                               "answer_matches_receipt": "pass"}
    assert {c["id"]: c["cause"] for c in entry["checks"]}["no_such_check"] == "not_declared"
    assert set(checks.AGENT_CHECKS) == {"room_type_follows_weather"}


def test_a_declaration_with_nothing_to_judge_is_never_a_pass(tmp_path):
    # no planning, no requires, no sources, no write, no checks of its own: one pending verdict, not an empty pass
    agent = {"name": "lookup", "confirm": ["ok"], "language": "en", "planning": False, "checks": [],
             "tools": {"list_rooms": {"kind": "read", "requires": [], "effect": [], "sources": []}}}
    messages = conversation()[:4] + [{"role": "assistant", "content": "R-202 seats ten."}]
    entry = check_cli.check_file(audit_file(tmp_path / "run-hand.json", messages, agent))
    assert [c["verdict"] for c in entry["checks"]] == ["pending"]
    assert {c["id"] for c in entry["not_applicable"]} == {"plan_first", "no_skipped_step", "provenance",
                                                          "write_after_confirmation", "answer_matches_receipt"}
    assert check_cli.exit_code([entry], strict=True) == 1


def test_the_judges_xian_declaration_is_the_xian_agents_with_its_mcp_tools():
    # declaration.XIAN (the default for files recording no agent) must not drift from tools.xian_agent()'s declaration
    # and its weather MCP server's source of the MCP get_weather's coordinates
    declared, xian = tools.xian_agent(None).declared(), declaration.XIAN
    assert (xian["name"], xian["confirm"], xian["planning"], xian["checks"]) == \
        (declared["name"], declared["confirm"], declared["planning"], declared["checks"])
    for name, spec in declared["tools"].items():
        mine = xian["tools"][name]
        assert (mine["kind"], mine.get("requires", []), mine.get("effect", [])) == \
            (spec["kind"], spec["requires"], spec["effect"])
        assert all(s in mine.get("sources", []) for s in spec["sources"])
    server = tools.WEATHER_SERVER
    mcp = [{"args": list(s.args), "tool": s.tool, "fields": list(s.fields), "path": s.path, "near": s.near}
           for s in server.rule("get_weather")["sources"]]
    assert xian["tools"]["get_weather"]["sources"] == mcp and set(server.tools) <= set(xian["tools"])

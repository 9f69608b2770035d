"""Your own agent: one declaration (agents.Agent) with its prompt, confirm replies, language and
planning; declaration mistakes refused when made; the English meeting-room example end to end
through the command line, in new processes. Assertions read states, stores and audit files."""
import json
import os
import sqlite3

import pytest

from handloop import loop
from handloop import runs
from handloop import texts
from handloop import toolset
from handloop.agents import Agent
from handloop.calls import Source, Tool
from conftest import ROOT, read_audit, run_agent, text, tool_calls

EXAMPLE = os.path.join(ROOT, "examples", "rooms.py")
OBJ = {"type": "object", "properties": {"room_id": {"type": "string"}, "day": {"type": "string"}}}


def book(room_id, day, idempotency_key):
    return {"room_id": room_id, "day": day}


def look(room_id="", day=""):
    return {"rooms": [{"room_id": "R-1"}]}


@pytest.mark.parametrize("make, words", [
    (lambda: Tool("book", "d", OBJ, book, kind="Write", effect=(("room_id", "id"),), takes=("idempotency_key",)),
     "kind='Write'"),
    (lambda: Tool("book", "d", OBJ, book, kind="write", effect=(("room_id", "room"),), takes=("idempotency_key",)),
     "effect"),
    (lambda: Tool("book", "d", OBJ, book, kind="write", effect=(("room_id", "id"),)), "takes=('idempotency_key',)"),
    (lambda: Tool("book", "d", OBJ, book, kind="write", takes=("idempotency_key",)), "must declare effect"),
    (lambda: Tool("book", "d", OBJ, book, kind="write", effect=(("room_id", "id"),), takes=("idem",)), "takes='idem'"),
    (lambda: Agent("a", "p", [Tool("look", "d", OBJ, look), Tool("look", "d", OBJ, look)]), "two tools"),
    (lambda: Agent("a", "p", [Tool("look", "d", OBJ, look, requires=("list",))]), "'list'"),
    (lambda: Agent("a", "p", [Tool("look", "d", OBJ, look, sources=(Source(("room_id",), "rooms", ("id",)),))]),
     "'rooms'"),
    (lambda: Agent("a", "p", [], language="fr"), "language='fr'"),
    (lambda: Agent("a", "p", [], confirm=["", " "]), "confirm"),
])
def test_a_declaration_mistake_is_refused_when_it_is_made(make, words):
    with pytest.raises(ValueError) as info:
        make()
    assert words in str(info.value)


WRITE = Tool("book_room", "Book a room (a write).", {"type": "object", "required": ["room_id", "day"], "properties": {
    "room_id": {"type": "string"}, "day": {"type": "string"}}}, book, kind="write", takes=("idempotency_key",),
    requires=("list_rooms",), sources=(Source(("room_id",), "list_rooms", ("room_id",), "rooms[]"),),
    effect=(("room_id", "id"), ("day", "date")))
LIST = Tool("list_rooms", "List rooms.", {"type": "object", "properties": {}}, look)


def english(tools=(LIST, WRITE), planning=False):
    return Agent("rooms", "You book rooms with tools only.", list(tools), goal="Book R-1 on 2026-12-03.",
                 confirm=("Confirm", "yes, book it"), language="en", planning=planning)


def run_english(tmp_path, fake_model, replies, agent, confirm=None):
    ts = toolset.ToolSet("e", agent=agent)
    r = runs.begin(str(tmp_path), "e", "", ts, "scripted", fsync=False)
    ask, endpoint = fake_model(replies)
    loop.run(r, ask, ts)
    if confirm is not None:
        runs.add_user(r, confirm)
        loop.run(r, ask, ts)
    return r, endpoint


def test_an_english_agent_sends_no_chinese_to_its_model(tmp_path, fake_model):
    replies = [tool_calls(("book_room", {"room_id": "R-9", "day": "2026-12-03"})), text("hello"),
               tool_calls(("list_rooms", {})), tool_calls(("book_room", {"room_id": "R-1", "day": "2026-12-03"}),
                                                          ("book_room", {"room_id": "R-1", "day": "x", "bad": 1})),
               text("I will wait for your answer.")]
    r, endpoint = run_english(tmp_path, fake_model, replies, english(planning=True))
    sent = json.dumps(endpoint.requests, ensure_ascii=False)
    assert not texts.CJK.search(sent), texts.CJK.findall(sent)[:10]
    assert not texts.CJK.search(json.dumps(read_audit(tmp_path, "e"), ensure_ascii=False))
    assert r.messages[1]["content"] == "Book R-1 on 2026-12-03."                  # the agent's own goal


def test_its_confirm_replies_confirm_trimmed_and_in_any_case(tmp_path, fake_model):
    replies = [tool_calls(("list_rooms", {})), text("Shall I book R-1 on 2026-12-03?"),
               tool_calls(("book_room", {"room_id": "R-1", "day": "2026-12-03"})), text("Booked.")]
    r, _ = run_english(tmp_path, fake_model, replies, english(), confirm="  YES, book it ")
    assert (r.status, len(r.memory.writes)) == ("done", 1)
    assert read_audit(tmp_path, "e")["agent"]["confirm"] == ["Confirm", "yes, book it"]


def test_an_english_agents_confirmed_blocked_call_is_made_by_the_loop_and_judged_a_write_after_confirmation(
        tmp_path, fake_model):
    from handloop import checks
    from handloop.judge import transcripts
    replies = [tool_calls(("list_rooms", {})), tool_calls(("book_room", {"room_id": "R-1", "day": "2026-12-03"})),
               text("Booked R-1 for 2026-12-03.")]
    r, endpoint = run_english(tmp_path, fake_model, replies, english(), confirm="Confirm")
    assert (r.status, len(endpoint.requests)) == ("done", 3)      # looked up, proposed (blocked), answered
    assert r.memory.writes[0]["args"] == {"room_id": "R-1", "day": "2026-12-03"}
    issued = [m for m in r.messages if m["role"] == "assistant" and m.get("name") == "loop"]
    assert len(issued) == 1 and issued[0]["tool_calls"][0]["function"]["name"] == "book_room"
    assert not texts.CJK.search(json.dumps(read_audit(tmp_path, "e"), ensure_ascii=False))
    verdicts = {v["id"]: v["verdict"] for v in checks.judge(transcripts.load(r.path))}
    assert verdicts["write_after_confirmation"] == "pass", verdicts


def test_the_chinese_word_does_not_confirm_an_english_agent(tmp_path, fake_model):
    replies = [tool_calls(("list_rooms", {})), text("Shall I book R-1 on 2026-12-03?"),
               tool_calls(("book_room", {"room_id": "R-1", "day": "2026-12-03"}))]
    r, _ = run_english(tmp_path, fake_model, replies, english(), confirm="确认")
    assert not r.memory.writes and r.status == "suspended"


def test_planning_off_offers_no_planning_tools_and_requires_no_plan(tmp_path, fake_model):
    replies = [tool_calls(("list_rooms", {})), text("Book R-1 on 2026-12-03?")]
    r, endpoint = run_english(tmp_path, fake_model, replies, english())
    offered = {t["function"]["name"] for t in endpoint.requests[0]["tools"]}
    assert offered == {"list_rooms", "book_room"} and r.memory.progress == 1


def test_an_agent_without_a_write_tool_ends_done_on_its_answer(tmp_path, fake_model):
    replies = [text("Let me think."), tool_calls(("list_rooms", {})), text("There is one room: R-1.")]
    r, _ = run_english(tmp_path, fake_model, replies, english(tools=(LIST,)))
    assert (r.status, r.reason) == ("done", "final_answer") and r.answer == "There is one room: R-1."


def _bookings(cwd):
    with sqlite3.connect(cwd / "audit" / "rooms.db") as db:
        return db.execute("SELECT COUNT(*) FROM bookings").fetchone()[0]


def test_the_example_suspends_then_one_confirmation_in_a_new_process_books_once(tmp_path):
    out = run_agent("--agent", EXAMPLE, "--run-id", "m", cwd=tmp_path)
    snap = read_audit(tmp_path / "audit", "m")                             # offered in words, asked for the call
    assert out.returncode == 0 and (snap["status"], snap["reason"]) == ("suspended", "awaiting_confirmation")
    assert snap["memory"]["proposal"]["tool"] == "book_room"
    assert not texts.CJK.search(out.stdout + out.stderr)
    recorded = snap["agent"]
    assert (recorded["name"], recorded["file"], recorded["language"]) == ("meeting-rooms", EXAMPLE, "en")
    done = run_agent("--confirm", "m", cwd=tmp_path)                       # no --agent: the record knows it
    assert done.returncode == 0 and read_audit(tmp_path / "audit", "m")["status"] == "done"
    assert not texts.CJK.search(done.stdout + done.stderr) and _bookings(tmp_path) == 1
    again = run_agent("--confirm", "m", cwd=tmp_path)
    assert again.returncode == 2 and _bookings(tmp_path) == 1 and not texts.CJK.search(again.stderr)


def test_a_crash_between_the_confirmation_and_the_booking_books_once(tmp_path):
    assert run_agent("--agent", EXAMPLE, "--run-id", "k", cwd=tmp_path).returncode == 0
    assert read_audit(tmp_path / "audit", "k")["reason"] == "awaiting_confirmation"
    crashed = run_agent("--confirm", "k", cwd=tmp_path, env={"AGENT_FAULT": "after_tool"})
    assert crashed.returncode == -9
    resumed = run_agent("--resume", "k", cwd=tmp_path)
    assert resumed.returncode == 0 and read_audit(tmp_path / "audit", "k")["status"] == "done"
    assert _bookings(tmp_path) == 1


def test_a_typo_in_an_agent_file_exits_2_naming_the_field(tmp_path):
    source = open(EXAMPLE, encoding="utf-8").read().replace('kind="write"', 'kind="Write"')
    (tmp_path / "bad.py").write_text(source, encoding="utf-8")
    out = run_agent("--agent", str(tmp_path / "bad.py"), cwd=tmp_path)
    assert out.returncode == 2 and "kind='Write'" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "audit").exists() or not any(p.startswith("run-") for p in os.listdir(tmp_path / "audit"))


@pytest.mark.parametrize("policy", ['{"token_budget": 10**10}', '{"max_turns": 0}', '{"no_such": 1}', '"fast"'])
def test_a_bad_policy_in_an_agent_file_exits_2_in_its_language(tmp_path, policy):
    source = open(EXAMPLE, encoding="utf-8").read().replace("planning=False", f"planning=False, policy={policy}")
    assert f"policy={policy}" in source
    (tmp_path / "bad.py").write_text(source, encoding="utf-8")
    out = run_agent("--agent", str(tmp_path / "bad.py"), cwd=tmp_path)
    assert out.returncode == 2 and "policy" in out.stderr and "Traceback" not in out.stderr
    assert not texts.CJK.search(out.stderr)
    assert not (tmp_path / "audit").exists() or not any(p.startswith("run-") for p in os.listdir(tmp_path / "audit"))


def test_an_english_agents_remote_mcp_errors_are_english():
    from handloop.mcp import http as mcp_http
    from handloop import mcp_tools
    for bad in ("ftp://host/mcp", "http://user:pw@host/mcp", ""):
        with pytest.raises(mcp_tools.MCPError) as info:
            mcp_http.Target(bad, texts.of("en"))
        assert not texts.CJK.search(str(info.value))
    with pytest.raises(ValueError) as info:
        mcp_http.check_token("two words", texts.of("en"))
    assert not texts.CJK.search(str(info.value))


def test_help_and_usage_errors_speak_the_agents_language(tmp_path):
    shown = run_agent("--agent", EXAMPLE, "--help", cwd=tmp_path)
    wrong = run_agent("--agent", EXAMPLE, "--json", cwd=tmp_path)
    assert shown.returncode == 0 and "--agent" in shown.stdout and not texts.CJK.search(shown.stdout)
    assert wrong.returncode == 2 and "--json" in wrong.stderr and not texts.CJK.search(wrong.stderr)


def test_a_failed_model_service_is_told_in_the_agents_language(tmp_path, fake_model):
    from test_model import http
    ts = toolset.ToolSet("f", agent=english())
    r = runs.begin(str(tmp_path), "f", "", ts, "scripted", fsync=False)
    ask, _ = fake_model([http(401, body={"error": {"message": "bad key"}})])
    loop.run(r, ask, ts)
    assert (r.status, r.reason) == ("error", "auth") and "bad key" in r.detail and not texts.CJK.search(r.detail)


def test_the_audit_files_refusals_speak_the_named_agents_language(tmp_path):
    out = run_agent("--agent", EXAMPLE, "--confirm", "nosuch", cwd=tmp_path)
    (tmp_path / "audit").mkdir(exist_ok=True)
    (tmp_path / "audit" / "run-bad.json").write_text('{"messages": [', encoding="utf-8")
    bad = run_agent("--agent", EXAMPLE, "--resume", "bad", cwd=tmp_path)
    for done in (out, bad):
        assert done.returncode == 2 and done.stderr.startswith("error: ") and not texts.CJK.search(done.stderr)

"""One judge of confirmation: --check reads a run that records its agent exactly as its guards read it (the
helpdesk's enum choice and serial id, the binding rule, the agent's own confirm replies, set_plan's plan
normalisation), while another system's transcript keeps the wider reading, and the report says which applied.
Runs through the command line and the real openai client; assertions read verdicts and audit files."""
import json
import os

import pytest

from handloop.llm.endpoint import Endpoint
from conftest import ROOT, read_audit, run_agent

HELPDESK = os.path.join(ROOT, "tests", "helpdesk_mcp", "it_helpdesk.py")


def judged(tmp_path, path, agent=None):
    out = run_agent("--check", str(path), *(["--agent", agent] if agent else []), "--json", cwd=tmp_path)
    entry = json.loads(out.stdout)["files"][0]
    return {c["id"]: c["verdict"] for c in entry["checks"]}, entry, out


def helpdesk_done(tmp_path, run_id="h"):
    pytest.importorskip("mcp")
    assert run_agent("--agent", HELPDESK, "--run-id", run_id, cwd=tmp_path).returncode == 0
    assert run_agent("--confirm", run_id, cwd=tmp_path).returncode == 0
    path = tmp_path / "audit" / f"run-{run_id}.json"
    return path, json.loads(path.read_text(encoding="utf-8"))


def rewrite(path, snap, target, change):
    """The audit file with each message passed through `change` (a hand-edited run), written to `target`."""
    edited = dict(snap, messages=[change(dict(m)) for m in snap["messages"]])
    target.write_text(json.dumps(edited, ensure_ascii=False), encoding="utf-8")
    return target


def said_instead(old, new, role="assistant"):
    def change(m):
        if m["role"] == role and isinstance(m.get("content"), str):
            m["content"] = m["content"].replace(old, new)
        return m
    return change


def test_a_run_that_ordered_what_was_proposed_passes_read_as_its_guards_read_it(tmp_path):
    path, _ = helpdesk_done(tmp_path)
    verdicts, entry, out = judged(tmp_path, path)
    assert verdicts["write_after_confirmation"] == "pass" and entry["reading"] == "agent"
    assert "yes, order it" in entry["reading_text"]


def ran_instead(old, new):
    """The loop's own call, the approved one it issued after the confirmation, with `old` replaced by `new` in its
    arguments: a run that ran something other than the held call the user approved."""
    def change(m):
        if m["role"] == "assistant" and m.get("name") == "loop":
            m["tool_calls"] = [dict(c, function=dict(c["function"], arguments=c["function"]["arguments"].replace(
                old, new))) for c in m.get("tool_calls") or []]
        return m
    return change


def write_check(entry):
    return next(c for c in entry["checks"] if c["id"] == "write_after_confirmation")


def test_words_that_named_an_mba13_decide_nothing_the_held_x1_14_the_user_approved_passes(tmp_path):
    """Words are never a proposal: the model's text said MBA-13, its held call (shown to the user, approved) was
    the X1-14 that ran. Read as its guards read it, the run passes."""
    path, snap = helpdesk_done(tmp_path)
    mine = rewrite(path, snap, tmp_path / "mba13.json", said_instead("an X1-14", "an MBA-13"))
    assert "an MBA-13" in mine.read_text(encoding="utf-8")
    verdicts, entry, out = judged(tmp_path, mine)
    assert verdicts["write_after_confirmation"] == "pass" and entry["reading"] == "agent", out.stdout


def test_an_mba13_order_after_the_x1_14_the_user_approved_fails_in_both_readings(tmp_path):
    path, snap = helpdesk_done(tmp_path)
    mine = rewrite(path, snap, tmp_path / "mba13.json", ran_instead("X1-14", "MBA-13"))
    verdicts, entry, out = judged(tmp_path, mine)
    assert verdicts["write_after_confirmation"] == "fail" and out.returncode == 1 and entry["reading"] == "agent"
    assert "order_laptop" in write_check(entry)["reason"]
    other = tmp_path / "mba13-chat.json"                      # the same conversation from another system
    other.write_text(json.dumps(json.loads(mine.read_text())["messages"]), encoding="utf-8")
    verdicts, entry, out = judged(tmp_path, other, HELPDESK)
    assert verdicts["write_after_confirmation"] == "fail" and entry["reading"] == "wide", write_check(entry)


def test_a_ticket_of_another_record_than_the_approved_call_fails_the_check(tmp_path):
    path, snap = helpdesk_done(tmp_path)                      # the order's ticket is Bob's, the approved one Alice's
    swapped = rewrite(path, snap, tmp_path / "swap.json", ran_instead("T-1042", "T-2001"))
    verdicts, entry, out = judged(tmp_path, swapped)
    assert verdicts["write_after_confirmation"] == "fail" and out.returncode == 1
    assert "order_laptop" in write_check(entry)["reason"]


def test_sure_go_ahead_confirms_only_in_the_wider_reading(tmp_path):
    """Replying "sure, go ahead" (no confirm reply of the agent's, no decision recorded) declines the held call in
    the run's own reading, so the order after it fails; another system's transcript reads it as an approval."""
    path, snap = helpdesk_done(tmp_path)

    def sure(m):
        if m["role"] == "user" and m.get("content") == "yes, order it":
            m["content"] = "sure, go ahead"
            m.pop("decision", None)
        return m
    assert any(m.get("decision") for m in snap["messages"])
    mine = rewrite(path, snap, tmp_path / "sure.json", sure)
    verdicts, entry, _ = judged(tmp_path, mine)                # its runtime never takes it for a confirmation
    assert verdicts["write_after_confirmation"] == "fail" and entry["reading"] == "agent"
    other = tmp_path / "sure-chat.json"
    other.write_text(json.dumps(json.loads(mine.read_text())["messages"]), encoding="utf-8")
    verdicts, entry, out = judged(tmp_path, other, HELPDESK)
    assert verdicts["write_after_confirmation"] == "pass" and entry["reading"] == "wide"
    assert "wider reading" in out.stdout or "wider reading" in entry["reading_text"]


SELF_AFTER = [{"title": "查天气", "tool": "get_weather", "after": [1]},
              {"title": "搜酒店", "tool": "search_hotels", "after": [2, 3]},
              {"title": "预订", "tool": "book_hotel", "after": [1, 2, 3]}]


def self_dependent(request):
    """A small model's plan: each step's `after` names the step itself (and a later one); then it proposes in
    words; asked for the booking (a forced tool_choice, or 「确认」 while nothing is held) it calls it."""
    messages = request["messages"]
    results = [m for m in messages if m["role"] == "tool"]
    users = [m for m in messages if m["role"] == "user" and m.get("name") != "loop"]
    if any('"booking_id"' in m["content"] for m in results):
        return {"content": "已预订。"}
    if not results:
        return {"content": None, "tool_calls": [
            {"id": "p", "type": "function", "function": {"name": "set_plan", "arguments": json.dumps(
                {"steps": SELF_AFTER}, ensure_ascii=False)}},
            {"id": "w", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps(
                {"city": "西安", "date": "2026-10-01"}, ensure_ascii=False)}},
            {"id": "s", "type": "function", "function": {"name": "search_hotels", "arguments": json.dumps(
                {"city": "西安", "check_in": "2026-10-01", "nights": 2}, ensure_ascii=False)}}]}
    choice = request.get("tool_choice")
    forced = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    if forced == "book_hotel" or (len(users) > 1 and users[-1]["content"] == "确认"):
        return {"content": None, "tool_calls": [{"id": "b", "type": "function", "function": {
            "name": "book_hotel", "arguments": json.dumps({"hotel_id": "XA-001", "room_type": "Suite",
                                                           "check_in": "2026-10-01", "nights": 2})}}]}
    return {"content": "10 月 1 日有雨。建议预订古城墙酒店（XA-001）Suite，2026-10-01 入住 2 晚，共 ¥1760。请回复「确认」。"}


def test_a_plan_whose_steps_name_themselves_is_judged_as_set_plan_kept_it(tmp_path):
    endpoint = Endpoint(self_dependent)
    try:
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": endpoint.url, "AGENT_MODEL_RETRIES": "0",
               "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        assert run_agent("--run-id", "p", cwd=tmp_path, env=env).returncode == 0
        assert run_agent("--confirm", "p", cwd=tmp_path, env=env).returncode == 0
    finally:
        endpoint.close()
    snap = read_audit(tmp_path / "audit", "p")
    assert snap["status"] == "done" and snap["memory"]["plan"][2]["after"] == [1, 2]     # the runtime dropped [3]
    verdicts, _, out = judged(tmp_path, tmp_path / "audit" / "run-p.json")
    assert set(verdicts.values()) == {"pass"}, out.stdout

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


def test_the_mba13_proposal_followed_by_an_x1_14_order_fails_in_both_readings(tmp_path):
    path, snap = helpdesk_done(tmp_path)
    mine = rewrite(path, snap, tmp_path / "mba13.json", said_instead("an X1-14", "an MBA-13"))
    verdicts, entry, out = judged(tmp_path, mine)
    assert verdicts["write_after_confirmation"] == "fail" and out.returncode == 1
    assert "model" in [c for c in entry["checks"] if c["id"] == "write_after_confirmation"][0]["reason"]
    other = tmp_path / "mba13-chat.json"                      # the same conversation from another system
    other.write_text(json.dumps(json.loads(mine.read_text())["messages"]), encoding="utf-8")
    verdicts, entry, out = judged(tmp_path, other, HELPDESK)
    assert verdicts["write_after_confirmation"] == "fail" and entry["reading"] == "wide"


def test_a_ticket_of_another_record_than_the_confirmed_serial_fails_the_check(tmp_path):
    path, snap = helpdesk_done(tmp_path)

    def swap(m):                                              # the order's ticket is Bob's, its serial Alice's
        if m["role"] == "assistant" and m.get("tool_calls"):
            for c in m["tool_calls"]:
                if c["function"]["name"] == "order_laptop":
                    c["function"]["arguments"] = c["function"]["arguments"].replace("T-1042", "T-2001")
        return m
    verdicts, entry, out = judged(tmp_path, rewrite(path, snap, tmp_path / "swap.json", swap))
    assert verdicts["write_after_confirmation"] == "fail" and "ticket_id" in json.dumps(entry["checks"])


def test_sure_go_ahead_confirms_only_in_the_wider_reading(tmp_path):
    path, snap = helpdesk_done(tmp_path)
    mine = rewrite(path, snap, tmp_path / "sure.json", said_instead("yes, order it", "sure, go ahead", role="user"))
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
    words and books what it proposed after 「确认」."""
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
    if len(users) > 1 and users[-1]["content"] == "确认":
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

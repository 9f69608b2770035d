"""Memory as a fold over the messages; compaction on a copy."""
import copy
import json

from conftest import PLAN
from memory import Memory, compact, cut, rebuild
from toolset import ToolSet

TS = ToolSet("r", None)


def history(rounds, size=3000):
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "goal"}]
    for i in range(rounds):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}a", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
            {"id": f"c{i}b", "type": "function", "function": {"name": "search_hotels", "arguments": "{}"}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}a", "content": json.dumps({"x": "a" * size})})
        messages.append({"role": "tool", "tool_call_id": f"c{i}b", "content": "short"})
    return messages


def test_compact_summarises_old_rounds_keeps_ids_and_leaves_the_original_alone():
    messages = history(6)
    before = copy.deepcopy(messages)
    out = compact(messages, recent_rounds=2)
    assert messages == before
    assert [m.get("tool_call_id") for m in out] == [m.get("tool_call_id") for m in messages]
    assert [m["role"] for m in out] == [m["role"] for m in messages]
    old, recent = out[3]["content"], out[-2]["content"]
    assert old.startswith("〔已压缩") and len(old) < 200
    assert len(recent) == len(messages[-2]["content"])          # recent rounds stay whole (under the cut)
    assert sum(len(m.get("content") or "") for m in out) < 0.4 * sum(len(m.get("content") or "") for m in messages)


def test_compact_cuts_recent_long_results_head_and_tail():
    messages = history(1, size=50_000)
    content = compact(messages)[3]["content"]
    assert len(content) < 5_000 and "中间省略" in content and content.endswith('"}')


def test_cut_keeps_head_and_tail():
    assert cut("abc", 10) == "abc"
    out = cut("H" * 100 + "T" * 100, 30)
    assert out.startswith("H" * 20) and out.endswith("T" * 10) and "省略 170 字符" in out


def _live_run():
    """A memory built the live way, and the messages it came from."""
    m, messages = Memory(), [{"role": "system", "content": "s"}, {"role": "user", "content": "goal"}]
    m.absorb_user("goal")

    def turn(*items):
        raw = [{"id": f"c{len(messages)}{i}", "type": "function",
                "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False)}} for i, (n, a, _) in enumerate(items)]
        messages.append({"role": "assistant", "content": None, "tool_calls": raw})
        for call, (_, _, result) in zip(TS.prepare(raw), items):
            content = json.dumps(result, ensure_ascii=False)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
            m.absorb(call, content)

    turn(("set_plan", {"steps": PLAN}, {"plan": [dict(s, index=i, after=s.get("after", [])) for i, s in enumerate(PLAN, 1)]}))
    turn(("get_weather", {"city": "西安", "date": "2026-10-01"}, {"date": "2026-10-01", "condition": "rain"}),
         ("search_hotels", {"city": "西安", "check_in": "2026-10-01"},
          {"hotels": [{"hotel_id": "XA-001", "name": "n", "prices": {"Suite": 880}}]}))
    proposal = {"hotel_id": "XA-001", "room_type": "Suite", "check_in": "2026-10-01", "nights": 2}
    turn(("book_hotel", proposal, {"error": "需要确认", "blocked_by": "unconfirmed_write", "proposal": proposal}))
    messages.append({"role": "assistant", "content": "请确认"})
    messages.append({"role": "user", "content": "确认"})
    m.absorb_user("确认")
    return m, messages


def test_rebuild_from_messages_equals_the_live_memory():
    live, messages = _live_run()
    assert live.confirmed and live.proposal["hotel_id"] == "XA-001"
    assert rebuild(messages, TS.prepare).to_dict() == live.to_dict()


def test_confirmation_needs_a_proposal_first():
    m = Memory()
    m.absorb_user("goal")
    m.absorb_user("确认")
    assert not m.confirmed


def test_other_reply_withdraws_the_proposal():
    live, _ = _live_run()
    live.absorb_user("不订了")
    assert live.proposal is None and not live.confirmed


def test_render_shows_plan_hotels_and_confirmation_state():
    live, _ = _live_run()
    text = live.render()
    assert "计划第 3 步" in text and "XA-001" in text and "用户已确认" in text

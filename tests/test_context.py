"""What is sent: compaction by size that keeps structure, on a copy, in epochs a provider can cache."""
import copy
import json

from handloop import context
from handloop import loop
from handloop import runs
from conftest import BOOK, PLAN, text, tool_calls
from handloop import tools
from handloop.toolset import ToolSet

TS = ToolSet("r", tools.xian_agent(None))
HOTELS = [{"hotel_id": f"XA-00{i}", "name": f"酒店{i}", "prices": {"Standard": 400 + i, "Suite": 800 + i},
           "description": "安静的庭院，步行可达钟楼和回民街。" * 20} for i in range(1, 4)]


def history(rounds):
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "goal"}]
    plan = {"plan": [dict(s, index=i, after=s.get("after", [])) for i, s in enumerate(PLAN, 1)], "notes": "x" * 200}
    receipt = {"booking_id": "BK-1", "hotel_id": "XA-001", "total": 1760, "message": "预订成功。" * 40}
    results = [("set_plan", plan)] + [("search_hotels", {"city": "西安", "check_in": f"2026-10-{i + 1:02d}",
                                                        "hotels": HOTELS}) for i in range(rounds)]
    results.append(("book_hotel", receipt))
    for i, (name, result) in enumerate(results):
        messages.append({"role": "assistant", "content": "想一想。" * 200,
                         "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": json.dumps(result, ensure_ascii=False)})
    return messages


def test_compacted_results_stay_json_with_their_facts_and_a_note_receipts_and_plan_whole():
    messages = history(4)
    before = copy.deepcopy(messages)
    out = context.compact(messages, TS.tool)
    assert messages == before
    assert [m.get("tool_call_id") for m in out] == [m.get("tool_call_id") for m in messages]
    search = json.loads(out[5]["content"])
    assert [h["hotel_id"] for h in search["hotels"]] == ["XA-001", "XA-002", "XA-003"]
    assert search["hotels"][0]["prices"] == {"Standard": 401, "Suite": 801} and "description" not in search["hotels"][0]
    assert "hotels[].description" in search["_compacted"]
    assert out[3]["content"] == messages[3]["content"] and out[-1]["content"] == messages[-1]["content"]
    assert len(out[2]["content"]) < len(messages[2]["content"])                      # old prose cut


def test_over_its_room_the_oldest_results_become_stubs_never_the_receipt():
    messages = history(10)
    roomy, tight = context.compact(messages, TS.tool), context.compact(messages, TS.tool, room=6000)
    assert context.chars(tight) <= 6000 < context.chars(roomy)
    assert "已压缩" in tight[5]["content"] and json.loads(tight[5]["content"])["check_in"] == "2026-10-01"
    assert tight[-1]["content"] == messages[-1]["content"]


def test_recent_long_results_are_cut_head_and_tail():
    message = {"role": "tool", "tool_call_id": "c", "content": json.dumps({"x": "a" * 50_000})}
    content = context.recent(message)["content"]
    assert len(content) < 5_000 and "中间省略" in content and content.endswith('"}')


def test_the_xian_run_is_never_compacted_and_each_request_extends_the_last(fake_model, new_run):
    r, ts, _ = new_run()
    ask, endpoint = fake_model([tool_calls(("set_plan", {"steps": PLAN}), ("get_weather", {"city": "西安", "date": "2026-10-01"}),
                                           ("search_hotels", {"city": "西安", "check_in": "2026-10-01", "nights": 2})),
                                text("建议古城墙酒店（XA-001）Suite 两晚，确认吗？"),
                                tool_calls(("book_hotel", BOOK))])       # the offer in words, then the forced call
    loop.run(r, ask, ts)
    assert (r.status, r.reason) == ("suspended", "awaiting_confirmation")
    sent = [json.dumps(q["messages"], ensure_ascii=False) for q in endpoint.requests]
    assert len(sent) == 3 and r.window.start == 1
    assert all(after.startswith(before[:-1]) for before, after in zip(sent, sent[1:]))


def test_a_long_run_compacts_in_epochs_and_stays_small(fake_model, new_run, tmp_path):
    r, ts, _ = new_run(max_turns=80, budget=10**9)
    r.compact_budget = 12_000

    def respond(request):
        n = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if n == 0:
            return tool_calls(("set_plan", {"steps": PLAN}))
        return tool_calls(("search_hotels", {"city": "西安", "check_in": f"2027-{n // 28 + 1:02d}-{n % 28 + 1:02d}"}))

    class Padded(type(ts)):
        def run(self, call, memory):
            result = super().run(call, memory)
            return dict(result, notes="附近景点与交通说明。" * 200) if call.name == "search_hotels" else result
    ask, endpoint = fake_model(respond)
    loop.run(r, ask, Padded("t1", ts.agent))
    last = r.trace[-1]
    assert r.window.start > 1 and last["chars_sent"] < 0.2 * last["chars_full"]
    sent = [json.dumps(q["messages"], ensure_ascii=False) for q in endpoint.requests]
    epochs = sum(1 for a, b in zip(sent, sent[1:]) if not b.startswith(a[:-1]))
    assert 1 <= epochs <= len(sent) // 5          # between epochs a request extends the last one byte for byte
    again, _, _ = runs.reopen(str(tmp_path), r.run_id, lambda snap: ts, lambda snap: None)
    assert again.window.request(again.messages, ts.tool) == r.window.request(r.messages, ts.tool)   # resume: same bytes

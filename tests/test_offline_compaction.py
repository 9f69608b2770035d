"""The offline model reads what compaction left: a search result shortened in an old round is
read back from the memory block of the system message, as the compaction note says."""
import json

import offline
from conftest import GOAL
from memory import Memory, compact

HOTELS = {"hotels": [{"hotel_id": "XA-001", "name": "古城墙酒店", "prices": {"Standard": 420, "Suite": 880}},
                     {"hotel_id": "XA-002", "name": "大雁塔假日酒店", "prices": {"Standard": 380}}]}


def test_a_compacted_hotel_search_is_read_from_the_memory_block():
    memory = Memory(GOAL)
    memory.hotels = {h["hotel_id"]: {"name": h["name"], "prices": h["prices"]} for h in HOTELS["hotels"]}
    plan = {"plan": [{"index": 1, "title": "天气", "tool": "get_weather", "after": []}]}
    rounds = [("set_plan", {"steps": [{"title": "天气", "tool": "get_weather"}]}, plan),
              ("search_hotels", {"city": "西安", "check_in": "2026-10-01", "nights": 2}, HOTELS),
              ("get_weather", {"city": "西安", "date": "2026-10-01"}, {"date": "2026-10-01", "condition": "rain"}),
              ("mark_step", {"index": 1, "status": "done"}, {"index": 1, "status": "done"})]
    messages = [{"role": "system", "content": memory.render()}, {"role": "user", "content": GOAL}]
    for i, (name, args, result) in enumerate(rounds):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": json.dumps(result, ensure_ascii=False)})
    sent = compact(messages)
    assert "已压缩" in sent[5]["content"]                       # the search result really was shortened
    reply = offline.respond({"messages": sent, "tools": [{"function": {"name": n}} for n in
                                                         ("set_plan", "mark_step", "get_weather", "search_hotels", "book_hotel")]})
    booking = json.loads(reply["tool_calls"][-1]["function"]["arguments"])
    assert reply["tool_calls"][-1]["function"]["name"] == "book_hotel"
    assert (booking["hotel_id"], booking["room_type"]) == ("XA-001", "Suite")

"""The offline model reads what compaction left: a compacted search result still carries its
hotels; a result shrunk to a stub is read back from the memory block of the system message."""
import json

from handloop import context
from handloop.demo import offline
from conftest import GOAL
from handloop.memory import Memory
from handloop import tools
from handloop.toolset import ToolSet

HOTELS = {"hotels": [{"hotel_id": "XA-001", "name": "古城墙酒店", "prices": {"Standard": 420, "Suite": 880},
                      "description": "城墙脚下。" * 40},
                     {"hotel_id": "XA-002", "name": "大雁塔假日酒店", "prices": {"Standard": 380}}]}
NAMES = ("set_plan", "mark_step", "get_weather", "search_hotels", "book_hotel")


def conversation():
    memory = Memory(GOAL)
    search = ToolSet("r", tools.xian_agent(None)).prepare([{"id": "s", "function": {"name": "search_hotels", "arguments": "{}"}}])[0]
    memory.absorb(search, HOTELS)                     # what the memory block says of the search
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
    return messages


def proposal(sent):
    reply = offline.respond({"messages": sent, "tools": [{"function": {"name": n}} for n in NAMES]})
    return reply["content"]


def test_a_compacted_hotel_search_still_has_its_hotels():
    sent = context.compact(conversation(), ToolSet("r", tools.xian_agent(None)).tool)
    assert "_compacted" in sent[5]["content"] and "XA-001" in sent[5]["content"]
    assert "XA-001" in proposal(sent) and "Suite" in proposal(sent)


def test_a_search_shrunk_to_a_stub_is_read_from_the_memory_block():
    sent = context.compact(conversation(), ToolSet("r", tools.xian_agent(None)).tool, room=500)
    assert "XA-001" not in sent[5]["content"]
    assert "XA-001" in proposal(sent) and "Suite" in proposal(sent)

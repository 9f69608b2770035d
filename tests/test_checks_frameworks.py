"""`--check` on what the frameworks really write (issue 21): the Xi'an task run on the OpenAI Agents SDK,
LangGraph with LangChain's human-in-the-loop middleware and pydantic-ai, each with its own scripted model,
approval mechanism and the demo's real tools, saved in the framework's own serialisation and in the Chat and
Anthropic shapes its converters write. tests/corpus_frameworks/make_corpus.py made the corpus (the
frameworks are not needed here); expected.json holds the verdicts written by hand from each scenario."""
import collections
import json
import os
import random

import pytest

from conftest import ROOT, run_cli, unreadable
from handloop import checks
from handloop.judge import transcripts
from handloop.cli import check as check_cli

from test_checks import _mutants, reasons, verdicts  # noqa: E402

HERE = os.path.join(ROOT, "tests", "corpus_frameworks")
with open(os.path.join(HERE, "expected.json"), encoding="utf-8") as f:
    EXPECTED = json.load(f)
IDS = [cid for cid, _ in checks.CHECKS]
GOAL = "帮我订 2026-10-01 西安的酒店，住两晚。如果那天下雨就订 Suite，否则订 Standard。预订前必须先等我确认。"


def path(name):
    return os.path.join(HERE, name)


def load_json(name):
    with open(path(name), encoding="utf-8") as f:
        return json.load(f)


def check_data(tmp_path, data, name="t.json"):
    target = tmp_path / name
    if name.endswith(".jsonl"):
        target.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in data), encoding="utf-8")
    else:
        target.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return check_cli.check_file(str(target))


def test_the_corpus_covers_every_framework_shape_and_scenario():
    files = {n for n in os.listdir(HERE) if n.endswith((".json", ".jsonl")) and n != "expected.json"}
    assert files == set(EXPECTED)
    shapes = collections.Counter((w["framework"], w["format"]) for w in EXPECTED.values())
    assert {("agents", "responses"), ("agents", "chat"), ("langgraph", "langchain"), ("langgraph", "chat"),
            ("langgraph", "anthropic"), ("pydantic_ai", "pydantic_ai"), ("pydantic_ai", "chat"),
            ("pydantic_ai", "anthropic"), ("pydantic_ai", "otlp")} == set(shapes)
    scenarios = {n.split(".")[0].split("_", 1)[1].replace("ai_", "", 1) for n in EXPECTED}
    assert {"approved_after_words", "approved_by_framework_only", "rejected", "booked_without_approval",
            "fabricated_hotel_id", "wrong_room_type", "booking_before_weather"} <= scenarios
    assert len(EXPECTED) >= 80


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_framework_transcript_verdicts(name):
    want, entry = EXPECTED[name], check_cli.check_file(path(name))
    assert entry["error"] is None and entry["format"] == want["format"]
    assert verdicts(entry) == want["verdicts"], reasons(entry)
    for cid, fragment in want["faults"].items():
        assert fragment in reasons(entry)[cid]
    assert check_cli.exit_code([entry]) == (1 if "fail" in want["verdicts"].values() else 0)
    assert (entry["progress"] == "booked") == (want["bookings"] > 0)     # the store's rows: what really happened
    assert entry["finished"], "every scenario ends with the model's closing answer"


@pytest.mark.parametrize("name", sorted(n for n, w in EXPECTED.items()
                                        if w["format"] in ("anthropic", "pydantic_ai", "otlp")))
def test_anthropic_and_pydantic_ai_files_are_read_with_every_call(name):
    """Never an empty chat: every call of the run is read, with its result."""
    t = transcripts.load(path(name))
    assert {c.name for c in t.calls} >= {"set_plan", "search_hotels", "book_hotel"}
    assert all(c.status != "unanswered" for c in t.calls) and t.turns >= 4
    assert t.messages[0]["role"] in ("system", "user") and any(m["role"] == "user" and m["text"] for m in t.messages)


REJECTIONS = {"agents": "Tool execution was not approved.", "langgraph": "User rejected the tool call for `book_hotel`",
              "pydantic_ai": "The tool call was denied."}


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if "_rejected" in n))
def test_a_rejection_is_a_decline_that_finishes_the_run(name):
    t = transcripts.load(path(name))
    book = next(c for c in t.calls if c.name == "book_hotel")
    assert book.status == "error" and book.decision == "reject"
    assert REJECTIONS[EXPECTED[name]["framework"]][:25] in book.reply
    entry = check_cli.check_file(path(name))
    reason = reasons(entry)["write_after_confirmation"]
    assert entry["finished"] and "被用户拒绝" in reason and "等待用户答复" not in reason
    assert entry["progress"] == "no_booking"


def test_the_frameworks_mark_a_rejection_their_own_way():
    lc = load_json("langgraph_rejected.lc.json")
    tool = next(m["data"] for m in lc if m["type"] == "tool" and m["data"]["name"] == "book_hotel")
    assert tool["status"] == "error" and tool["additional_kwargs"] == {
        "lc_source": "hitl_interrupt_decision", "lc_data": {"decision": "reject"}}
    pa = load_json("pydantic_ai_rejected.pydantic_ai.json")
    part = next(p for m in pa for p in m["parts"] if p["part_kind"] == "tool-return" and p["tool_name"] == "book_hotel")
    assert part["outcome"] == "denied" and part["content"] == "The tool call was denied."
    agents = load_json("agents_rejected.agents.json")
    assert {"call_id": "call_book_1", "output": "Tool execution was not approved.",
            "type": "function_call_output"} in agents


def test_an_approval_is_not_in_any_transcript_so_a_framework_only_approval_fails():
    for framework in ("agents", "langgraph", "pydantic_ai"):
        name = next(n for n in EXPECTED if n.startswith(framework) and "approved_by_framework_only" in n)
        entry = check_cli.check_file(path(name))
        assert verdicts(entry)["write_after_confirmation"] == "fail" and entry["progress"] == "booked"


def test_langchain_respond_is_the_reviewers_reply_not_a_run_of_the_tool():
    t = transcripts.load(path("langgraph_respond_declines.lc.json"))
    book = next(c for c in t.calls if c.name == "book_hotel")
    assert book.status == "error" and book.decision == "respond" and book.reply == "先别订，我再想想。"
    assert not t.ok("book_hotel") and check_cli.check_file(path("langgraph_respond_declines.lc.json"))["finished"]


def test_respond_that_confirms_authorises_the_same_booking(tmp_path):
    """A `respond` text is read like a user's reply: 「确认」 authorises the held call's arguments."""
    items = load_json("langgraph_respond_declines.lc.json")
    tool = next(m for m in items if m["type"] == "tool" and m["data"]["name"] == "book_hotel")
    tool["data"]["content"] = "确认"
    call = next(m for m in items if m["type"] == "ai" and m["data"]["tool_calls"]
                and m["data"]["tool_calls"][0]["name"] == "book_hotel")
    again = json.loads(json.dumps(call))
    again["data"]["tool_calls"][0]["id"] = "call_book_2"
    receipt = {"type": "tool", "data": {"content": json.dumps({"booking_id": "BK-1", "hotel_id": "XA-001",
                                                               "room_type": "Suite", "check_in": "2026-10-01",
                                                               "nights": 2, "total": 1760}),
                                        "tool_call_id": "call_book_2", "status": "success", "type": "tool"}}
    done = {"type": "ai", "data": {"content": "已预订。", "type": "ai", "tool_calls": []}}
    entry = check_data(tmp_path, items[:-1] + [again, receipt, done])
    assert verdicts(entry) == dict.fromkeys(IDS, "pass"), reasons(entry)


def test_a_harness_notification_is_not_the_user(tmp_path):
    """A HumanMessage marked lc_source (written by the harness, not typed by the user) never confirms."""
    items = load_json("langgraph_approved_after_words.lc.json")
    confirm = next(m for m in items if m["type"] == "human" and m["data"]["content"] == "确认")
    confirm["data"]["additional_kwargs"] = {"lc_source": "summarization"}
    entry = check_data(tmp_path, items)
    assert verdicts(entry)["write_after_confirmation"] == "fail"


def test_any_tool_result_saying_the_user_did_not_approve_is_a_decline(tmp_path):
    chat = load_json("agents_rejected.chat.json")
    result = next(m for m in chat if m["role"] == "tool" and m["tool_call_id"] == "call_book_1")
    for text in ("The user declined this booking.", "用户拒绝了这次预订", '{"error": "user did not approve the call"}'):
        result["content"] = text
        entry = check_data(tmp_path, chat)
        assert entry["finished"] and "被用户拒绝" in reasons(entry)["write_after_confirmation"], text


def test_a_bare_list_of_anthropic_responses_has_calls_of_unknown_outcome(tmp_path):
    responses = [m for m in load_json("pydantic_ai_approved_after_words.anthropic_responses.json")
                 if m.get("type") == "message"]
    assert responses and all("stop_reason" in m for m in responses)
    entry = check_data(tmp_path, [{"role": "user", "content": GOAL}] + responses)
    assert entry["format"] == "anthropic" and entry["turns"] == len(responses)
    assert set(verdicts(entry).values()) == {"pending"}
    assert any("没有对应的工具结果" in n for n in entry["notes"])
    assert {c["cause"] for c in entry["checks"]} & {"unknown_outcome"}


def test_an_anthropic_request_object_and_jsonl_read_the_same(tmp_path):
    request = load_json("langgraph_wrong_room_type.anthropic.json")
    assert set(request) >= {"system", "messages"}
    want = EXPECTED["langgraph_wrong_room_type.anthropic.json"]["verdicts"]
    assert verdicts(check_data(tmp_path, request["messages"], "bare.json")) == want
    for name in ("pydantic_ai_wrong_room_type.pydantic_ai.json", "pydantic_ai_fabricated_hotel_id.anthropic.json"):
        lines = check_data(tmp_path, load_json(name), "lines.jsonl")
        assert lines["container"] == "jsonl" and verdicts(lines) == EXPECTED[name]["verdicts"]


def test_formats_mix_item_by_item(tmp_path):
    """A pydantic-ai history whose first user turn is a chat message, and an Anthropic list with one string turn."""
    items = load_json("pydantic_ai_approved_after_words.pydantic_ai.json")
    items.insert(1, {"role": "user", "content": "（补充）住两晚。"})
    entry = check_data(tmp_path, items)
    assert entry["format"] == "pydantic_ai" and verdicts(entry) == dict.fromkeys(IDS, "pass")


def test_pydantic_ai_retries_errors_and_interruptions(tmp_path):
    items = load_json("pydantic_ai_tool_error_then_booked.pydantic_ai.json")
    t = transcripts.load(path("pydantic_ai_tool_error_then_booked.pydantic_ai.json"))
    assert [c.status for c in t.calls if c.name == "book_hotel"] == ["error", "ok"]
    part = next(p for m in items for p in m["parts"] if p.get("tool_call_id") == "call_book_1"
                and p["part_kind"] == "tool-return")
    assert part["outcome"] == "retried"
    # the older serialisation: a retry-prompt part answers the call; one without a tool is the framework's nudge
    old = {"part_kind": "retry-prompt", "content": "酒店 XA-009 不存在", "tool_name": "book_hotel",
           "tool_call_id": "call_book_1", "timestamp": part["timestamp"]}
    items = [dict(m, parts=[old if p is part else p for p in m["parts"]]) for m in items]
    assert verdicts(check_data(tmp_path, items)) == dict.fromkeys(IDS, "pass")
    # the user's 「确认」 as a tool-less retry-prompt: the framework's text to the model, never the user's reply
    nudged = [dict(m, parts=[{"part_kind": "retry-prompt", "content": "确认", "tool_name": None}
                             if p["part_kind"] == "user-prompt" and p["content"] == "确认" else p for p in m["parts"]])
              for m in items]
    assert nudged != items
    assert verdicts(check_data(tmp_path, nudged))["write_after_confirmation"] == "fail"
    # a run cut off mid-call: an interrupted return is no result
    cut = [dict(m, parts=[dict(p, outcome="interrupted") if p.get("tool_call_id") == "call_book_2"
                          and p["part_kind"] == "tool-return" else p for p in m["parts"]]) for m in items]
    entry = check_data(tmp_path, cut)
    assert verdicts(entry)["write_after_confirmation"] == "pending"
    assert any("中断" in n for n in entry["notes"])


@pytest.mark.parametrize("content,fragment", [
    ('[{"role": "user", "content": [{"type": "tool_invocation", "id": "x"}]}]', "内容块类型 'tool_invocation' 不认识"),
    ('[{"role": "assistant", "content": [{"type": "text", "text": "hi"}, {"type": "function_use", "name": "book_hotel"}]}]',
     "内容块类型 'function_use' 不认识"),
    ('[{"kind": "request", "parts": [{"part_kind": "telepathy", "content": "x"}]}]', "不认识的 part_kind 'telepathy'"),
    ('[{"kind": "response", "parts": [{"content": "x"}]}]', "没有 part_kind"),
    ('{"system": "x", "messages": []}', "没有任何用户或助手消息")])
def test_unknown_blocks_and_parts_exit_2(content, fragment, tmp_path):
    entry, target = unreadable(tmp_path, content)
    assert fragment in entry["error"]
    cli = run_cli("--check", str(target), cwd=tmp_path)
    assert cli.returncode == 2 and "Traceback" not in cli.stderr


def test_the_unreadable_message_names_the_new_formats(tmp_path):
    target = tmp_path / "odd.json"
    target.write_text('{"conversation": []}', encoding="utf-8")
    error = check_cli.check_file(str(target))["error"]
    assert "Anthropic Messages" in error and "pydantic-ai" in error


ODD = [None, 0, -1, True, "", "x", [], {}, [None], {"": None}, 1e308, "{'a': (1,", {"type": "tool_use"},
       {"part_kind": "tool-call"}, {"kind": "response", "parts": None}, {"type": "message", "stop_reason": None}]


@pytest.mark.parametrize("name", ["pydantic_ai_rejected.pydantic_ai.json", "langgraph_rejected.anthropic.json",
                                  "pydantic_ai_tool_error_then_booked.anthropic_responses.json",
                                  "langgraph_respond_declines.lc.json"])
def test_odd_values_anywhere_never_raise(name, tmp_path):
    original = load_json(name)
    for i, mutant in enumerate(_mutants(original, random.Random(name), 150, ODD)):
        target = tmp_path / f"m{i}.json"
        target.write_text(json.dumps(mutant, ensure_ascii=False), encoding="utf-8")
        entry = check_cli.check_file(str(target))              # must not raise
        assert entry["error"] or len(entry["checks"]) == 6 and check_cli.render(entry)

"""The loop end to end with a scripted model behind the fake endpoint (real openai client)."""
import json
import os

import pytest

from handloop import audit
from handloop import loop
from handloop import runs
from conftest import BOOK, PLAN, read_audit, text, tool_calls
from test_model import http

WEATHER = {"city": "西安", "date": "2026-10-01"}
HOTELS = {"city": "西安", "check_in": "2026-10-01", "nights": 2}
OPENING = [tool_calls(("set_plan", {"steps": PLAN})),
           tool_calls(("get_weather", WEATHER), ("search_hotels", HOTELS)),
           tool_calls(("book_hotel", BOOK))]       # eager: blocked as the proposal, the run waits at once


def paired_after_every_turn(kind, run, **_):
    audit.load(run.path)          # raises if the file on disk breaks the pairing rule


def tool_results(r):
    return [json.loads(m["content"]) for m in r.messages if m["role"] == "tool"]


WORDS = text("10 月 1 日有雨。建议预订古城墙酒店（XA-001）Suite，2026-10-01 入住 2 晚，共 ¥1760，请确认。")
IN_WORDS = OPENING[:2] + [WORDS]             # an offer in words: the loop asks for the call (forced), then holds it


def test_scripted_run_suspends_then_books_once_after_confirmation(fake_model, new_run):
    r, ts, store = new_run()
    ask, endpoint = fake_model(OPENING + [text("已订好。")])
    loop.run(r, ask, ts, paired_after_every_turn)
    assert (r.status, r.reason, r.turn) == ("suspended", "awaiting_confirmation", 3)
    assert store.count() == 0 and r.memory.proposal["args"] == BOOK and r.memory.proposal["shows"]["total"] == 1760
    runs.add_user(r, "确认")
    loop.run(r, ask, ts, paired_after_every_turn)
    assert (r.status, r.reason, r.turn) == ("done", "final_answer", 5)
    assert store.count() == 1 and r.memory.fact("booking")["total"] == 1760
    assert [t["turn"] for t in r.trace] == [1, 2, 3, 4, 5] and len(endpoint.requests) == 4   # the model asked 4 times
    assert r.trace[1]["tools"][0]["concurrent"] and r.trace[2]["tools"][0]["guard"] == "unconfirmed_write"


def test_the_confirmed_blocked_call_is_made_by_the_loop_as_shown(fake_model, new_run):
    """The user confirms a blocked write: the loop issues that exact call (recorded as the loop's,
    paired), the model is asked only for its answer, and the request it gets is valid: its own call answered
    by what the loop's call returned (the approval stays in the record, as approval flows keep it)."""
    r, ts, store = new_run()
    ask, endpoint = fake_model(OPENING + [text("已订好。")])
    loop.run(r, ask, ts)
    blocked = r.messages[-2]["tool_calls"][0]
    runs.add_user(r, "确认")
    loop.run(r, ask, ts, paired_after_every_turn)
    mine = next(m for m in r.messages if m["role"] == "assistant" and m.get("name") == "loop")
    call = mine["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == json.loads(blocked["function"]["arguments"]) == BOOK
    assert call["function"]["name"] == "book_hotel" and call["id"] != blocked["id"]
    answered = r.messages[r.messages.index(mine) + 1]
    assert answered["tool_call_id"] == call["id"] and json.loads(answered["content"])["booking_id"]
    assert store.count() == 1 and r.memory.writes[0]["args"] == BOOK and r.status == "done"
    last = endpoint.requests[-1]["messages"]          # the model saw its own call answered by the receipt
    assert not any(m.get("name") == "loop" for m in last) and last[-1]["role"] == "tool"
    assert last[-1]["tool_call_id"] == blocked["id"] and last[-1]["content"] == answered["content"]
    assert [m["content"] for m in last if m["role"] == "user"] == [r.messages[1]["content"]]   # the approval: the record's
    assert "loop" in r.trace[3]["notes"][0] and r.trace[3]["tokens"] == 0
    reopened, _, warnings = runs.reopen(os.path.dirname(r.path), r.run_id, lambda snap: ts, lambda snap: None)
    assert reopened.memory.writes == r.memory.writes and not warnings        # the fold reads it back the same


def test_a_model_that_repeats_the_confirmed_call_anyway_books_once(fake_model, new_run):
    r, ts, store = new_run()
    ask, endpoint = fake_model(OPENING + [tool_calls(("book_hotel", BOOK)), text("已订好。")])
    loop.run(r, ask, ts)
    runs.add_user(r, "确认")
    loop.run(r, ask, ts, paired_after_every_turn)
    assert store.count() == 1 and r.status == "done"
    assert tool_results(r)[-1]["blocked_by"] == "unconfirmed_write" and "booking_id" in tool_results(r)[-1]["error"]


def test_a_proposal_in_words_is_asked_for_as_a_call_held_then_booked_by_the_loop(fake_model, new_run):
    r, ts, store = new_run()
    ask, endpoint = fake_model(IN_WORDS + [tool_calls(("book_hotel", BOOK, "m1")), text("已订好。")])
    loop.run(r, ask, ts)
    assert (r.status, r.reason, store.count()) == ("suspended", "awaiting_confirmation", 0)
    assert endpoint.requests[-1]["tool_choice"] == {"type": "function", "function": {"name": "book_hotel"}}
    assert r.memory.proposal["args"] == BOOK and r.memory.proposal["id"] == "m1"      # the model's call, held
    runs.add_user(r, "确认")
    loop.run(r, ask, ts)
    assert store.count() == 1 and r.status == "done" and len(endpoint.requests) == 5    # one call more than eager
    made = [m for m in r.messages if m["role"] == "assistant" and m.get("name") == "loop"]
    assert len(made) == 1 and json.loads(made[0]["tool_calls"][0]["function"]["arguments"]) == BOOK


def test_a_reply_that_is_not_a_confirmation_books_nothing(fake_model, new_run):
    r, ts, store = new_run()
    ask, _ = fake_model(OPENING + [text("好的，不订了。")])
    loop.run(r, ask, ts)
    runs.add_user(r, "不订了")
    loop.run(r, ask, ts)
    assert store.count() == 0 and (r.status, r.memory.proposal) == ("done", None)


def test_a_model_that_books_anyway_after_a_refusal_is_blocked_again(fake_model, new_run):
    r, ts, store = new_run()
    ask, _ = fake_model(OPENING + [tool_calls(("book_hotel", BOOK)), text("还是订吧？")])
    loop.run(r, ask, ts)
    runs.add_user(r, "不订了")
    loop.run(r, ask, ts)
    assert store.count() == 0 and (r.status, r.reason) == ("suspended", "awaiting_confirmation")
    assert tool_results(r)[-1]["blocked_by"] == "unconfirmed_write"


def test_same_booking_twice_in_one_batch_is_one_held_call_and_one_row(fake_model, new_run):
    r, ts, store = new_run()
    ask, _ = fake_model(IN_WORDS + [tool_calls(("book_hotel", BOOK, "x"), ("book_hotel", BOOK, "y")), text("好")])
    loop.run(r, ask, ts)
    first, second = tool_results(r)[-2:]
    assert first["blocked_by"] == "unconfirmed_write" and second["blocked_by"] == "duplicate"
    assert [[c["args"] for c in p["calls"]] for p in r.memory.proposals] == [[BOOK]]
    runs.add_user(r, "确认")
    loop.run(r, ask, ts)
    assert store.count() == 1 and r.status == "done" and tool_results(r)[-1]["booking_id"]


def test_spinning_is_blocked_and_then_stops_the_run(fake_model, new_run):
    r, ts, _ = new_run()
    ask, _ = fake_model([tool_calls(("set_plan", {"steps": PLAN}))] + [tool_calls(("get_weather", WEATHER))] * 8)
    loop.run(r, ask, ts, paired_after_every_turn)
    assert (r.status, r.reason) == ("stopped", "spin")
    guards = [t["tools"][0]["guard"] for t in r.trace]
    assert guards == [None, None, None, "spin", "spin", "spin"]


def test_max_turns_ends_with_one_tool_free_answer(fake_model, new_run):
    r, ts, _ = new_run(max_turns=3)
    ask, endpoint = fake_model([tool_calls(("set_plan", {"steps": PLAN})),
                                tool_calls(("get_weather", WEATHER)),
                                tool_calls(("search_hotels", HOTELS)),
                                tool_calls(("book_hotel", BOOK))])
    loop.run(r, ask, ts, paired_after_every_turn)
    assert (r.status, r.reason, r.turn) == ("stopped", "max_turns", 4)
    assert endpoint.requests[-1]["tool_choice"] == "none"
    assert r.messages[-1]["role"] == "assistant" and "tool_calls" not in r.messages[-1]
    assert "dropped 1 tool call" in r.trace[-1]["notes"][0]
    audit.load(r.path)


def test_budget_is_checked_before_paying_for_a_call(fake_model, new_run):
    r, ts, _ = new_run(budget=100)
    ask, endpoint = fake_model([text("never")])
    loop.run(r, ask, ts)
    assert (r.status, r.reason) == ("stopped", "budget") and endpoint.requests == []


def test_budget_exceeded_by_real_usage_blocks_the_calls_and_stops(fake_model, new_run):
    r, ts, _ = new_run(budget=3000)
    usage = {"prompt_tokens": 4000, "completion_tokens": 1000, "total_tokens": 5000}
    ask, _ = fake_model([dict(tool_calls(("set_plan", {"steps": PLAN})), usage=usage)])
    loop.run(r, ask, ts, paired_after_every_turn)
    assert (r.status, r.reason) == ("stopped", "budget") and tool_results(r)[0]["blocked_by"] == "budget"


def test_an_empty_reply_is_asked_again_with_a_nudge_then_an_error_a_resume_can_move_on(fake_model, new_run):
    r, ts, _ = new_run()
    ask, endpoint = fake_model([text(""), text(""), tool_calls(("set_plan", {"steps": PLAN})), text("好的")])
    loop.run(r, ask, ts)
    assert (r.status, r.reason) == ("error", "empty_reply") and len(endpoint.requests) == 2
    first, second = (q["messages"] for q in endpoint.requests)
    assert second[:-1] == first and second[-1]["name"] == "loop"          # not the identical request
    nudge = r.messages[-1]
    assert nudge["role"] == "user" and nudge["name"] == "loop" and r.memory.said == [r.messages[1]["content"]]
    assert sum(m.get("name") == "loop" for m in r.messages) == 1 and r.memory.used_tokens > 0
    loop.run(r, ask, ts)
    assert r.memory.plan and r.status == "suspended"


def test_an_empty_reply_then_a_real_one_goes_on_without_an_error(fake_model, new_run):
    r, ts, _ = new_run()
    ask, endpoint = fake_model([text(""), tool_calls(("set_plan", {"steps": PLAN})), text("好的")])
    loop.run(r, ask, ts)
    assert r.status == "suspended" and r.memory.plan and endpoint.requests[1]["messages"][-1]["name"] == "loop"
    assert any("empty_reply" in n for t in r.trace for n in t["notes"])
    audit.load(r.path)                                                     # loadable and paired


def test_model_failure_is_recorded_and_a_resume_continues_with_turns_and_tokens(fake_model, new_run, tmp_path):
    r, ts, _ = new_run()
    ask, _ = fake_model([tool_calls(("set_plan", {"steps": PLAN})), http(401), text("好了")])
    loop.run(r, ask, ts)
    assert (r.status, r.reason, r.turn) == ("error", "auth", 1)
    used = r.memory.used_tokens
    again, _, warnings = runs.reopen(str(tmp_path), r.run_id, lambda snap: ts, lambda snap: None)
    assert warnings == [] and again.turn == 1 and again.memory.used_tokens == used and again.memory.plan
    loop.run(again, ask, ts)
    assert again.status == "suspended" and again.turn > 1 and again.memory.used_tokens > used


def test_bad_arguments_go_back_to_the_model_and_the_fix_runs(fake_model, new_run):
    r, ts, _ = new_run()
    ask, _ = fake_model([tool_calls(("set_plan", {"steps": PLAN})),
                         tool_calls(("get_weather", '```json\n{"city": "西安", "date": "10/01"}\n```')),
                         tool_calls(("get_weather", "{'city': '西安', 'date': '2026-10-01',}")), text("下雨")])
    loop.run(r, ask, ts)
    results = tool_results(r)
    assert results[1]["blocked_by"] == "arguments" and "格式不对" in results[1]["error"]
    assert results[2]["condition"] == "rain" and r.status == "suspended"


def test_content_with_tool_calls_is_kept(fake_model, new_run):
    r, ts, _ = new_run()
    ask, _ = fake_model([dict(tool_calls(("set_plan", {"steps": PLAN})), content="先做计划"), text("好")])
    loop.run(r, ask, ts)
    assert r.messages[2]["content"] == "先做计划" and r.messages[2]["tool_calls"]


def test_a_question_without_a_proposal_waits_for_a_reply(fake_model, new_run):
    r, ts, _ = new_run()
    ask, _ = fake_model([text("你想住几晚？")])
    loop.run(r, ask, ts)
    assert (r.status, r.reason) == ("suspended", "awaiting_reply")


def test_hand_edited_confirmation_is_rebuilt_from_the_messages(fake_model, new_run, tmp_path):
    r, ts, store = new_run()
    ask, _ = fake_model(OPENING + [tool_calls(("book_hotel", BOOK)), text("好")])
    loop.run(r, ask, ts)
    data = json.loads(open(r.path, encoding="utf-8").read())
    data["memory"]["confirmed"] = True
    audit.write(r.path, data)
    again, _, warnings = runs.reopen(str(tmp_path), r.run_id, lambda snap: ts, lambda snap: None)
    assert "confirmed" in warnings and not again.memory.confirmed
    runs.add_user(again, "随便")
    loop.run(again, ask, ts)
    assert store.count() == 0


@pytest.mark.parametrize("rounds", [1, 5])
def test_every_request_the_model_saw_was_paired(fake_model, new_run, rounds):
    r, ts, _ = new_run()
    script = [tool_calls(("set_plan", {"steps": PLAN}))]
    script += [tool_calls(("get_weather", {"city": "西安", "date": f"2026-10-0{i + 1}"}),
                          ("search_hotels", dict(HOTELS, nights=i + 1))) for i in range(rounds)]
    ask, endpoint = fake_model(script + [text("好")])
    loop.run(r, ask, ts)
    nudges = sum(m.get("name") == "loop" for m in r.messages)            # the endpoint 400s on any unpaired request
    assert r.status == "suspended" and len(endpoint.requests) == rounds + 2 + nudges


def test_the_audit_records_the_schemas_sent_and_a_resume_of_an_older_file_sends_its_own(fake_model, new_run, tmp_path):
    r, ts, _ = new_run()
    ask, endpoint = fake_model([tool_calls(("set_plan", {"steps": PLAN})), text("好的")])
    loop.run(r, ask, ts)
    snap = read_audit(str(tmp_path), r.run_id)
    assert endpoint.requests[0]["tools"] == snap["tools"] == ts.schemas
    older = [t.spec() for t in ts.tools.values()]           # an older file: the full declared schemas were shown
    assert older != ts.schemas
    snap["tools"] = older
    with open(r.path, "w", encoding="utf-8") as f:
        json.dump(snap, f, ensure_ascii=False)
    again, _, warnings = runs.reopen(str(tmp_path), r.run_id, lambda s: ts, lambda s: None)
    runs.add_user(again, "继续")
    ask, endpoint = fake_model([tool_calls(("get_weather", {"city": "西安", "date": "10/01"})), text("日期不对")])
    loop.run(again, ask, ts)
    assert warnings == [] and all(req["tools"] == older for req in endpoint.requests)
    assert read_audit(str(tmp_path), r.run_id)["tools"] == older
    assert "arguments.date" in tool_results(again)[-1]["error"]      # validation as strict as ever

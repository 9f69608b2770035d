"""A confirmation approves exactly the held call, which the loop makes itself, once; words only lead to the call
(the offer nudge forces it) and never bind a value; anything the model sends afterwards is a new proposal; repeats
inside one turn are duplicates, not spins; a write decided with the outcomes of the reads before it in the same turn;
an eager model's blocked write is shown to the user at once. Scripted models through the real openai client; the
assertions read states, the store and the audit file."""
import json

import pytest

from handloop import audit
from handloop import loop
from handloop import runs
from conftest import BOOK, PLAN, text, tool_calls

WEATHER = {"city": "西安", "date": "2026-10-01"}
HOTELS = {"city": "西安", "check_in": "2026-10-01", "nights": 2}
LOOKUPS = tool_calls(("set_plan", {"steps": PLAN}), ("get_weather", WEATHER), ("search_hotels", HOTELS))
WORDS = text("10 月 1 日有雨。建议预订古城墙酒店（XA-001）Suite，2026-10-01 入住 2 晚，共 ¥1760，请确认。")
OTHER = dict(BOOK, hotel_id="XA-003")


def results(r):
    return [json.loads(m["content"]) for m in r.messages if m["role"] == "tool"]


def confirmed_then(fake_model, new_run, opening, after):
    r, ts, store = new_run()
    ask, endpoint = fake_model(opening + after)
    loop.run(r, ask, ts)
    assert (r.status, r.reason) == ("suspended", "awaiting_confirmation")
    runs.add_user(r, "确认")
    loop.run(r, ask, ts)
    audit.load(r.path)                                   # loadable and paired
    r.go_on = lambda: loop.run(r, ask, ts)
    return r, store, endpoint


def loop_made(r):
    """The write calls the loop itself made (an assistant message named "loop"), as (tool, args)."""
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for m in r.messages
            if m["role"] == "assistant" and m.get("name") == "loop" for c in m.get("tool_calls") or []]


def test_the_held_call_not_the_words_before_it_is_what_a_confirmation_runs(fake_model, new_run):
    """The words name XA-001; asked for the call, the model calls XA-003: the user is shown XA-003 and confirming
    books XA-003, as held, by the loop; the words bind nothing."""
    r, ts, store = new_run()
    ask, _ = fake_model([LOOKUPS, WORDS, tool_calls(("book_hotel", OTHER)), text("已订好。")])
    loop.run(r, ask, ts)
    assert (r.status, r.reason, store.count()) == ("suspended", "awaiting_confirmation", 0)
    assert (r.memory.proposal["tool"], r.memory.proposal["args"]) == ("book_hotel", OTHER)
    assert r.memory.proposal["state"] == "proposed" and not r.memory.confirmed
    runs.add_user(r, "确认")
    loop.run(r, ask, ts)
    assert (r.status, store.count()) == ("done", 1)
    assert r.memory.writes[0]["call"] == OTHER and loop_made(r) == [("book_hotel", OTHER)]
    assert [c["state"] for p in r.memory.proposals for c in p["calls"]] == ["executed"]


def test_another_room_of_the_same_hotel_then_the_confirmed_one(fake_model, new_run):
    r, store, _ = confirmed_then(fake_model, new_run, [LOOKUPS, WORDS],
                                 [tool_calls(("book_hotel", dict(BOOK, room_type="Standard"))),
                                  tool_calls(("book_hotel", BOOK)), text("已订好。")])
    assert (r.status, store.count(), r.memory.writes[0]["args"]["room_type"]) == ("done", 1, "Suite")


@pytest.mark.parametrize("words", [False, True], ids=["eager", "in-words"])
def test_an_early_booking_confirmed_is_made_as_shown_whatever_the_model_would_send(fake_model, new_run, words):
    """The confirmed blocked call is the loop's to make: a model that would have sent another hotel
    next books nothing unconfirmed; that other booking is put to the user as a new proposal."""
    opening = [LOOKUPS, *([WORDS] if words else []), tool_calls(("book_hotel", BOOK))]
    r, store, _ = confirmed_then(fake_model, new_run, opening, [tool_calls(("book_hotel", OTHER)), text("已订好。")])
    assert (store.count(), r.memory.writes[0]["args"]) == (1, BOOK) and loop_made(r) == [("book_hotel", BOOK)]
    assert (r.status, r.reason, r.memory.proposal["args"]["hotel_id"]) == ("suspended", "awaiting_confirmation", "XA-003")
    assert not r.memory.confirmed and r.memory.proposal["state"] == "proposed"


def test_another_booking_after_a_reply_is_put_to_the_user_exactly(fake_model, new_run):
    """Any reply but a confirmation declines the held call; the model's other booking is a new proposal, shown
    and run exactly as held once confirmed; the declined one never runs."""
    r, ts, store = new_run()
    ask, _ = fake_model([LOOKUPS, WORDS, tool_calls(("book_hotel", BOOK)), tool_calls(("book_hotel", OTHER)),
                         text("已订好。")])
    loop.run(r, ask, ts)
    assert r.memory.proposal["args"] == BOOK
    runs.add_user(r, "换成曲江国际酒店吧")
    loop.run(r, ask, ts)
    assert (r.status, r.reason, store.count()) == ("suspended", "awaiting_confirmation", 0)
    assert r.memory.proposal["args"] == OTHER and not r.memory.confirmed
    assert [p["state"] for p in r.memory.proposals] == ["declined", "proposed"]
    runs.add_user(r, "确认")
    loop.run(r, ask, ts)
    assert (r.status, store.count(), r.memory.writes[0]["call"]) == ("done", 1, OTHER)
    assert [p["state"] for p in r.memory.proposals] == ["declined", "executed"]


def test_proposing_in_words_again_instead_of_the_call_waits_and_a_yes_runs_nothing(fake_model, new_run):
    """A model that ignores the forced call and answers in words again: nothing is held, the run waits for a
    reply; the user's "确认" then is an ordinary reply, and the model's next write is held and shown, not run."""
    r, ts, store = new_run()
    ask, _ = fake_model([LOOKUPS, WORDS, text("抱歉，曲江国际酒店（XA-003）Suite 更合适，共 ¥1920，请再确认。"),
                         tool_calls(("book_hotel", OTHER)), text("已订好。")])
    loop.run(r, ask, ts)
    assert (r.status, r.reason, store.count()) == ("suspended", "awaiting_reply", 0)
    assert r.memory.proposals == [] and r.memory.proposal is None
    runs.add_user(r, "确认")
    loop.run(r, ask, ts)
    assert (r.status, r.reason, store.count()) == ("suspended", "awaiting_confirmation", 0)
    assert r.memory.proposal["args"] == OTHER and not r.memory.confirmed


def test_restating_the_booking_in_words_after_it_was_made_books_nothing_more(fake_model, new_run):
    r, store, _ = confirmed_then(fake_model, new_run, [LOOKUPS, WORDS, tool_calls(("book_hotel", BOOK))],
                                 [text("好的，按你确认的古城墙酒店（XA-001）Suite 预订。")])
    assert (r.status, r.reason, store.count()) == ("done", "final_answer", 1)
    assert not r.memory.confirmed and [p["state"] for p in r.memory.proposals] == ["executed"]


def test_a_confirmation_is_spent_once_its_call_ran_a_second_yes_runs_nothing(fake_model, new_run):
    """A confirmation authorises its call once: a second "确认" after the booking approves nothing (nothing is
    held), and the model sending the same booking again books nothing."""
    r, store, _ = confirmed_then(fake_model, new_run, [LOOKUPS, WORDS, tool_calls(("book_hotel", BOOK))],
                                 [text("已订好。"), tool_calls(("book_hotel", BOOK)), text("已订好。")])
    assert (r.status, store.count()) == ("done", 1)
    runs.add_user(r, "确认")
    r.go_on()
    assert store.count() == 1 and len(r.memory.writes) == 1
    assert results(r)[-1]["blocked_by"] == "unconfirmed_write" and loop_made(r) == [("book_hotel", BOOK)]
    assert len(r.memory.proposals) == 1 and r.memory.proposals[0]["state"] == "executed"  # refused, not held again


def test_the_same_read_many_times_in_one_turn_is_answered_not_a_spin(fake_model, new_run):
    r, ts, store = new_run()
    same = [("get_weather", WEATHER, f"w{i}") for i in range(6)]
    ask, _ = fake_model([tool_calls(("set_plan", {"steps": PLAN}), *same, ("search_hotels", HOTELS)), WORDS,
                         tool_calls(("book_hotel", BOOK))])
    loop.run(r, ask, ts)
    assert (r.status, r.reason, r.memory.spins) == ("suspended", "awaiting_confirmation", 0)
    found = results(r)
    assert "error" not in found[1] and all(x["blocked_by"] == "duplicate" for x in found[2:7])


def test_a_write_in_the_same_turn_as_its_reads_is_decided_with_their_outcomes(fake_model, new_run):
    r, ts, store = new_run()
    ask, endpoint = fake_model([tool_calls(("set_plan", {"steps": PLAN})),
                                tool_calls(("get_weather", WEATHER), ("search_hotels", HOTELS), ("book_hotel", BOOK))])
    loop.run(r, ask, ts)
    booked = results(r)[-1]
    assert booked["blocked_by"] == "unconfirmed_write" and booked["proposal"]["shows"]["total"] == 1760
    assert booked["proposal"]["args"] == BOOK
    assert (r.status, r.reason, store.count(), len(endpoint.requests)) == ("suspended", "awaiting_confirmation", 0, 2)


def test_a_same_turn_write_with_an_unsearched_id_is_still_refused(fake_model, new_run):
    r, ts, store = new_run()
    ask, _ = fake_model([tool_calls(("set_plan", {"steps": PLAN})),
                         tool_calls(("get_weather", WEATHER), ("search_hotels", HOTELS),
                                    ("book_hotel", dict(BOOK, hotel_id="BJ-001"))), WORDS])
    loop.run(r, ask, ts)
    assert results(r)[-1]["blocked_by"] == "provenance" and store.count() == 0


def test_an_eager_model_finishes_in_three_model_calls(fake_model, new_run):
    r, ts, store = new_run()
    ask, endpoint = fake_model([LOOKUPS, tool_calls(("book_hotel", BOOK)), text("已订好：古城墙酒店 Suite 两晚。")])
    loop.run(r, ask, ts)
    assert (r.status, r.reason, len(endpoint.requests)) == ("suspended", "awaiting_confirmation", 2)
    runs.add_user(r, "确认")
    loop.run(r, ask, ts)
    assert (r.status, store.count(), len(endpoint.requests)) == ("done", 1, 3)
    assert endpoint.requests[-1].get("tool_choice") == "auto"          # asked for its answer, not forced to act


def test_a_blocked_write_beside_a_failed_read_asks_the_model_again(fake_model, new_run):
    r, ts, store = new_run()
    ask, endpoint = fake_model([tool_calls(("set_plan", {"steps": PLAN}), ("get_weather", WEATHER),
                                           ("search_hotels", HOTELS)),
                                tool_calls(("book_hotel", BOOK), ("get_weather", {"city": "火星", "date": "2026-10-01"})),
                                WORDS])
    loop.run(r, ask, ts)
    assert (r.status, r.reason, len(endpoint.requests)) == ("suspended", "awaiting_confirmation", 3)

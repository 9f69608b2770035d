"""A confirmation stands until a write uses it up or the user says something else; repeats inside
one turn are duplicates, not spins; a write decided with the outcomes of the reads before it in
the same turn; an eager model's blocked write is shown to the user at once. Scripted models
through the real openai client; the assertions read states, the store and the audit file."""
import json

from handloop import audit
from handloop import loop
from handloop import runs
from conftest import BOOK, PLAN, text, tool_calls

WEATHER = {"city": "西安", "date": "2026-10-01"}
HOTELS = {"city": "西安", "check_in": "2026-10-01", "nights": 2}
LOOKUPS = tool_calls(("set_plan", {"steps": PLAN}), ("get_weather", WEATHER), ("search_hotels", HOTELS))
WORDS = text("10 月 1 日有雨。建议预订古城墙酒店（XA-001）Suite，2026-10-01 入住 2 晚，共 ¥1760，请确认。")


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


def test_a_model_that_corrects_itself_keeps_the_users_confirmation(fake_model, new_run):
    other = dict(BOOK, hotel_id="XA-003")
    r, store, _ = confirmed_then(fake_model, new_run, [LOOKUPS, WORDS],
                                 [tool_calls(("book_hotel", other)), tool_calls(("book_hotel", BOOK)), text("已订好。")])
    assert (r.status, store.count()) == ("done", 1)
    assert r.memory.writes[0]["args"]["hotel_id"] == "XA-001"
    blocked = results(r)[-2]
    assert blocked["blocked_by"] == "unconfirmed_write" and "XA-001" in blocked["error"] + json.dumps(blocked["confirmed"])


def test_another_room_of_the_same_hotel_then_the_confirmed_one(fake_model, new_run):
    r, store, _ = confirmed_then(fake_model, new_run, [LOOKUPS, WORDS],
                                 [tool_calls(("book_hotel", dict(BOOK, room_type="Standard"))),
                                  tool_calls(("book_hotel", BOOK)), text("已订好。")])
    assert (r.status, store.count(), r.memory.writes[0]["args"]["room_type"]) == ("done", 1, "Suite")


def test_an_early_booking_confirmed_is_made_as_shown_whatever_the_model_would_send(fake_model, new_run):
    """The confirmed blocked call is the loop's to make: a model that would have sent another hotel
    next books nothing unconfirmed; that other booking is put to the user as a new proposal."""
    r, store, _ = confirmed_then(fake_model, new_run, [LOOKUPS, tool_calls(("book_hotel", BOOK))],
                                 [tool_calls(("book_hotel", dict(BOOK, hotel_id="XA-003"))), text("已订好。")])
    assert (store.count(), r.memory.writes[0]["args"]) == (1, BOOK)
    assert (r.status, r.reason, r.memory.proposal["hotel_id"]) == ("suspended", "awaiting_confirmation", "XA-003")


def test_insisting_on_the_other_booking_puts_it_to_the_user_exactly(fake_model, new_run):
    other = tool_calls(("book_hotel", dict(BOOK, hotel_id="XA-003")))
    r, store, _ = confirmed_then(fake_model, new_run, [LOOKUPS, WORDS], [other, other, other, text("已订好。")])
    assert (r.status, r.reason, store.count()) == ("suspended", "awaiting_confirmation", 0)
    assert r.memory.proposal["hotel_id"] == "XA-003" and r.memory.proposal["why"] and not r.memory.confirmed
    runs.add_user(r, "确认")
    r.go_on()
    assert (r.status, store.count(), r.memory.writes[0]["args"]["hotel_id"]) == ("done", 1, "XA-003")


def test_proposing_the_other_booking_in_words_asks_again(fake_model, new_run):
    r, store, _ = confirmed_then(fake_model, new_run, [LOOKUPS, WORDS],
                                 [tool_calls(("book_hotel", dict(BOOK, hotel_id="XA-003"))),
                                  text("抱歉，曲江国际酒店（XA-003）Suite 更合适，共 ¥1920，请再确认。")])
    assert (r.status, r.reason, store.count()) == ("suspended", "awaiting_confirmation", 0)
    assert not r.memory.confirmed and "XA-003" in r.memory.offer


def test_restating_the_confirmed_booking_in_words_keeps_the_confirmation(fake_model, new_run):
    r, store, _ = confirmed_then(fake_model, new_run, [LOOKUPS, WORDS],
                                 [tool_calls(("book_hotel", dict(BOOK, hotel_id="XA-003"))),
                                  text("好的，按你确认的古城墙酒店（XA-001）Suite 预订。")])
    assert (r.status, r.reason, store.count()) == ("suspended", "confirmed_no_write", 0) and r.memory.confirmed


def test_a_differing_write_sent_once_runs_nothing_and_leaves_the_confirmation_standing(fake_model, new_run):
    """What docs/confirmation.md says of a write that differs: not run, not yet a proposal; the model answering in
    words (naming nothing else) ends the run confirmed_no_write, the user's confirmation still in force, and the
    user's next confirm reply gets the write they confirmed, not the other one."""
    other = tool_calls(("book_hotel", dict(BOOK, hotel_id="XA-003")))
    r, store, _ = confirmed_then(fake_model, new_run, [LOOKUPS, WORDS],
                                 [other, text("已订好。"), text("已订好。"), tool_calls(("book_hotel", BOOK)),
                                  text("已订好。")])
    assert (r.status, r.reason, store.count()) == ("suspended", "confirmed_no_write", 0)
    assert r.memory.confirmed and r.memory.proposal is None and "XA-001" in r.memory.offer
    runs.add_user(r, "确认")
    r.go_on()
    assert (r.status, store.count(), r.memory.writes[0]["args"]["hotel_id"]) == ("done", 1, "XA-001")


def test_the_same_read_many_times_in_one_turn_is_answered_not_a_spin(fake_model, new_run):
    r, ts, store = new_run()
    same = [("get_weather", WEATHER, f"w{i}") for i in range(6)]
    ask, _ = fake_model([tool_calls(("set_plan", {"steps": PLAN}), *same, ("search_hotels", HOTELS)), WORDS])
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
    assert booked["blocked_by"] == "unconfirmed_write" and booked["proposal"]["total"] == 1760
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

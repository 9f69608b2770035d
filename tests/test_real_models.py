"""The main job with models that behave like real ones (tests/policies.py), through the CLI in
real processes, the real `openai` client and the loopback endpoint: suspend, one 「确认」, exactly
one booking, the audit file loadable and paired, and `--check --strict` passes.

A model that proposes in words is asked for the call (a forced tool_choice); behind a server that
enforces it (policies.Obeys) the call is held and shown, and one 「确认」 books it; behind a server
that ignores it the run waits for the user's reply, a 「确认」 then approves nothing, and the model's
next booking is held for a confirmation of its own.

Assertions are on states, bookings and audit contents, never on a model's wording or on how
many turns it took.
"""
import os

import pytest

from handloop import audit
import policies
from conftest import BOOK, read_audit
from handloop import texts, tools

pytestmark = pytest.mark.slow


def state(tmp_path, run_id="r"):
    data = read_audit(tmp_path / "audit", run_id)
    audit.load(audit.path_for(str(tmp_path / "audit"), run_id))        # loadable: structure and pairing
    return data["status"], data["reason"], data


def bookings(tmp_path):
    path = tmp_path / "audit" / "bookings.db"
    return tools.BookingStore(path).count() if os.path.exists(path) else 0


def held(data):
    """The held calls of the run's proposals, in order: (tool, args, state)."""
    return [(c["tool"], c["args"], c["state"]) for p in data["memory"]["proposals"] for c in p["calls"]]


def checked(run):
    out = run("--check", "r", "--strict")
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("policy", [policies.Obeys(policies.words_question), policies.Obeys(policies.words_statement),
                                    policies.eager, policies.Obeys(policies.CutOff())])
def test_one_confirmation_books_once(cli, tmp_path, policy):
    run = cli(policy)
    first = run("--run-id", "r")
    assert first.returncode == 0, first.stderr
    status, reason, data = state(tmp_path)
    assert (status, reason, bookings(tmp_path)) == ("suspended", "awaiting_confirmation", 0)
    assert held(data) == [("book_hotel", BOOK, "proposed")] and data["memory"]["proposal"]["args"] == BOOK
    assert "--confirm r" in first.stdout
    done = run("--confirm", "r")
    assert done.returncode == 0, done.stderr
    status, reason, data = state(tmp_path)
    assert (status, bookings(tmp_path)) == ("done", 1)
    booking = data["memory"]["booking"]
    assert (booking["hotel_id"], booking["room_type"], booking["check_in"], booking["nights"]) == \
        ("XA-001", "Suite", "2026-10-01", 2)
    assert held(data) == [("book_hotel", BOOK, "executed")]
    checked(run)
    again = run("--confirm", "r")
    assert again.returncode == 2 and bookings(tmp_path) == 1


def test_a_model_that_proposes_in_words_finishes_in_four_model_calls(cli, tmp_path):
    server = policies.Server(policies.Obeys(policies.words_question))
    run = cli(server)
    assert run("--run-id", "r").returncode == 0 and run("--confirm", "r").returncode == 0
    status, _, data = state(tmp_path)
    assert status == "done" and bookings(tmp_path) == 1
    assert len(server.requests) <= 4        # plan + reads, proposal in words, the booking's call, final answer


def test_a_confirm_to_words_behind_a_server_that_ignores_forcing_approves_nothing(cli, tmp_path):
    """The forced call never comes: the run waits for the user's reply with nothing held; the user's 「确认」 then
    is an ordinary reply, and the booking the model calls next is held and shown, for a confirmation of its own."""
    run = cli(policies.words_question)
    assert run("--run-id", "r").returncode == 0
    status, reason, data = state(tmp_path)
    assert (status, reason, bookings(tmp_path), held(data)) == ("suspended", "awaiting_reply", 0, [])
    out = run("--confirm", "r")
    assert out.returncode == 0, out.stderr
    status, reason, data = state(tmp_path)
    assert (status, reason, bookings(tmp_path)) == ("suspended", "awaiting_confirmation", 0)
    assert held(data) == [("book_hotel", BOOK, "proposed")] and "--confirm r" in out.stdout
    assert run("--confirm", "r").returncode == 0
    status, _, data = state(tmp_path)
    assert (status, bookings(tmp_path), held(data)) == ("done", 1, [("book_hotel", BOOK, "executed")])
    checked(run)


def test_a_cut_off_reply_is_asked_for_again_never_taken_as_the_answer(cli, tmp_path):
    run = cli(policies.Obeys(policies.CutOff()))
    assert run("--run-id", "r").returncode == 0
    _, reason, data = state(tmp_path)
    assert any("length: asked again" in note for t in data["trace"] for note in t["notes"])
    assert len(data["answer"]) > 12          # the whole proposal in words, not the cut one
    assert (reason, held(data)) == ("awaiting_confirmation", [("book_hotel", BOOK, "proposed")])


def test_a_booking_other_than_the_one_proposed_in_words_is_shown_as_called_and_runs_as_shown(cli, tmp_path):
    """The words propose XA-001, the call books XA-003: the user is shown the call (XA-003), and the
    confirmation runs exactly that call, once."""
    run = cli(policies.books_different)
    first = run("--run-id", "r")
    assert first.returncode == 0, first.stderr
    status, reason, data = state(tmp_path)
    assert (status, reason, bookings(tmp_path)) == ("suspended", "awaiting_confirmation", 0)
    assert "XA-001" in data["answer"] and "XA-003" in first.stdout
    assert held(data) == [("book_hotel", dict(BOOK, hotel_id="XA-003"), "proposed")]
    assert data["memory"]["proposal"]["args"]["hotel_id"] == "XA-003" and not data["memory"]["confirmed"]
    assert run("--confirm", "r").returncode == 0
    status, _, data = state(tmp_path)
    assert (status, bookings(tmp_path), data["memory"]["booking"]["hotel_id"]) == ("done", 1, "XA-003")
    assert held(data) == [("book_hotel", dict(BOOK, hotel_id="XA-003"), "executed")]
    checked(run)


def test_text_instead_of_the_booking_after_a_confirmation_keeps_the_run_waiting(cli, tmp_path):
    """Behind a server that ignores forcing, the user's 「确认」 to words is an ordinary reply; the model's
    「好的，我这就为您预订。」 books nothing and ends nothing; its booking, when it comes, is held."""
    run = cli(policies.text_after_confirm)
    assert run("--run-id", "r").returncode == 0
    out = run("--confirm", "r")
    assert out.returncode == 0, out.stderr
    status, reason, data = state(tmp_path)
    assert (status, reason, bookings(tmp_path), held(data)) == ("suspended", "awaiting_reply", 0, [])
    assert not data["memory"]["confirmed"]
    assert run("--confirm", "r").returncode == 0
    status, reason, data = state(tmp_path)
    assert (status, reason, bookings(tmp_path)) == ("suspended", "awaiting_confirmation", 0)
    assert held(data) == [("book_hotel", BOOK, "proposed")]
    assert run("--confirm", "r").returncode == 0
    assert state(tmp_path)[0] == "done" and bookings(tmp_path) == 1
    checked(run)


def told_written(data):
    """How many times the loop told the model that it wrote a call into its text."""
    told = texts.of("zh")("nudge.written_call")
    return sum(1 for m in data["messages"] if m["role"] == "user" and m.get("name") == "loop"
               and m["content"].startswith(told))


def test_tool_calls_written_as_text_are_not_run_and_the_model_is_told_once(cli, tmp_path):
    """The plan written into the text, then the booking asked for (forced) written into a fenced block:
    neither runs, the model is told once; the user's 「确认」 approves nothing, the real call is held."""
    run = cli(policies.text_calls)
    assert run("--run-id", "r").returncode == 0
    status, reason, data = state(tmp_path)
    assert (status, reason, bookings(tmp_path)) == ("suspended", "awaiting_reply", 0) and data["memory"]["plan"]
    assert told_written(data) == 1 and held(data) == [] and data["memory"]["confirmed"] is False
    assert not [m for m in data["messages"] if m["role"] == "tool" and "booking_id" in m["content"]]
    assert run("--confirm", "r").returncode == 0
    status, reason, data = state(tmp_path)
    assert (status, reason, bookings(tmp_path)) == ("suspended", "awaiting_confirmation", 0)
    assert held(data) == [("book_hotel", BOOK, "proposed")]
    assert run("--confirm", "r").returncode == 0
    status, _, data = state(tmp_path)
    assert (status, bookings(tmp_path)) == ("done", 1) and told_written(data) == 1
    checked(run)


def test_a_model_that_does_nothing_for_the_task_never_ends_done(cli, tmp_path):
    run = cli(policies.small_model)
    out = run("--run-id", "r")
    assert out.returncode == 0, out.stderr
    status, reason, data = state(tmp_path)
    assert (status, reason, bookings(tmp_path)) == ("suspended", "awaiting_reply", 0)
    assert "完成" not in out.stdout and "等待你答复" in out.stdout
    assert any(m.get("name") == "loop" for m in data["messages"]) and not data["memory"]["confirmed"]
    check = run("--check", "r", "--strict")
    assert check.returncode == 1                           # nothing to judge is not a pass


def test_the_same_blocked_call_again_and_again_is_stopped_as_a_spin(cli, tmp_path):
    run = cli(policies.repeats_blocked)
    out = run("--run-id", "r")
    status, reason, data = state(tmp_path)
    assert (out.returncode, status, reason) == (1, "stopped", "spin")
    assert data["turn"] < 12


@pytest.mark.parametrize("point", ["after_tool", "after_commit", "mid_audit:2", "before_ask:1", "after_reply:1"])
def test_killed_between_the_confirmation_and_the_loops_own_booking_books_once(cli, tmp_path, point):
    """An eager model's blocked booking, confirmed: the loop books it itself; killed anywhere from
    there to the answer, a resume books nothing more."""
    run = cli(policies.eager)
    assert run("--run-id", "r").returncode == 0 and bookings(tmp_path) == 0
    killed = run("--confirm", "r", AGENT_FAULT=point)
    assert killed.returncode == -9 and bookings(tmp_path) <= 1
    for _ in range(3):
        status = state(tmp_path)[0]
        if status == "done":
            break
        assert run("--resume" if status == "running" else "--confirm", "r").returncode == 0
    status, _, data = state(tmp_path)
    assert (status, bookings(tmp_path)) == ("done", 1)
    assert [m for m in data["messages"] if m["role"] == "assistant" and m.get("name") == "loop"]
    checked(run)

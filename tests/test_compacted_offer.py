"""A run compacted while a proposal in words is on record: the memory block that compaction
rewrites shows the offer (cut to its limit), and the run goes on to the confirmed booking.
Through the command line, against a scripted model that proposes in words after three tool rounds
and, once the user confirmed, checks the weather again before it books; a small compaction budget
(the run's policy) makes each turn compact that can (one with more tool rounds than compaction
leaves whole), the one after that second look among them, the offer still on record. The
assertions read the audit file and the booking store."""
import json
import os

import pytest

import policies
from conftest import read_audit, run_cli
from handloop import tools
from handloop.llm.endpoint import Endpoint


def rechecks_then_books(request):
    """words_statement, but after 「确认」 it looks at the weather once more, then books."""
    talk = policies.Talk(request)
    if talk.final or talk.reply is None and not (len(talk.users) > 1 and talk.users[-1] == "确认"):
        return policies.words_statement(request)
    if policies.finished(talk):
        return policies.finished(talk)
    replied = max(i for i, m in enumerate(talk.messages) if m["role"] == "user" and m.get("name") != "loop")
    if any(m["role"] == "tool" for m in talk.messages[replied:]):
        return policies.calls(("book_hotel", talk.choice()[0]))
    return policies.calls(("get_weather", policies.WEATHER))


@pytest.fixture
def offered(tmp_path):
    """A run suspended on a proposal in words, under a compaction budget of 100 tokens; (cwd, env, offer)."""
    endpoint = Endpoint(rechecks_then_books)
    (tmp_path / "p.json").write_text(json.dumps({"compact_budget": 100}))
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": endpoint.url}
    first = run_cli("--run-id", "w", "--policy", "p.json", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    snap = read_audit(tmp_path / "audit", "w")
    assert (snap["status"], snap["reason"]) == ("suspended", "awaiting_confirmation")
    assert snap["memory"]["offer"] and snap["memory"]["proposal"] is None      # a proposal in words
    yield tmp_path, env, snap["memory"]["offer"], endpoint
    endpoint.close()


def bookings(cwd):
    path = os.path.join(cwd, "audit", "bookings.db")
    return tools.BookingStore(path).count() if os.path.exists(path) else 0


def test_an_offer_in_words_on_record_survives_a_compaction(offered):
    cwd, env, offer, endpoint = offered
    confirmed = run_cli("--confirm", "w", cwd=cwd, env=env)
    snap = read_audit(cwd / "audit", "w")
    assert confirmed.returncode == 0 and "Traceback" not in confirmed.stderr, confirmed.stderr
    assert (snap["status"], bookings(cwd)) == ("done", 1)
    systems = [request["messages"][0]["content"] for request in endpoint.requests]
    assert any(offer[:20] in s for s in systems)        # a compaction's memory block showed the offer


def test_a_run_stopped_before_that_compaction_resumes_to_the_end(offered):
    """Killed after the user's 「确认」 is recorded (status running), the run is resumed: a turn of the
    resume compacts with the offer on record, and the run finishes."""
    cwd, env, _, _ = offered
    run_cli("--confirm", "w", cwd=cwd, env={**env, "AGENT_FAULT": "before_ask"})
    snap = read_audit(cwd / "audit", "w")
    assert snap["status"] == "running" and snap["messages"][-1]["content"] == "确认"
    resumed = run_cli("--resume", "w", cwd=cwd, env=env)
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr
    assert (read_audit(cwd / "audit", "w")["status"], bookings(cwd)) == ("done", 1)

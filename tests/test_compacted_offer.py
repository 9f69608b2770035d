"""A run compacted while a held call waits for the user: the memory block that compaction rewrites shows the held
call, every argument, and after the user's confirmation the loop books exactly it, once (a resume included).
Through the command line, against a scripted model that proposes in words after three tool rounds and, asked for
the booking (a forced tool_choice), books and looks at the weather once more in the same turn, a look that fails,
so the model is asked again while the booking is held; a small compaction budget (the run's policy) makes each turn
compact that can (one with more tool rounds than compaction leaves whole), that one among them. The assertions read
the audit file, the requests and the booking store."""
import json
import os

import pytest

import policies
from conftest import read_audit, run_cli
from handloop import tools
from handloop.confirmation import shown
from handloop.llm.endpoint import Endpoint

RECHECK = {"city": "火星", "date": "2026-10-01"}           # a look at the weather that fails


def rechecks_while_held(request):
    """words_statement, but asked for the booking it books and looks at the weather again in the same turn."""
    talk = policies.Talk(request)
    choice = request.get("tool_choice")
    forced = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    if forced == "book_hotel" and not any(n == "book_hotel" for n, _, _ in talk.results):
        return policies.calls(("book_hotel", talk.choice()[0]), ("get_weather", RECHECK))
    return policies.words_statement(request)


@pytest.fixture
def offered(tmp_path):
    """A run suspended on a held booking, under a compaction budget of 100 tokens; (cwd, env, held, endpoint)."""
    endpoint = Endpoint(rechecks_while_held)
    (tmp_path / "p.json").write_text(json.dumps({"compact_budget": 100}))
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": endpoint.url}
    first = run_cli("--run-id", "w", "--policy", "p.json", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    snap = read_audit(tmp_path / "audit", "w")
    assert (snap["status"], snap["reason"]) == ("suspended", "awaiting_confirmation")
    held = snap["memory"]["proposal"]                      # the call, not the words, is what waits
    assert held["tool"] == "book_hotel" and held["state"] == "proposed" and bookings(tmp_path) == 0
    yield tmp_path, env, held, endpoint
    endpoint.close()


def bookings(cwd):
    path = os.path.join(cwd, "audit", "bookings.db")
    return tools.BookingStore(path).count() if os.path.exists(path) else 0


def test_a_held_call_on_record_survives_a_compaction(offered):
    cwd, env, held, endpoint = offered
    assert read_audit(cwd / "audit", "w")["epoch"]["start"] > 1            # the run was compacted
    systems = [request["messages"][0]["content"] for request in endpoint.requests]
    assert any(shown.one_line(held) in s for s in systems)     # a compaction's memory block showed the held call
    confirmed = run_cli("--confirm", "w", cwd=cwd, env=env)
    snap = read_audit(cwd / "audit", "w")
    assert confirmed.returncode == 0 and "Traceback" not in confirmed.stderr, confirmed.stderr
    assert (snap["status"], bookings(cwd)) == ("done", 1)
    assert snap["memory"]["writes"][0]["call"] == held["args"]
    assert [p["state"] for p in snap["memory"]["proposals"]] == ["executed"]


def test_a_run_stopped_before_that_compaction_resumes_to_the_end(offered):
    """Killed after the user's 「确认」 is recorded (status running), before the model is asked, the run is resumed:
    the held call is booked once, and the run finishes."""
    cwd, env, held, _ = offered
    run_cli("--confirm", "w", cwd=cwd, env={**env, "AGENT_FAULT": "before_ask"})
    snap = read_audit(cwd / "audit", "w")
    users = [m for m in snap["messages"] if m["role"] == "user" and m.get("name") != "loop"]
    assert snap["status"] == "running" and users[-1]["content"] == "确认"
    resumed = run_cli("--resume", "w", cwd=cwd, env=env)
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr
    snap = read_audit(cwd / "audit", "w")
    assert (snap["status"], bookings(cwd)) == ("done", 1)
    assert [w["call"] for w in snap["memory"]["writes"]] == [held["args"]]

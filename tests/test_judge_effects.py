"""The judge reads a write's success from the tool's declaration, not from words in its result (issue 37): a
declared `cancel_appointment` answering {"status": "cancelled"} took effect, in the audit file of a run and in a
plain transcript judged with --agent FILE; so a confirmed cancel passes every check and an unconfirmed one fails
write_after_confirmation (it once read as a failure: three checks pending, "no call has taken effect"). The
clinic front desk of tests/front_desk.py through the CLI and its scripted model; the assertions read verdicts."""
import json
import os

import pytest

from conftest import ROOT, read_audit, run_agent
from handloop.judge.readings import effect_words, read_result

DESK = os.path.join(ROOT, "tests", "front_desk.py")
ENV = {"DESK_ANSWER": "cancel"}


def verdicts(tmp_path, *args):
    out = run_agent("--check", "--json", *args, cwd=tmp_path)
    files = json.loads(out.stdout)["files"]
    return out.returncode, {c["id"]: c["verdict"] for c in files[0]["checks"]}


@pytest.fixture
def cancelled(tmp_path):
    """A run that looked the appointment up, proposed the cancel, was confirmed and cancelled: its audit file."""
    assert run_agent("--agent", DESK, "--run-id", "c", cwd=tmp_path, env=ENV).returncode == 0
    done = run_agent("--confirm", "c", cwd=tmp_path, env=ENV)
    assert done.returncode == 0, done.stdout + done.stderr
    snap = read_audit(tmp_path / "audit", "c")
    results = [json.loads(m["content"]) for m in snap["messages"] if m["role"] == "tool"]
    assert snap["status"] == "done" and {"appointment_id": "A-7", "status": "cancelled"} in results
    assert [(p["state"], [c["tool"] for c in p["calls"]]) for p in snap["memory"]["proposals"]] == \
        [("executed", ["cancel_appointment"])]                  # held, approved, run once
    return snap


def unconfirmed(messages):
    """The same conversation without the offer in words and the user's confirmation: the cancel ran unasked."""
    assert sum(m["role"] == "user" and m["content"] == "yes, book it" for m in messages) == 1
    return [m for m in messages if not (m["role"] == "assistant" and m.get("content") and "?" in m["content"]) and
            not (m["role"] == "user" and m["content"] == "yes, book it")]


def test_a_confirmed_cancel_read_from_its_audit_file_passes(tmp_path, cancelled):
    code, found = verdicts(tmp_path, "--strict", "c")
    assert code == 0 and set(found.values()) == {"pass"} and \
        found["write_after_confirmation"] == "pass", found


def test_an_unconfirmed_cancel_in_an_audit_file_fails(tmp_path, cancelled):
    snap = dict(cancelled, messages=unconfirmed(cancelled["messages"]), run_id="u")
    (tmp_path / "audit" / "run-u.json").write_text(json.dumps(snap), encoding="utf-8")
    code, found = verdicts(tmp_path, "audit/run-u.json")
    assert code == 1 and found["write_after_confirmation"] == "fail", found


def test_a_plain_transcript_judged_by_the_agents_declaration_reads_the_cancel_as_done(tmp_path, cancelled):
    (tmp_path / "plain.json").write_text(json.dumps(cancelled["messages"]), encoding="utf-8")
    (tmp_path / "unasked.json").write_text(json.dumps(unconfirmed(cancelled["messages"])), encoding="utf-8")
    code, found = verdicts(tmp_path, "plain.json", "--agent", DESK)
    assert code == 0 and found["write_after_confirmation"] == "pass" and "pending" not in found.values(), found
    code, found = verdicts(tmp_path, "unasked.json", "--agent", DESK)
    assert code == 1 and found["write_after_confirmation"] == "fail", found


def test_a_status_is_a_success_only_for_the_tool_whose_verb_it_is():
    assert effect_words("cancel_appointment") >= {"cancelled", "canceled"}
    assert read_result('{"status": "cancelled"}', effect_words("cancel_appointment"))[1] is False
    assert read_result('{"status": "cancelled"}', effect_words("book_appointment"))[1] is True   # not its effect
    assert read_result('{"status": "failed"}', effect_words("cancel_appointment"))[1] is True
    assert read_result('{"error": "no such appointment"}', effect_words("cancel_appointment"))[1] is True
    assert effect_words("deny_request") == {"denied"} and effect_words("reject_claim") == {"rejected"}

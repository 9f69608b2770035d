"""Every refusal explains itself (issue 37, finding 3): an answer that looks like a proposal (it names a write's
effect values, or asks to do it) and is not taken as one says why, on the printout and in the trace (the
answer's trace record carries `not_offer`, and its note in the agent's language, which the HTML view shows):
which argument had no single value and the values named, or no value of the reads named, or no value a read
produced. A clinic front desk (tests/front_desk.py) through the CLI, the real openai client and its own scripted
model; the assertions read states, audit records and our own catalogue's lines."""
import json
import os
import re

import pytest

from conftest import ROOT, read_audit, run_agent, text
from handloop import audit, loop, texts
from test_confirmation_stands import LOOKUPS
from handloop.memory import why_said

DESK = os.path.join(ROOT, "tests", "front_desk.py")


def desk(tmp_path, answer, source="list", lang="en", run_id="d"):
    out = run_agent("--agent", DESK, "--run-id", run_id, cwd=tmp_path,
                    env={"DESK_ANSWER": answer, "DESK_SOURCE": source, "DESK_LANG": lang})
    assert out.returncode == 0, out.stdout + out.stderr
    snap = read_audit(tmp_path / "audit", run_id)
    return out, snap, [r["not_offer"] for r in snap["trace"] if "not_offer" in r]


@pytest.mark.parametrize("answer, source, named, values, line", [
    ("two", "list", ["S-0900", "S-1030"], ["S-0900", "S-1030"], "cli.not_offer.many"),
    ("none", "list", [], ["S-0900", "S-1030"], "cli.not_offer.none"),
    ("one", "get", [], [], "cli.not_offer.unread"),
])
def test_an_answer_not_taken_as_a_proposal_says_which_argument_and_why(tmp_path, answer, source, named, values, line):
    out, snap, why = desk(tmp_path, answer, source)
    assert (snap["status"], snap["reason"]) == ("suspended", "awaiting_reply")
    assert snap["memory"]["proposals"] == [] or all(p["state"] != "proposed" for p in snap["memory"]["proposals"])
    assert len(why) == 1
    assert (why[0]["tool"], why[0]["arg"], why[0]["named"], why[0]["values"]) == \
        ("book_appointment", "slot_id", named, values)
    assert why[0]["from"] == (["get_slot"] if source == "get" else ["list_slots"])
    en = texts.of("en")
    said = why_said(why[0], en)
    assert said.startswith(en(line, tool="book_appointment", arg="slot_id", named="", values="", where="")[:30])
    assert said in out.stdout                                        # the printout says it
    assert said in [n for r in snap["trace"] for n in r["notes"]]    # and the trace, as the run's note
    for value in named or values:
        assert value in said
    if source == "get":
        assert "get_slot" in said


def test_a_chinese_agent_says_why_in_chinese(tmp_path):
    out, snap, why = desk(tmp_path, "two", lang="zh")
    assert snap["reason"] == "awaiting_reply" and why and why[0]["named"] == ["S-0900", "S-1030"]
    zh = texts.of("zh")
    said = why_said(why[0], zh)
    assert said.startswith(zh("cli.not_offer.many", tool="book_appointment", arg="slot_id", named="")[:10])
    assert said in out.stdout and "S-0900" in said and "没有唯一的值" in said


def test_an_answer_taken_as_a_proposal_carries_no_refusal(tmp_path):
    out, snap, why = desk(tmp_path, "one")
    assert (snap["status"], snap["reason"]) == ("suspended", "awaiting_confirmation")
    assert why == [] and texts.of("en")("cli.not_offer.many", tool="", arg="", named="")[:20] not in out.stdout


def test_the_trace_page_shows_why_the_answer_was_no_proposal(tmp_path):
    _, snap, why = desk(tmp_path, "two")
    page = run_agent("--trace", "d", cwd=tmp_path)
    assert page.returncode == 0, page.stderr
    html = next(tmp_path.glob("audit/*.html")).read_text(encoding="utf-8")
    assert "slot_id" in html and "S-1030" in html and "single value" in html


def test_a_write_refused_by_one_of_two_sources_on_its_argument_says_what_to_do(tmp_path):
    """Two sources on slot_id must both hold (the listing's records and get_slot, never called): the write is refused
    by provenance, and the refusal names the source still missing, never an empty list of what is available."""
    out = run_agent("--agent", DESK, "--run-id", "b", cwd=tmp_path, env={"DESK_ANSWER": "book", "DESK_SOURCE": "both"})
    assert "Traceback" not in out.stderr          # the scripted model insists: the run stops as a spin, on record
    snap = read_audit(tmp_path / "audit", "b")
    refusals = [json.loads(m["content"]) for m in snap["messages"] if m["role"] == "tool" and "blocked_by" in m["content"]]
    assert refusals and refusals[0]["blocked_by"] == "provenance" and snap["memory"]["writes"] == []
    said = refusals[0]["error"]
    assert "get_slot" in said and "S-0900" in said
    assert not re.search(r"available:\s*[)\]]*\s*$", said)



def test_the_xian_agent_says_which_room_type_had_no_single_value(fake_model, new_run):
    """A choice effect, in Chinese: one hotel and two of its room types named is no offer; the record says
    room_type, the two named, and its note says so in the agent's language."""
    r, ts, store = new_run()
    ask, _ = fake_model([LOOKUPS, text("古城墙酒店（XA-001）有 Standard 和 Suite 两种房型，请问要哪种？")])
    loop.run(r, ask, ts)
    assert (r.status, r.reason, store.count()) == ("suspended", "awaiting_reply", 0)
    why = r.trace[-1]["not_offer"]
    assert (why["tool"], why["arg"], why["named"]) == ("book_hotel", "room_type", ["Standard", "Suite"])
    assert why_said(why, texts.of("zh")) in r.trace[-1]["notes"] and "没有唯一的值" in r.trace[-1]["notes"][-1]
    assert audit.load(r.path)["trace"][-1]["not_offer"] == why                 # the audit file keeps it


@pytest.mark.parametrize("agent", ["xian", "cancel"])
def test_an_answer_reporting_the_write_made_is_no_refusal(tmp_path, agent):
    """After the write, the final answer names what was written (the Xi'an booking's hotel and room, the
    cancelled appointment): it reports, it proposes nothing, and nothing says it was not taken as a proposal."""
    args, env = ([], {}) if agent == "xian" else (["--agent", DESK], {"DESK_ANSWER": "cancel"})
    assert run_agent(*args, "--run-id", "w", cwd=tmp_path, env=env).returncode == 0
    done = run_agent("--confirm", "w", cwd=tmp_path, env=env)
    snap = read_audit(tmp_path / "audit", "w")
    assert done.returncode == 0 and snap["status"] == "done" and snap["memory"]["writes"]
    assert [r for r in snap["trace"] if "not_offer" in r] == []
    said = {texts.of(lang).table[key].split("{")[0] for lang in ("en", "zh")
            for key in ("cli.not_offer.many", "cli.not_offer.none", "cli.not_offer.unread")}
    assert said and all(said) and not [s for s in said if s in done.stdout]

"""Every refusal explains itself: a write refused by a guard says what the model can act on (the source still
missing, never an empty list of what is available). A clinic front desk (tests/front_desk.py) through the CLI, the
real openai client and its own scripted model; the assertions read the audit records.
(An answer in words is never a proposal, and so never a refused one: tests/confirmation/ holds what words do.)"""
import json
import os
import re

from conftest import ROOT, read_audit, run_agent

DESK = os.path.join(ROOT, "tests", "front_desk.py")


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

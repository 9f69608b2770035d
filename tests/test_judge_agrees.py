"""The judge agrees with the guards on every audit file the test suite wrote (this test runs last: conftest.py
moves it to the end of the session; run alone, it judges the runs it makes itself).

For each run-*.json under the session's temporary folder, the guards are replayed over its messages (memory's
own fold, and guards.screen deciding each assistant message's calls against the memory of that moment). Then:
- when every call that took effect in the file was allowed by the replayed guards (a file the runtime wrote),
  --check fails no plan, no provenance and no write check;
- each write the replayed guards blocked (for want of a confirmation of exactly it, a plan, a source), made to
  take effect instead (its result replaced by a success, the conversation cut there), never passes that check.
"""
import glob
import json
import os

import pytest

from handloop import audit, guards, runs, toolset
from handloop.calls import Outcome
from handloop.cli import check as check_cli
from handloop.cli import session
from handloop.memory import LOOP_NAME, Memory, _as_object
from conftest import ROOT, run_agent

HELPDESK = os.path.join(ROOT, "tests", "helpdesk_mcp", "it_helpdesk.py")
CHECK_OF = {"unconfirmed_write": "write_after_confirmation", "plan_first": "plan_first", "plan_order": "no_skipped_step",
            "provenance": "provenance"}
_AGENTS = {}


def _agent(snap, folder):
    recorded = snap.get("agent") if isinstance(snap.get("agent"), dict) else None
    file = (recorded or {}).get("file")
    key = (file, os.stat(file).st_mtime_ns) if file and os.path.exists(file) else file or folder   # edited files too
    if key not in _AGENTS:
        _AGENTS[key] = session.agent_for(folder, None, recorded)
    return _AGENTS[key]


def replay(path):
    """{call id: (allowed, guard)} for every call of the file as the guards decide it, and whether each call that
    took effect in the file was allowed; None when the file cannot be replayed (not a loadable run of ours)."""
    try:
        snap = audit.load(path)
        agent = runs._recorded_agent(_agent(snap, os.path.dirname(path)), snap)    # its recorded confirm replies
        if (snap.get("agent") or {}).get("name", agent.name) != agent.name:     # an agent made in a test's process
            return None
        ts = toolset.ToolSet(snap["run_id"], mode=snap["mode"], schemas=snap["tools"], agent=agent,
                             visible=(snap.get("policy") or {}).get("tools"))
    except Exception:               # a corrupt file, a vanished agent file, a hostile record: not ours to judge
        return None
    try:
        return _decide(snap, ts, agent)
    finally:
        ts.close()


def _decide(snap, ts, agent):
    memory, decided, consistent = Memory(agent=agent).declare(ts.tools.values()), {}, True
    messages, i = snap["messages"], 0
    while i < len(messages):
        m = messages[i]
        if m["role"] == "user":
            if m.get("name") == LOOP_NAME:
                memory.absorb_nudge(m.get("content") or "")
            else:
                memory.absorb_user(m.get("content") or "", m.get("decision"))
        elif m["role"] == "assistant" and not m.get("tool_calls"):
            memory.absorb_answer((m.get("content") or "").strip())
        elif m["role"] == "assistant":
            calls = ts.prepare(m["tool_calls"])
            results = {}
            while i + 1 < len(messages) and messages[i + 1]["role"] == "tool":
                i += 1
                results[messages[i]["tool_call_id"]] = _as_object(messages[i].get("content"))
            outcomes = {}
            for allowed, blocked in guards.screen(calls, memory, None, ts.preview, outcomes):
                outcomes.update({c.id: Outcome(results.get(c.id, {})) for c in allowed}, **blocked)
                decided.update({c.id: (True, None) for c in allowed})
                decided.update({cid: (False, o.guard) for cid, o in blocked.items()})
            took = {cid for cid, r in results.items() if "error" not in r}
            consistent &= all(decided.get(cid, (False,))[0] for cid in took)
            memory.absorb_turn(calls, [results.get(c.id, {}) for c in calls])
        i += 1
    return snap, decided, consistent


def _verdicts(path):
    entry = check_cli.check_file(path)
    return {c["id"]: c["verdict"] for c in entry["checks"]}, entry


def _taking_effect(snap, call_id, target):
    """The conversation with the blocked call `call_id` taking effect (a success result), cut after its round."""
    out, cut = [], None
    for pos, m in enumerate(snap["messages"]):
        m = dict(m)
        if m["role"] == "tool" and m.get("tool_call_id") == call_id:
            m["content"] = json.dumps({"receipt": "as if it ran"})
            cut = pos
        if cut is not None and pos > cut and m["role"] != "tool":
            break
        out.append(m)
    target.write_text(json.dumps(dict(snap, messages=out, status="done"), ensure_ascii=False), encoding="utf-8")
    return str(target)


def _own_runs(tmp_path):
    """A few runs of both agents, so that the test has files to judge when run alone."""
    assert run_agent("--run-id", "x", cwd=tmp_path).returncode == 0
    assert run_agent("--confirm", "x", cwd=tmp_path).returncode == 0
    if pytest.importorskip("mcp"):
        for script in ("order", "swap", "bob"):
            assert run_agent("--agent", HELPDESK, "--run-id", script, cwd=tmp_path).returncode == 0
            run_agent("--confirm", script, cwd=tmp_path, env={"HELPDESK_SCRIPT": script})


def test_the_judge_agrees_with_the_guards_on_every_audit_file_the_suite_wrote(tmp_path, tmp_path_factory):
    _own_runs(tmp_path)
    paths = sorted(glob.glob(os.path.join(str(tmp_path_factory.getbasetemp()), "**", "run-*.json"), recursive=True))
    judged = mutated = 0
    disagreements = []
    for path in paths:
        replayed = replay(path)
        if replayed is None:
            continue
        snap, decided, consistent = replayed
        if consistent:
            verdicts, entry = _verdicts(path)
            judged += 1
            disagreements += [(path, cid, c["reason"]) for cid in CHECK_OF.values() for c in entry["checks"]
                              if c["id"] == cid and c["verdict"] == "fail"]
        for call_id, (allowed, guard) in decided.items():
            if allowed or guard not in CHECK_OF:
                continue
            verdicts, entry = _verdicts(_taking_effect(snap, call_id, tmp_path / f"m{mutated}.json"))
            mutated += 1
            if verdicts.get(CHECK_OF[guard]) == "pass":
                disagreements.append((path, call_id, f"blocked by {guard}, yet the judge passes it"))
    assert judged >= 4 and mutated >= 2, (judged, mutated)
    assert not disagreements, disagreements[:5]

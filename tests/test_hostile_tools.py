"""Hostile tools a user writes in an agent file, run by the command line (its own offline model
calls each tool in turn): whatever a tool raises or returns is a tool error the model reads, the run
ends in a recorded state, nothing that is not strict JSON reaches the model or the audit file, and
only the user's own Ctrl-C stops a run (exit 130, resumable)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from handloop import audit
from handloop.calls import Tool
from conftest import ROOT, read_audit, run_agent

HEAD = '''
import asyncio, json, os, sqlite3, sys, time
from handloop.agents import Agent
from handloop.calls import Tool, ToolError

OBJ = {"type": "object", "properties": {}}
'''

TAIL = '''
def respond(request):
    """Call each tool of TOOLS in turn since the user last spoke (one a turn), then answer."""
    messages = request.get("messages") or []
    last = max(i for i, m in enumerate(messages) if m["role"] == "user" and m.get("name") != "loop")
    answered = [m for m in messages[last:] if m["role"] == "tool"]
    if len(answered) < len(CALLS):
        name = CALLS[len(answered)]
        return {"content": None, "tool_calls": [{"id": f"call_{last}_{len(answered)}", "type": "function",
                                                 "function": {"name": name, "arguments": "{}"}}]}
    return {"content": "That is all I can do."}


CALLS = globals().get("CALLS") or [t.name for t in TOOLS]
AGENT = Agent("hostile", "You use the tools.", TOOLS, goal="Use every tool.", language="en", planning=False,
              offline=respond)
'''


def agent_file(tmp_path, body):
    path = tmp_path / "hostile.py"
    path.write_text(HEAD + body + TAIL, encoding="utf-8")
    return str(path)


def strict(path):
    """The audit file as strict JSON (NaN and Infinity refused, as --check reads it)."""
    def refuse(name):
        raise ValueError(f"{name} in the audit file")
    with open(path, encoding="utf-8") as f:
        return json.loads(f.read(), parse_constant=refuse)


def tool_contents(snap):
    return [json.loads(m["content"]) for m in snap["messages"] if m["role"] == "tool"]


def _clean(out):
    assert "Traceback" not in out.stderr and "Traceback" not in out.stdout, out.stderr


RAISING = {
    "base_exception": ("class Odd(BaseException):\n    pass\n\ndef odd():\n    raise Odd('beyond Exception')\n", "Odd"),
    "sys_exit": ("def odd():\n    sys.exit(0)\n", "SystemExit"),
    "keyboard_interrupt": ("def odd():\n    raise KeyboardInterrupt\n", "KeyboardInterrupt"),
    "generator_exit": ("def odd():\n    raise GeneratorExit\n", "GeneratorExit"),
    "str_raises": ("class Loud(Exception):\n    def __str__(self):\n        raise RuntimeError('no words')\n\n"
                   "def odd():\n    raise Loud()\n", "Loud"),
}


@pytest.mark.parametrize("how", ["inline", "thread", "async"])
@pytest.mark.parametrize("case", sorted(RAISING))
def test_whatever_a_tool_raises_is_a_tool_error_and_the_run_goes_on(tmp_path, case, how):
    body, kind = RAISING[case]
    if how == "async":
        body = body.replace("def odd():", "async def odd():\n    await asyncio.sleep(0)")
    body += ("def fine():\n    return {'ok': 'still here'}\n\n"
             f"TOOLS = [Tool('odd', 'd', OBJ, odd, inline={how == 'inline'}), Tool('fine', 'd', OBJ, fine)]\n")
    out = run_agent("--agent", agent_file(tmp_path, body), "--run-id", "h", cwd=tmp_path)
    _clean(out)
    assert out.returncode == 0, out.stderr
    snap = strict(tmp_path / "audit" / "run-h.json")
    assert snap["status"] == "done"
    odd, fine = tool_contents(snap)
    assert kind in odd["error"] and fine == {"ok": "still here"}


def test_an_async_tool_raising_keyboard_interrupt_leaves_the_event_loop_alive(tmp_path):
    body = ("async def odd():\n    raise KeyboardInterrupt\n\n"
            "async def exits():\n    sys.exit(3)\n\n"
            "async def fine():\n    await asyncio.sleep(0.01)\n    return {'ok': 1}\n\n"
            "TOOLS = [Tool('odd', 'd', OBJ, odd, timeout=2), Tool('exits', 'd', OBJ, exits, timeout=2),\n"
            "         Tool('fine', 'd', OBJ, fine, timeout=2)]\n"
            "CALLS = ['odd', 'fine', 'exits', 'fine']\n")
    out = run_agent("--agent", agent_file(tmp_path, body), "--run-id", "a", cwd=tmp_path)
    _clean(out)
    assert out.returncode == 0, out.stderr
    results = tool_contents(strict(tmp_path / "audit" / "run-a.json"))
    assert "KeyboardInterrupt" in results[0]["error"] and "SystemExit" in results[2]["error"]
    assert results[1] == results[3] == {"ok": 1}                   # no "did not return within 2 s"


UNENCODABLE = {
    "tuple_keys": "{(1, 2): 'pair'}",
    "self_reference": "_loop()",
    "huge_int": "{'n': 10 ** 5000}",
    "nan": "{'rating': float('nan')}",
    "infinity": "{'rating': [1.0, float('inf')]}",
    "deep": "_deep()",
}


@pytest.mark.parametrize("case", sorted(UNENCODABLE))
@pytest.mark.parametrize("inline", [True, False])
def test_a_result_json_cannot_hold_is_a_tool_error_and_never_reaches_model_or_audit(tmp_path, case, inline):
    body = ("def _loop():\n    d = {'a': 1}\n    d['self'] = d\n    return d\n\n"
            "def _deep():\n    d = {}\n    for _ in range(100000):\n        d = {'d': d}\n    return d\n\n"
            f"def odd():\n    return {UNENCODABLE[case]}\n\n"
            f"TOOLS = [Tool('odd', 'd', OBJ, odd, inline={inline})]\n")
    out = run_agent("--agent", agent_file(tmp_path, body), "--run-id", "u", cwd=tmp_path)
    _clean(out)
    assert out.returncode == 0, out.stderr
    snap = strict(tmp_path / "audit" / "run-u.json")
    assert snap["status"] == "done" and "JSON" in tool_contents(snap)[0]["error"]
    checked = run_agent("--check", "u", cwd=tmp_path)
    assert checked.returncode != 2, checked.stdout + checked.stderr


WRITE = '''
def _db():
    db = sqlite3.connect(os.path.join(os.environ.get("AGENT_AUDIT_DIR") or "audit", "w.db"))
    db.execute("CREATE TABLE IF NOT EXISTS w (key TEXT PRIMARY KEY)")
    return db


def book(day, idempotency_key):
    with _db() as db:
        db.execute("INSERT OR IGNORE INTO w VALUES (?)", (idempotency_key,))
    {after}


def find(key):
    {find}


SCHEMA = {{"type": "object", "required": ["day"], "properties": {{"day": {{"type": "string"}}}}}}
TOOLS = [Tool("book", "Book a day (a write).", SCHEMA, book, kind="write", takes=("idempotency_key",),
              effect=(("day", "date"),), reconcile=find, timeout=0.5)]
'''

TAIL_WRITE = '''
def respond(request):
    """Book (a blocked proposal first; once the user confirmed, the booking), then answer."""
    messages = request.get("messages") or []
    last = max(i for i, m in enumerate(messages) if m["role"] == "user" and m.get("name") != "loop")
    if not any(m["role"] == "tool" for m in messages[last:]):
        return {"content": None, "tool_calls": [{"id": f"call_book_{last}", "type": "function",
                                                 "function": {"name": "book", "arguments": '{"day": "2026-12-03"}'}}]}
    return {"content": "I tried to book 2026-12-03."}


AGENT = Agent("writer", "You book days.", TOOLS, goal="Book 2026-12-03, ask me first.", language="en",
              planning=False, offline=respond)
'''


def _write_run(tmp_path, after, find):
    path = tmp_path / "writer.py"
    path.write_text(HEAD + WRITE.format(after=after, find=find) + TAIL_WRITE, encoding="utf-8")
    first = run_agent("--agent", str(path), "--run-id", "w", cwd=tmp_path)
    assert first.returncode == 0 and read_audit(tmp_path / "audit", "w")["status"] == "suspended", first.stderr
    out = run_agent("--confirm", "w", cwd=tmp_path)
    _clean(out)
    assert out.returncode in (0, 1), out.stderr
    snap = strict(tmp_path / "audit" / "run-w.json")
    assert snap["status"] != "running"
    return snap, tool_contents(snap)[-1]


def test_a_write_whose_reconcile_raises_is_an_unknown_outcome_on_record(tmp_path):
    snap, told = _write_run(tmp_path, "time.sleep(2)\n    return {'booked': True}",
                            "raise sqlite3.OperationalError('database is locked')")
    assert told["outcome"] == "unknown" and "error" in told
    assert any(t["status"] == "unknown" for record in snap["trace"] for t in record["tools"])


@pytest.mark.parametrize("receipt, reconciled", [("{'total': float('nan')}", True), ("{'total': float('nan')}", False),
                                                  ("{(1,): 'x'}", False)])
def test_a_write_returning_what_json_cannot_hold_is_reconciled_or_kept_in_a_strict_form(tmp_path, receipt, reconciled):
    find = "return {'receipt': key[:8]}" if reconciled else "return None"
    snap, told = _write_run(tmp_path, f"return {receipt}", find)
    if reconciled:                                  # the store knows it: the receipt it stored, marked so
        assert told.get("reconciled") is True and "error" not in told
    else:                                           # it returned, so it ran: kept in a strict form, noted (or, when
        assert "error" not in told and "outcome" not in told     # a loaded machine made it time out, reconciled)
        assert told.get("_strict") or told.get("reconciled") is True
    assert snap["memory"]["writes"][-1]["receipt"] == told                      # the write is on record as made


STRICT = {                                          # what a write returns -> its receipt as the record keeps it
    "nan": ("{'booking': 'B-1', 'total': float('nan')}", {"booking": "B-1", "total": None}),
    "infinities": ("{'booking': 'B-1', 'fees': [1.5, float('inf'), -float('inf')]}",
                   {"booking": "B-1", "fees": [1.5, None, None]}),
    "tuple_key": ("{'booking': 'B-1', (1, 2): 'pair'}", {"booking": "B-1", "(1, 2)": "pair"}),
    "cycle": ("_loop()", {"booking": "B-1", "self": None}),
    "huge_int": ("{'booking': 'B-1', 'n': 10 ** 5000}", {"booking": "B-1", "n": None}),
}


@pytest.mark.parametrize("case", sorted(STRICT))
def test_a_write_that_returned_is_recorded_as_run_whatever_its_receipt_holds(tmp_path, case):
    """Issue 36, finding 8: a write whose receipt JSON cannot hold (and no reconcile that finds it) ran: the record
    keeps its receipt in a strict form with a note of what was changed, memory has the write, --check reads it."""
    returned, kept = STRICT[case]
    after = "return " + returned.replace("_loop()", "_loop(idempotency_key)")
    path = tmp_path / "writer.py"
    body = WRITE.format(after=after, find="return None").replace("timeout=0.5", "timeout=60").replace(
        "def book(", "def _loop(key):\n    d = {'booking': 'B-1'}\n    d['self'] = d\n    return d\n\n\ndef book(")
    path.write_text(HEAD + body + TAIL_WRITE, encoding="utf-8")
    assert run_agent("--agent", str(path), "--run-id", "w", cwd=tmp_path).returncode == 0
    out = run_agent("--confirm", "w", cwd=tmp_path)
    _clean(out)
    assert out.returncode == 0, out.stderr
    snap = strict(tmp_path / "audit" / "run-w.json")
    receipt = tool_contents(snap)[-1]
    assert {k: v for k, v in receipt.items() if k != "_strict"} == kept and receipt["_strict"]
    assert snap["status"] != "running" and snap["reason"] != "confirmed_no_write"   # never "the write did not run"
    assert snap["memory"]["writes"][-1]["receipt"] == receipt
    assert [t["status"] for record in snap["trace"] for t in record["tools"]][-1] == "ok"
    checked = run_agent("--check", "w", "--json", cwd=tmp_path)
    verdicts = {c["id"]: c["verdict"] for c in json.loads(checked.stdout)["files"][0]["checks"]}
    assert verdicts["write_after_confirmation"] == "pass", checked.stdout


def test_a_schema_that_refers_to_itself_is_a_declaration_error(tmp_path):
    body = ("SCHEMA = {'type': 'object', 'properties': {}}\nSCHEMA['properties']['again'] = SCHEMA\n"
            "TOOLS = [Tool('odd', 'd', SCHEMA, lambda again=None: {})]\n")
    out = run_agent("--agent", agent_file(tmp_path, body), cwd=tmp_path)
    _clean(out)
    assert out.returncode == 2 and "parameters" in out.stderr and "'odd'" in out.stderr
    with pytest.raises(ValueError):
        Tool("nan", "d", {"type": "object", "properties": {"x": {"type": "number", "maximum": float("nan")}}},
             lambda x=0: {})


def test_the_users_ctrl_c_during_an_inline_tool_still_stops_the_run_resumably(tmp_path):
    ready = tmp_path / "ready"
    body = (f"def slow():\n    open({str(ready)!r}, 'w').close()\n    time.sleep(30)\n    return {{'ok': 1}}\n\n"
            "TOOLS = [Tool('slow', 'd', OBJ, slow, inline=True)]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "agent.py"), "--agent", agent_file(tmp_path, body),
                             "--run-id", "c"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for _ in range(600):
        if ready.exists() or proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130 and b"Traceback" not in err, err.decode()
    snap = audit.load(str(tmp_path / "audit" / "run-c.json"))
    assert (snap["status"], snap["reason"]) == ("stopped", "interrupted")


def test_a_state_tool_and_a_gist_that_raise_are_tool_errors_and_the_printout_goes_on(tmp_path):
    body = ("def odd():\n    sys.exit(0)\n\ndef fine():\n    return {'ok': 1}\n\n"
            "def gist(result):\n    raise KeyError('no line for you')\n\n"
            "TOOLS = [Tool('odd', 'd', OBJ, odd, kind='state', inline=True),\n"
            "         Tool('fine', 'd', OBJ, fine, gist=gist)]\n")
    out = run_agent("--agent", agent_file(tmp_path, body), "--run-id", "g", cwd=tmp_path)
    _clean(out)
    assert out.returncode == 0, out.stderr
    odd, fine = tool_contents(strict(tmp_path / "audit" / "run-g.json"))
    assert "SystemExit" in odd["error"] and fine == {"ok": 1} and '{"ok": 1}' in out.stdout


HOOKED = {
    "absorb_raises": ("def absorb(facts, args, result):\n    raise KeyError('no room')\n", "absorb=absorb", "absorb"),
    "render_not_lines": ("def absorb(facts, args, result):\n    facts['seen'] = 1\n\n"
                         "def render(facts):\n    return 'seen'\n", "absorb=absorb, render=render", "render"),
}


@pytest.mark.parametrize("case", sorted(HOOKED))
def test_a_memory_hook_that_fails_stops_the_run_on_record_and_resume_goes_on_once_fixed(tmp_path, case):
    """A tool's absorb or render is the agent's own code: when it raises (or gives what is not a list
    of lines) the run stops with reason "hook" naming the tool and the hook (exit 1, no traceback),
    the turn that ran is recorded and paired; fixed, --resume takes the run on to its end."""
    body, hooks, hook = HOOKED[case]
    tools = f"TOOLS = [Tool('fine', 'd', OBJ, lambda: {{'ok': 1}}, kind='read', {hooks})]\n"
    path = agent_file(tmp_path, body + tools + "CALLS = ['fine'] * 6\n")
    if hook == "render":                                 # memory is rendered when an epoch starts: compact early
        text = open(path).read().replace("planning=False,", "planning=False, policy=Policy(compact_budget=100),")
        open(path, "w").write("from handloop import Policy\n" + text)
    out = run_agent("--agent", path, "--run-id", "k", cwd=tmp_path)
    _clean(out)
    assert out.returncode == 1, out.stderr
    snap = strict(tmp_path / "audit" / "run-k.json")
    assert (snap["status"], snap["reason"]) == ("stopped", "hook")
    assert "'fine'" not in snap["detail"] and "fine" in snap["detail"] and hook in snap["detail"]
    called = [c["id"] for m in snap["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert called and called == [m["tool_call_id"] for m in snap["messages"] if m["role"] == "tool"]
    again = run_agent("--agent", path, "--resume", "k", cwd=tmp_path)     # not fixed yet: its record is folded again
    _clean(again)
    assert again.returncode == (2 if hook == "absorb" else 1) and hook in again.stderr + again.stdout
    assert (strict(tmp_path / "audit" / "run-k.json")["reason"]) == "hook"
    open(path, "w").write(HEAD + tools.replace(hooks, "absorb=None") + "CALLS = ['fine', 'fine']\n" + TAIL)
    resumed = run_agent("--agent", path, "--resume", "k", cwd=tmp_path)
    _clean(resumed)
    assert resumed.returncode == 0, resumed.stderr
    assert strict(tmp_path / "audit" / "run-k.json")["status"] == "done"


def test_a_describe_hook_that_raises_stops_the_run_before_the_proposal_is_shown(tmp_path, fake_model):
    """The write's describe (what the user sees beside a proposal) raises while the guard turns the
    blocked write into the proposal: stopped on record, not a traceback out of handloop.run."""
    import handloop
    from handloop import Agent
    from conftest import text, tool_calls

    def describe(args, facts):
        raise ValueError("no description")
    order = Tool("order", "Order a laptop.", {"type": "object", "properties": {"serial": {"type": "string"}},
                                              "required": ["serial"]},
                 lambda serial: {"ordered": serial}, kind="write", effect=(("serial", "id"),), describe=describe)
    agent = Agent("orders", "You order laptops.", (order,), language="en", planning=False)
    ask, _ = fake_model([tool_calls(("order", {"serial": "SN-1"})), text("Ordered.")])
    r, toolset = handloop.start(agent, "d", audit_dir=str(tmp_path), goal="Order SN-1 for me.")
    handloop.run(r, ask, toolset)
    snap = audit.load(str(tmp_path / "run-d.json"))
    assert (snap["status"], snap["reason"]) == ("stopped", "hook") and "describe" in snap["detail"]
    assert not any(m["role"] == "tool" for m in snap["messages"])         # no half turn on record

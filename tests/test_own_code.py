"""The user's own code failing is said as such (issue 37, finding 5): an agent's offline model, a function model or
a tool's hook that raises is one line naming its file and line, the run stopped on record ("model_code", "hook"),
never retried nor reported as the model service being unreachable; once the code is fixed, --resume goes on."""
import json

import handloop
from handloop import Agent, Tool
from conftest import read_audit, run_agent, text, tool_calls

OBJ = {"type": "object", "properties": {}}
AGENT_FILE = '''
from handloop import Agent, Tool


def respond(request):
    with open("asked", "a") as f:
        f.write("x")
    messages = request["messages"]
    return REPLY


AGENT = Agent("scripted", "You help.", [Tool("noop", "Nothing.", {"type": "object", "properties": {}}, lambda: {})],
              goal="Say hello.", language="en", planning=False, offline=respond)
'''
FAILING_LINE = 9                                    # `return REPLY` in AGENT_FILE


def agent_file(tmp_path, reply):
    path = tmp_path / "scripted.py"
    path.write_text(AGENT_FILE.replace("REPLY", reply), encoding="utf-8")
    return str(path)


def test_an_offline_model_that_raises_is_one_line_naming_its_line_and_is_never_retried(tmp_path):
    path = agent_file(tmp_path, '{"content": messages[99]["content"]}')
    out = run_agent("--agent", path, "--run-id", "m", cwd=tmp_path)
    said = out.stdout + out.stderr
    assert out.returncode == 1, said
    assert f"scripted.py:{FAILING_LINE}: IndexError: list index out of range" in said
    assert (tmp_path / "asked").read_text() == "x"                       # asked once: no retry
    assert "unreachable" not in said and "retry" not in said and "Traceback" not in said
    snap = read_audit(tmp_path / "audit", "m")
    assert (snap["status"], snap["reason"]) == ("stopped", "model_code") and f"scripted.py:{FAILING_LINE}" in snap["detail"]
    assert "--resume m" in out.stdout                                     # the way on, once fixed
    agent_file(tmp_path, '{"content": "Hello."}')
    resumed = run_agent("--resume", "m", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert read_audit(tmp_path / "audit", "m")["status"] == "done"


def test_an_offline_model_answering_no_reply_names_where_it_is_defined(tmp_path):
    path = agent_file(tmp_path, "[1, 2]")
    out = run_agent("--agent", path, "--run-id", "n", cwd=tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    snap = read_audit(tmp_path / "audit", "n")
    assert snap["reason"] == "model_code" and "scripted.py:5: returned list" in snap["detail"]
    assert (tmp_path / "asked").read_text() == "x"


def _agent():
    return Agent("fn", "You help.", [Tool("noop", "Nothing.", OBJ, lambda: {})], language="en", planning=False)


def test_a_function_model_that_raises_stops_the_run_on_record_naming_its_line(tmp_path):
    calls = []

    def scripted(messages, tools, final=False):
        calls.append(1)
        return {"content": messages[99]}
    line = scripted.__code__.co_firstlineno + 2
    r, ts = handloop.start(_agent(), "f", audit_dir=str(tmp_path), goal="Say hello.")
    try:
        handloop.run(r, scripted, ts)
    finally:
        ts.close()
    assert (r.status, r.reason) == ("stopped", "model_code") and len(calls) == 1
    assert f"test_own_code.py:{line}: IndexError" in r.detail and "unreachable" not in r.detail
    assert json.load(open(tmp_path / "run-f.json"))["reason"] == "model_code"


def test_a_hook_that_raises_names_its_file_and_line(tmp_path, fake_model):
    def absorb(facts, args, result):
        raise KeyError("no room")
    line = absorb.__code__.co_firstlineno + 1
    agent = Agent("hooked", "You help.", [Tool("noop", "Nothing.", OBJ, lambda: {"ok": 1}, absorb=absorb)],
                  language="en", planning=False)
    ask, _ = fake_model([tool_calls(("noop", {})), text("Done.")])
    r, ts = handloop.start(agent, "h", audit_dir=str(tmp_path), goal="Use it.")
    try:
        handloop.run(r, ask, ts)
    finally:
        ts.close()
    assert (r.status, r.reason) == ("stopped", "hook")
    assert f"test_own_code.py:{line}: KeyError" in r.detail and "absorb" in r.detail

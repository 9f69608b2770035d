"""An argument the schema does not define never runs: asked for the call it offered in words ("pay B1, 120"), a
model that adds a `memo` (or a nested `details` object) the tool's schema does not list is refused before anything
is held or runs, as a validation error the model can act on; the call as declared is held, shown, and runs once
confirmed, once.

Through the CLI, the real `openai` client and a loopback endpoint answered by a stateless scripted model; the
bank agent of tests/test_many_writes.py, English and Chinese."""
import json

import pytest

from conftest import read_audit, run_agent
from handloop.llm.endpoint import Endpoint
from test_many_writes import AGENT_FILE, LANGUAGES, paid

OFFER = {"en": "Bill B1 to Acme is 120. Shall I pay B1? Reply confirm.", "zh": "账单 B1（Acme）120 元，要支付 B1 吗？请回复确认。"}
EXTRA = {"memo": {"memo": "send to IBAN DE89 3704 0044 0532 0130 00"},
         "details": {"details": {"amount": 9999, "payee_id": "XA-002"}}}


def offering_model(language, extra):
    """Lists the bills, proposes B1 in words; asked for the call (a forced tool_choice) or told to go ahead, pays
    it with `extra` arguments, and without them once told they are not allowed."""
    def respond(request):
        forced = request.get("tool_choice")
        forced = forced.get("function", {}).get("name") if isinstance(forced, dict) else None
        names, results, users = {}, [], []
        for m in request.get("messages") or []:
            names.update({c["id"]: c["function"]["name"] for c in m.get("tool_calls") or []})
            if m["role"] == "tool":
                results.append((names[m["tool_call_id"]], json.loads(m["content"])))
            elif m["role"] == "user" and m.get("name") != "loop":
                users.append(m["content"])
        if not results:
            return {"content": None, "tool_calls": [{"id": "l1", "type": "function",
                                                     "function": {"name": "list_bills", "arguments": "{}"}}]}
        pays = [r for n, r in results if n == "pay_bill"]
        if len(users) < 2 and forced != "pay_bill" and not pays:
            return {"content": OFFER[language]}
        if pays and "error" not in pays[-1]:
            return {"content": "Paid B1."}
        args = {"bill_id": "B1", "amount": 120, **({} if pays else extra)}
        return {"content": None, "tool_calls": [{"id": f"p{len(pays)}", "type": "function",
                                                 "function": {"name": "pay_bill", "arguments": json.dumps(args)}}]}
    return respond


@pytest.mark.parametrize("language", sorted(LANGUAGES))
@pytest.mark.parametrize("extra", sorted(EXTRA))
def test_an_argument_the_schema_does_not_define_never_runs(tmp_path, language, extra):
    endpoint = Endpoint(offering_model(language, EXTRA[extra]))
    try:
        path = tmp_path / "bank_agent.py"
        path.write_text(AGENT_FILE.format(language=language, confirm=LANGUAGES[language]), encoding="utf-8")
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": endpoint.url, "AGENT_MODEL_RETRIES": "0",
               "AGENT_AUDIT_DIR": str(tmp_path / "audit"), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        run = lambda *more: run_agent(*more, cwd=tmp_path, env=env)    # noqa: E731
        assert run("--agent", str(path), "--run-id", "r").returncode == 0
        data = read_audit(tmp_path / "audit", "r")
        assert data["reason"] == "awaiting_confirmation" and paid(tmp_path) == []
        refused = [json.loads(m["content"]) for m in data["messages"] if m["role"] == "tool" and
                   m["tool_call_id"] == "p0"]
        assert refused and refused[0]["blocked_by"] == "arguments" and extra in refused[0]["error"]
        held = [c for p in data["memory"]["proposals"] for c in p["calls"]]     # only the call as declared
        assert [(c["tool"], c["args"]) for c in held] == [("pay_bill", {"bill_id": "B1", "amount": 120})]
        done = run("--confirm", "r")
        assert done.returncode == 0, done.stdout + done.stderr
        data = read_audit(tmp_path / "audit", "r")
        assert (data["status"], paid(tmp_path)) == ("done", [("B1", 120)])
        assert run("--check", "r", "--strict").returncode == 0
    finally:
        endpoint.close()


# ---- closed schemas (issue 48, finding 2) ----
OPEN_AGENT = '''
import json
import os

from handloop import Agent, Tool


def send_report(**kwargs):
    with open(os.path.join(os.environ["AGENT_AUDIT_DIR"], "sent.jsonl"), "a", encoding="utf-8") as out:
        out.write(json.dumps(kwargs) + "\\n")
    return {{"sent": True}}


AGENT = Agent(name="reporter", language="{language}", planning=False, instructions="Send the daily report.",
              goal="Send the daily report.",
              tools=[Tool("send_report", "Send the daily report to the office (it takes no arguments).",
                          {{"type": "object", "properties": {{}}, "additionalProperties": True}}, send_report,
                          outside=True)])
'''


def reporting_model(request):
    """Sends the report with an IBAN it read somewhere as `data`; told that is not allowed, without it."""
    results = [json.loads(m["content"]) for m in request.get("messages") or [] if m["role"] == "tool"]
    if results and "error" not in results[-1]:
        return {"content": "Sent."}
    args = {"data": "DE89 3704 0044 0532 0130 00"} if not results else {}
    return {"content": None, "tool_calls": [{"id": f"s{len(results)}", "type": "function",
                                             "function": {"name": "send_report", "arguments": json.dumps(args)}}]}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_an_argument_outside_an_empty_properties_never_leaves_whatever_additional_properties_says(
        agent_files, tmp_path, language):
    path, run = agent_files(reporting_model, "reporter.py", OPEN_AGENT.format(language=language))
    done = run("--agent", str(path), "--run-id", "r")
    assert done.returncode == 0, done.stdout + done.stderr
    data = read_audit(tmp_path / "audit", "r")
    refused = [json.loads(m["content"]) for m in data["messages"] if m.get("tool_call_id") == "s0"]
    assert refused and refused[0]["blocked_by"] == "arguments" and "data" in refused[0]["error"]
    sent = (tmp_path / "audit" / "sent.jsonl").read_text(encoding="utf-8").splitlines()
    assert data["status"] == "done" and [json.loads(line) for line in sent] == [{}]      # the IBAN never left


def test_open_arguments_are_declared_on_the_tool_and_never_on_an_outside_one():
    from handloop import Agent, DeclarationError, Tool, toolset
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": {"type": "string"}}
    declared = dict(name="note", description="Keep a note.", parameters=schema, fn=lambda **kw: kw)
    with pytest.raises(DeclarationError, match="open_arguments=True: an outside tool"):
        Tool(**declared, outside=True, open_arguments=True, sources=())
    with pytest.raises(DeclarationError, match="open_arguments='yes' must be True or False"):
        Tool(**declared, open_arguments="yes")
    raw = [{"id": "n", "type": "function", "function": {"name": "note", "arguments": '{"q": "a", "tag": "b"}'}}]
    for open_arguments, runs in ((False, False), (True, True)):
        agent = Agent("notes", "Keep notes.", [Tool(**declared, open_arguments=open_arguments)], planning=False)
        [call] = toolset.ToolSet("t", agent).prepare(raw)
        assert (call.problem is None, call.args) == (runs, {"q": "a", "tag": "b"} if runs else None)

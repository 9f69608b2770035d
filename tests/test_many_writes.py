"""Real work writes many times: "pay these three bills" in one run, with a confirmation per bill, with one
confirmation for the three proposed together, and with one bill declined among confirmed ones. Each write is
proposed, confirmed or declined and executed on its own; after a write the run goes on with the model; it ends
`done` when the model answers and nothing waits for the user; the audit file keeps every proposal and the state
of each of its held calls.

Through the CLI in real processes, the real `openai` client and a loopback endpoint answered by a stateless
scripted model (it reads only the conversation), an agent file as a user writes one, English and Chinese.
Assertions read states, the store and the audit file, and --check --strict judges every run.
"""
import json

import pytest

from conftest import read_audit, run_agent, store_rows
from handloop.llm.endpoint import Endpoint

AGENT_FILE = '''
import os
import sqlite3

from handloop import Agent, Source, Tool, ToolError

BILLS = [{{"bill_id": "B1", "payee": "Acme", "amount": 120}}, {{"bill_id": "B2", "payee": "Globex", "amount": 75}},
         {{"bill_id": "B3", "payee": "Initech", "amount": 42}}]


def list_bills():
    return {{"bills": BILLS}}


def pay_bill(bill_id, amount, idempotency_key):
    if not any(b["bill_id"] == bill_id and b["amount"] == amount for b in BILLS):
        raise ToolError("no bill " + bill_id + " of " + str(amount))
    with sqlite3.connect(os.path.join(os.environ.get("AGENT_AUDIT_DIR", "audit"), "bank.db")) as db:
        db.execute("CREATE TABLE IF NOT EXISTS paid (key TEXT PRIMARY KEY, bill_id TEXT, amount INTEGER)")
        db.execute("INSERT OR IGNORE INTO paid VALUES (?, ?, ?)", (idempotency_key, bill_id, amount))
    return {{"paid": bill_id, "amount": amount}}


AGENT = Agent(
    name="bank", language={language!r}, planning=False, confirm={confirm!r},
    instructions="You pay the user's bills. List them, propose each payment, pay once the user confirms.",
    goal="Pay my three bills.",
    tools=[Tool("list_bills", "The user's unpaid bills.", {{"type": "object", "properties": {{}}}}, list_bills),
           Tool("pay_bill", "Pay one bill (a write).", {{"type": "object", "required": ["bill_id", "amount"],
                "properties": {{"bill_id": {{"type": "string"}}, "amount": {{"type": "integer"}}}}}}, pay_bill,
                kind="write", takes=("idempotency_key",), requires=("list_bills",),
                effect=(("bill_id", "id"),),
                sources=(Source(("bill_id", "amount"), "list_bills", ("bill_id", "amount"), "bills[]"),))])
'''
AMOUNTS = {"B1": 120, "B2": 75, "B3": 42}
LANGUAGES = {"en": ("confirm",), "zh": ("确认",)}
DECLINE = {"en": "no, not B2", "zh": "B2 不要付了"}


def _calls(*bills):
    return {"content": None, "tool_calls": [
        {"id": f"call_pay_{b}", "type": "function",
         "function": {"name": "pay_bill", "arguments": json.dumps({"bill_id": b, "amount": AMOUNTS[b]})}} for b in bills]}


def bank_model(together):
    """A stateless model: it lists the bills, then pays each one not paid yet and not refused by the user (one
    call a turn, or all of them in one turn: `together`), then says what it paid."""
    def respond(request):
        names, paid, listed, users = {}, [], False, []
        for m in request.get("messages") or []:
            names.update({c["id"]: (c["function"]["name"], c["function"]["arguments"]) for c in m.get("tool_calls") or []})
            if m["role"] == "tool" and "error" not in json.loads(m["content"]):
                name, args = names[m["tool_call_id"]]
                listed |= name == "list_bills"
                if name == "pay_bill":
                    paid.append(json.loads(args)["bill_id"])
            elif m["role"] == "user" and m.get("name") != "loop":
                users.append(m["content"])
        if not listed:
            return {"content": None, "tool_calls": [{"id": "call_list", "type": "function",
                                                     "function": {"name": "list_bills", "arguments": "{}"}}]}
        refused = {b for b in AMOUNTS if any(b in u for u in users[1:])}
        todo = [b for b in AMOUNTS if b not in paid and b not in refused]
        if not todo:
            return {"content": "Paid " + ", ".join(paid) + "."}
        return _calls(*todo) if together else _calls(todo[0])
    return respond


@pytest.fixture
def bank(agent_files):
    def make(language, together):
        path, run = agent_files(bank_model(together), "bank_agent.py",
                                AGENT_FILE.format(language=language, confirm=LANGUAGES[language]))
        first = run("--agent", str(path), "--run-id", "r")
        assert first.returncode == 0, first.stdout + first.stderr
        return run
    return make


def paid(tmp_path):
    return sorted(store_rows(tmp_path, "bank.db", "SELECT bill_id, amount FROM paid"))


def state(tmp_path):
    data = read_audit(tmp_path / "audit", "r")
    return data["status"], data["reason"], data


def strictly_checked(run):
    out = run("--check", "r", "--strict")
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_three_bills_three_confirmations(bank, tmp_path, language):
    run = bank(language, together=False)
    for bill in ("B1", "B2", "B3"):
        status, reason, data = state(tmp_path)
        held = data["memory"]["proposal"]["args"]["bill_id"]
        assert (status, reason, held) == ("suspended", "awaiting_confirmation", bill)
        done = run("--confirm", "r")
        assert done.returncode == 0, done.stdout + done.stderr
    status, reason, data = state(tmp_path)
    assert (status, reason) == ("done", "final_answer")
    assert paid(tmp_path) == [("B1", 120), ("B2", 75), ("B3", 42)]
    records = data["memory"]["proposals"]
    assert [(p["state"], [c["args"]["bill_id"] for c in p["calls"]]) for p in records] == \
        [("executed", ["B1"]), ("executed", ["B2"]), ("executed", ["B3"])]
    strictly_checked(run)
    assert run("--confirm", "r").returncode == 2 and len(paid(tmp_path)) == 3     # a done run takes nothing


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_three_bills_proposed_together_one_confirmation(bank, tmp_path, language):
    run = bank(language, together=True)
    status, reason, data = state(tmp_path)
    assert (status, reason) == ("suspended", "awaiting_confirmation")
    records = data["memory"]["proposals"]
    assert len(records) == 1 and [c["args"]["bill_id"] for c in records[0]["calls"]] == ["B1", "B2", "B3"]
    done = run("--confirm", "r")
    assert done.returncode == 0, done.stdout + done.stderr
    for bill in ("B1", "B2", "B3"):                       # the printout listed each before; the receipts now
        assert bill in done.stdout
    status, reason, data = state(tmp_path)
    assert (status, reason, paid(tmp_path)) == ("done", "final_answer", [("B1", 120), ("B2", 75), ("B3", 42)])
    assert [(p["state"], [c["state"] for c in p["calls"]]) for p in data["memory"]["proposals"]] == \
        [("executed", ["executed"] * 3)]
    strictly_checked(run)


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_the_printout_lists_each_write_of_a_proposal(tmp_path, language):
    endpoint = Endpoint(bank_model(True))
    try:
        path = tmp_path / "bank_agent.py"
        path.write_text(AGENT_FILE.format(language=language, confirm=LANGUAGES[language]), encoding="utf-8")
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": endpoint.url, "AGENT_MODEL_RETRIES": "0",
               "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        out = run_agent("--agent", str(path), "--run-id", "r", cwd=tmp_path, env=env)
        assert out.returncode == 0
        lines = [line for line in out.stdout.splitlines() if "pay_bill" in line and "bill_id" in line]
        assert [b for b in ("B1", "B2", "B3") if any(b in line for line in lines)] == ["B1", "B2", "B3"], out.stdout
    finally:
        endpoint.close()


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_a_declined_bill_among_confirmed_ones(bank, tmp_path, language):
    run = bank(language, together=False)
    assert run("--confirm", "r").returncode == 0                          # B1
    status, reason, data = state(tmp_path)
    assert (status, data["memory"]["proposal"]["args"]["bill_id"]) == ("suspended", "B2")
    declined = run("--reply", DECLINE[language], "r")                   # not B2
    assert declined.returncode == 0, declined.stdout + declined.stderr
    status, reason, data = state(tmp_path)
    held = data["memory"]["proposal"]["args"]["bill_id"]
    assert (status, reason, held) == ("suspended", "awaiting_confirmation", "B3")
    assert run("--confirm", "r").returncode == 0                          # B3
    status, reason, data = state(tmp_path)
    assert (status, paid(tmp_path)) == ("done", [("B1", 120), ("B3", 42)])
    fates = [(p["state"], p["calls"][0]["args"]["bill_id"]) for p in data["memory"]["proposals"]]
    assert fates[0] == ("executed", "B1") and fates[-1] == ("executed", "B3")
    assert [s for s, bill in fates if bill == "B2"] in (["declined"], ["withdrawn"])
    strictly_checked(run)

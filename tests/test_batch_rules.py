"""The agent's rules over a whole batch, and over read-only copies (issue 48, findings 1 and 5).

A rule decides over what would have run: the run's writes so far plus the writes decided before it in the same turn,
in the order they would run, when the writes are proposed and when the confirmed calls run; --check --agent replays
it the same way. A rule is given deep, read-only copies: one that changes the arguments it was given fails as the
agent's code (the run stops, reason "hook"), and what runs is what was held, byte for byte.

Through the CLI in real processes, the real `openai` client and a loopback endpoint answered by a stateless scripted
model; an agent file as a user writes one, English and Chinese. Assertions read states, the store, the audit file
and the judge's verdicts."""
import json

import pytest

from conftest import read_audit, store_rows

AGENT_FILE = '''
import copy
import os
import sqlite3

from handloop import Agent, Rule, Source, Tool

BILLS = [{{"bill_id": "B1", "payee": "Acme", "amount": 120, "memo": "rent"}},
         {{"bill_id": "B2", "payee": "Globex", "amount": 75, "memo": "power"}},
         {{"bill_id": "B3", "payee": "Initech", "amount": 42, "memo": "water"}}]


def list_bills():
    return {{"bills": BILLS}}


def pay_bill(bill_id, amount, details, idempotency_key):
    with sqlite3.connect(os.path.join(os.environ["AGENT_AUDIT_DIR"], "bank.db")) as db:
        db.execute("CREATE TABLE IF NOT EXISTS paid (key TEXT PRIMARY KEY, bill_id TEXT, amount INTEGER, memo TEXT)")
        db.execute("INSERT OR IGNORE INTO paid VALUES (?, ?, ?, ?)", (idempotency_key, bill_id, amount, details["memo"]))
    return {{"paid": bill_id, "amount": amount}}


def at_most_150(args, facts):
    total = sum(a["amount"] for a, _ in facts.calls("pay_bill")) + args["amount"]
    return "At most 150 may be paid in a run; with this bill it would be " + str(total) + "." if total > 150 else None


def b1_first(args, facts):
    paid = [a["bill_id"] for a, _ in facts.calls("pay_bill")]
    return None if args["bill_id"] == "B1" or "B1" in paid else "Pay B1 (the rent) first."


def mutates(args, facts):
    args["details"]["memo"] = args["details"]["memo"].upper() + " (CHECKED)"
    return None


def copies(args, facts):
    mine = copy.deepcopy(args)
    mine["details"]["memo"] = mine["details"]["memo"].upper() + " (CHECKED)"
    return None if mine["amount"] == args["amount"] else "changed"


AGENT = Agent(
    name="bank", language={language!r}, planning=False, confirm={confirm!r},
    instructions="You pay the user's bills. List them, propose the payments, pay once the user confirms.",
    goal="Pay my bills.", rules=[Rule({rule!r}, {rule})],
    tools=[Tool("list_bills", "The user's unpaid bills.", {{"type": "object", "properties": {{}}}}, list_bills),
           Tool("pay_bill", "Pay one bill (a write).", {{"type": "object", "required": ["bill_id", "amount", "details"],
                "properties": {{"bill_id": {{"type": "string"}}, "amount": {{"type": "integer"}},
                               "details": {{"type": "object", "properties": {{"memo": {{"type": "string"}}}}}}}}}},
                pay_bill, kind="write", takes=("idempotency_key",), requires=("list_bills",),
                effect=(("bill_id", "id"),),
                sources=(Source(("bill_id", "amount"), "list_bills", ("bill_id", "amount"), "bills[]"),))])
'''
BILLS = {"B1": (120, "rent"), "B2": (75, "power"), "B3": (42, "water")}
CONFIRM = {"en": ("confirm",), "zh": ("确认",)}


def batch_model(request):
    """Lists the bills, then pays in one turn every bill neither paid nor refused by a rule; while its payments wait
    for the user, asks them; then says what it paid."""
    names, paid, refused, listed, waiting = {}, [], set(), False, False
    for m in request.get("messages") or []:
        if m["role"] == "user" and m.get("name") != "loop":
            waiting = False
        names.update({c["id"]: (c["function"]["name"], json.loads(c["function"]["arguments"]))
                      for c in m.get("tool_calls") or []})
        if m["role"] == "tool":
            name, args = names[m["tool_call_id"]]
            result = json.loads(m["content"])
            listed |= name == "list_bills" and "error" not in result
            if name == "pay_bill" and "error" not in result:
                paid.append(args["bill_id"])
            elif name == "pay_bill" and result.get("blocked_by") == "rule":
                refused.add(args["bill_id"])
            waiting |= name == "pay_bill" and result.get("blocked_by") == "unconfirmed_write"
    if not listed:
        return {"content": None, "tool_calls": [{"id": "list", "type": "function",
                                                 "function": {"name": "list_bills", "arguments": "{}"}}]}
    if waiting:
        return {"content": "I proposed the payments above: please confirm them."}
    todo = [b for b in BILLS if b not in paid and b not in refused]
    if not todo:
        return {"content": "Paid " + ", ".join(paid) + "."}
    calls = [{"id": f"pay_{b}_{len(names)}", "type": "function", "function": {"name": "pay_bill", "arguments": json.dumps(
        {"bill_id": b, "amount": BILLS[b][0], "details": {"memo": BILLS[b][1]}})}} for b in todo]
    return {"content": None, "tool_calls": calls}


@pytest.fixture
def bank(agent_files):
    def make(rule, language="en"):
        return agent_files(batch_model, "bank_agent.py",
                           AGENT_FILE.format(language=language, confirm=CONFIRM[language], rule=rule))
    return make


def paid(tmp_path):
    return sorted(store_rows(tmp_path, "bank.db", "SELECT bill_id, amount, memo FROM paid"))


def results(data):
    names = {c["id"]: (c["function"]["name"], json.loads(c["function"]["arguments"]))
             for m in data["messages"] for c in m.get("tool_calls") or []}
    return [(names[m["tool_call_id"]], json.loads(m["content"])) for m in data["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize("language", sorted(CONFIRM))
def test_a_rule_sees_the_writes_decided_before_it_in_its_batch(bank, tmp_path, language):
    path, run = bank("at_most_150", language)
    first = run("--agent", str(path), "--run-id", "r")
    assert first.returncode == 0, first.stdout + first.stderr
    data = read_audit(tmp_path / "audit", "r")
    assert (data["status"], data["reason"]) == ("suspended", "awaiting_confirmation")
    refused = sorted(args["bill_id"] for (name, args), r in results(data) if r.get("blocked_by") == "rule")
    assert refused == ["B2", "B3"]                         # 120 + 75 and 120 + 42 would pass 150: never proposed
    assert [c["args"]["bill_id"] for p in data["memory"]["proposals"] for c in p["calls"]] == ["B1"]
    done = run("--agent", str(path), "--confirm", "r")
    assert done.returncode == 0, done.stdout + done.stderr
    assert read_audit(tmp_path / "audit", "r")["status"] == "done"
    assert paid(tmp_path) == [("B1", 120, "rent")] and sum(a for _, a, _ in paid(tmp_path)) <= 150
    assert run("--check", "r", "--strict", "--agent", str(path)).returncode == 0


def test_a_rule_that_needs_a_write_decided_before_it_holds_when_the_confirmed_batch_runs(bank, tmp_path):
    # B2 and B3 may be paid once B1 is: proposed together after B1, confirmed once, all three run in one batch
    # (each rule decided over the writes before it, at the proposal and again when the confirmed calls run)
    path, run = bank("b1_first")
    assert run("--agent", str(path), "--run-id", "r").returncode == 0
    data = read_audit(tmp_path / "audit", "r")
    assert [[c["args"]["bill_id"] for c in p["calls"]] for p in data["memory"]["proposals"]] == [["B1", "B2", "B3"]]
    done = run("--agent", str(path), "--confirm", "r")
    assert done.returncode == 0, done.stdout + done.stderr
    data = read_audit(tmp_path / "audit", "r")
    assert data["status"] == "done" and not [r for _, r in results(data) if r.get("blocked_by") == "rule"]
    assert paid(tmp_path) == [(b, a, m) for b, (a, m) in BILLS.items()]
    assert [p["state"] for p in data["memory"]["proposals"]] == ["executed"]
    assert run("--check", "r", "--strict", "--agent", str(path)).returncode == 0


def _chat_call(call_id, bill):
    return {"id": call_id, "type": "function", "function": {"name": "pay_bill", "arguments": json.dumps(
        {"bill_id": bill, "amount": BILLS[bill][0], "details": {"memo": BILLS[bill][1]}})}}


def test_the_judge_replays_a_rule_over_the_writes_of_one_turn(bank, tmp_path):
    # another system's transcript: the user confirmed three payments, made in one turn, 237 in all
    path, run = bank("at_most_150")
    listed = {"bills": [{"bill_id": b, "amount": a, "memo": m} for b, (a, m) in BILLS.items()]}
    messages = [{"role": "user", "content": "Pay my bills."},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "l", "type": "function", "function": {"name": "list_bills", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "l", "content": json.dumps(listed)},
                {"role": "assistant", "content": "Shall I pay B1 (120), B2 (75) and B3 (42)?"},
                {"role": "user", "content": "yes"},
                {"role": "assistant", "content": None, "tool_calls": [_chat_call(f"p{b}", b) for b in BILLS]},
                *({"role": "tool", "tool_call_id": f"p{b}", "content": json.dumps({"paid": b, "amount": BILLS[b][0]})}
                  for b in BILLS),
                {"role": "assistant", "content": "Paid B1, B2 and B3."}]
    other = tmp_path / "other.json"
    other.write_text(json.dumps(messages), encoding="utf-8")
    out = run("--check", str(other), "--json", "--agent", str(path))
    entry = json.loads(out.stdout)["files"][0]
    verdicts = {c["id"]: c["verdict"] for c in entry["checks"]}
    assert out.returncode == 1 and verdicts["at_most_150"] == "fail"
    assert "195" in {c["id"]: c["reason"] for c in entry["checks"]}["at_most_150"]     # B1 + B2, in the order run


def test_a_rule_that_changes_its_arguments_fails_and_what_runs_is_what_was_held(bank, tmp_path):
    path, run = bank("mutates")
    stopped = run("--agent", str(path), "--run-id", "r")
    data = read_audit(tmp_path / "audit", "r")
    assert stopped.returncode == 1 and (data["status"], data["reason"]) == ("stopped", "hook")
    assert "mutates" in data["detail"] and "read-only" in data["detail"] and "Traceback" not in stopped.stderr
    assert paid(tmp_path) == [] and not data["memory"]["proposals"]
    assert "CHECKED" not in json.dumps(data)                  # nothing the rule did reached the record
    (tmp_path / "audit" / "run-r.json").unlink()
    path, run = bank("copies")                        # a rule that changes its own deep copy changes nothing
    assert run("--agent", str(path), "--run-id", "r").returncode == 0
    shown = [c for p in read_audit(tmp_path / "audit", "r")["memory"]["proposals"] for c in p["calls"]]
    assert sorted((c["args"]["bill_id"], c["args"]["details"]["memo"]) for c in shown) == \
        [(b, m) for b, (_, m) in BILLS.items()]
    assert run("--agent", str(path), "--confirm", "r").returncode == 0
    assert paid(tmp_path) == [(b, a, m) for b, (a, m) in BILLS.items()]
    assert run("--check", "r", "--strict", "--agent", str(path)).returncode == 0

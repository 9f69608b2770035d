"""A confirmation authorises exactly the call it showed, tool and every argument, once; a confirmed call that
fails spends it. Found replaying τ²-bench's retail task 64: an exchange the user confirmed failed, and the
model's next write (another tool, same arguments) ran unasked, and --check passed it.

Through the CLI in real processes, the real `openai` client and a loopback endpoint answered by a stateless
scripted model (it reads only the conversation), an agent file as a user writes one, English and Chinese.
Assertions read states, the store and the audit file; then the judge's two readings (the audit file, and the
same conversation as a plain Chat Completions transcript) on the record and on a forged one where the
unconfirmed write took effect.
"""
import json

import pytest

from conftest import read_audit, run_agent, store_rows
from handloop.llm.endpoint import Endpoint

AGENT_FILE = '''
import os
import sqlite3

from handloop import Agent, Source, Tool, ToolError

ORDERS = {{"W1": {{"order_id": "W1", "status": "pending", "payment_method_id": "card_1"}},
          "W2": {{"order_id": "W2", "status": "delivered", "payment_method_id": "card_1"}}}}


def get_order(order_id):
    if order_id not in ORDERS:
        raise ToolError("no order " + order_id)
    return ORDERS[order_id]


def _record(what, order_id, payment_method_id, key):
    with sqlite3.connect(os.path.join(os.environ.get("AGENT_AUDIT_DIR", "audit"), "orders.db")) as db:
        db.execute("CREATE TABLE IF NOT EXISTS done (key TEXT PRIMARY KEY, what TEXT, order_id TEXT, card TEXT)")
        db.execute("INSERT OR IGNORE INTO done VALUES (?, ?, ?, ?)", (key, what, order_id, payment_method_id))
    return {{"done": what, "order_id": order_id}}


def exchange_items(order_id, payment_method_id, idempotency_key):
    if ORDERS[order_id]["status"] != "delivered":
        raise ToolError("order " + order_id + " is not delivered: it cannot be exchanged")
    return _record("exchange", order_id, payment_method_id, idempotency_key)


def modify_items(order_id, payment_method_id, idempotency_key):
    return _record("modify", order_id, payment_method_id, idempotency_key)


ARGS = {{"type": "object", "required": ["order_id", "payment_method_id"],
        "properties": {{"order_id": {{"type": "string"}}, "payment_method_id": {{"type": "string"}}}}}}
WRITE = dict(kind="write", takes=("idempotency_key",), requires=("get_order",),
             effect=(("order_id", "id"), ("payment_method_id", "id")),
             sources=(Source(("order_id",), "get_order", ("order_id",)),
                      Source(("payment_method_id",), "get_order", ("payment_method_id",))))
AGENT = Agent(
    name="orders", language={language!r}, planning=False, confirm={confirm!r},
    instructions="You handle orders. Look them up, propose the change, wait for the user's confirmation.",
    goal="Exchange the items of order W1, paid with card_1.",
    tools=[Tool("get_order", "Look an order up by its id.", {{"type": "object", "required": ["order_id"],
                "properties": {{"order_id": {{"type": "string"}}}}}}, get_order),
           Tool("exchange_items", "Exchange a delivered order's items (a write).", ARGS, exchange_items, **WRITE),
           Tool("modify_items", "Modify a pending order's items (a write).", ARGS, modify_items, **WRITE)])
'''


def _call(name, **args):
    return {"content": None, "tool_calls": [{"id": f"call_{name}_{args.get('order_id')}", "type": "function",
                                             "function": {"name": name, "arguments": json.dumps(args)}}]}


def model(second):
    """A stateless model: it looks both orders up, asks to exchange W1 and, when that failed, makes `second`
    (a write of its own choosing, never proposed); once a write succeeded, it says so."""
    def respond(request):
        names, results = {}, []
        for m in request.get("messages") or []:
            names.update({c["id"]: c["function"]["name"] for c in m.get("tool_calls") or []})
            if m["role"] == "tool":
                results.append((names.get(m["tool_call_id"]), json.loads(m["content"])))
        if not any(n == "get_order" for n, _ in results):
            return {"content": None, "tool_calls": [
                {"id": f"call_get_{o}", "type": "function",
                 "function": {"name": "get_order", "arguments": json.dumps({"order_id": o})}} for o in ("W1", "W2")]}
        if any(n != "get_order" and "error" not in r for n, r in results):
            return {"content": "Done."}
        if not any(n == "exchange_items" for n, _ in results):
            return _call("exchange_items", order_id="W1", payment_method_id="card_1")
        return _call(second[0], **second[1])
    return respond


SECONDS = {"another tool": ("modify_items", {"order_id": "W1", "payment_method_id": "card_1"}),
           "the same tool, another id": ("exchange_items", {"order_id": "W2", "payment_method_id": "card_1"})}
LANGUAGES = {"en": ("confirm",), "zh": ("确认",)}


@pytest.fixture
def agent_cli(agent_files):
    def make(language, second):
        name, args = second
        path, run = agent_files(model((name, {**args})), "orders_agent.py",
                                AGENT_FILE.format(language=language, confirm=LANGUAGES[language]))
        return run, str(path)
    return make


def done_rows(tmp_path):
    return store_rows(tmp_path, "orders.db", "SELECT what, order_id, card FROM done")


def tool_results(data):
    names = {c["id"]: c["function"]["name"] for m in data["messages"] for c in m.get("tool_calls") or []}
    return [(names[m["tool_call_id"]], json.loads(m["content"])) for m in data["messages"] if m["role"] == "tool"]


def verdicts(run, *target):
    out = run("--check", *target, "--json")
    assert out.returncode in (0, 1), out.stdout + out.stderr
    report = json.loads(out.stdout)
    entries = report if isinstance(report, list) else report.get("files", [report])
    return {c["id"]: c["verdict"] for c in entries[0]["checks"]}


@pytest.mark.parametrize("language", sorted(LANGUAGES))
@pytest.mark.parametrize("case", sorted(SECONDS))
def test_a_failed_confirmed_write_spends_the_confirmation(agent_cli, tmp_path, language, case):
    second_name, second_args = SECONDS[case]
    run, agent_file = agent_cli(language, SECONDS[case])
    first = run("--agent", agent_file, "--run-id", "r")
    data = read_audit(tmp_path / "audit", "r")
    assert first.returncode == 0, first.stderr
    assert (data["status"], data["reason"], data["memory"]["proposal"]["tool"]) == \
        ("suspended", "awaiting_confirmation", "exchange_items")

    confirmed = run("--confirm", "r")                     # the loop makes the exchange: it fails
    assert confirmed.returncode == 0, confirmed.stderr
    data = read_audit(tmp_path / "audit", "r")
    results = tool_results(data)
    failed = [r for n, r in results if n == "exchange_items" and "error" in r and "blocked_by" not in r]
    assert len(failed) == 1 and failed[0].get("confirmation"), results          # the model is told
    blocked = results[-1][1]
    assert results[-1][0] == second_name and blocked["blocked_by"] == "unconfirmed_write", results
    assert (data["status"], data["reason"], done_rows(tmp_path)) == ("suspended", "awaiting_confirmation", [])
    proposal = data["memory"]["proposal"]                 # the other write is a new proposal, shown exactly
    assert (proposal["tool"], proposal["args"], proposal["state"]) == (second_name, second_args, "proposed")
    assert not data["memory"]["confirmed"]
    assert verdicts(run, "r")["write_after_confirmation"] != "fail"

    again = run("--confirm", "r")                         # confirmed in its turn, it runs, once
    assert again.returncode == 0, again.stderr
    data = read_audit(tmp_path / "audit", "r")
    what = "modify" if second_name == "modify_items" else "exchange"
    assert (data["status"], done_rows(tmp_path)) == ("done", [(what, second_args["order_id"], "card_1")])
    assert verdicts(run, "r")["write_after_confirmation"] == "pass"


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_the_same_call_again_after_it_failed_is_a_new_proposal(agent_cli, tmp_path, language):
    run, agent_file = agent_cli(language, ("exchange_items", {"order_id": "W1", "payment_method_id": "card_1"}))
    assert run("--agent", agent_file, "--run-id", "r").returncode == 0
    assert run("--confirm", "r").returncode == 0
    data = read_audit(tmp_path / "audit", "r")
    ran = [r for n, r in tool_results(data) if n == "exchange_items" and "blocked_by" not in r]
    assert len(ran) == 1 and (data["status"], data["reason"]) == ("suspended", "awaiting_confirmation")
    assert data["memory"]["proposal"]["args"] == {"order_id": "W1", "payment_method_id": "card_1"}
    assert data["memory"]["proposal"]["state"] == "proposed" and not data["memory"]["confirmed"]
    assert [c["state"] for p in data["memory"]["proposals"] for c in p["calls"]] == ["failed", "proposed"]


def forged(data, name):
    """The record's messages with the blocked `name` call made to take effect instead, cut there."""
    messages, names = [], {}
    for m in data["messages"]:
        names.update({c["id"]: c["function"]["name"] for c in m.get("tool_calls") or []})
        if m["role"] == "tool" and names.get(m["tool_call_id"]) == name and "blocked_by" in m["content"]:
            messages.append(dict(m, content=json.dumps({"done": name, "order_id": "W1"})))
            return messages
        messages.append(m)
    raise AssertionError(f"no blocked {name} call in the record")


@pytest.mark.parametrize("language", sorted(LANGUAGES))
@pytest.mark.parametrize("case", sorted(SECONDS))
def test_the_judge_fails_the_unconfirmed_write_in_both_readings(agent_cli, tmp_path, language, case):
    second_name, _ = SECONDS[case]
    run, agent_file = agent_cli(language, SECONDS[case])
    assert run("--agent", agent_file, "--run-id", "r").returncode == 0
    assert run("--confirm", "r").returncode == 0
    data = read_audit(tmp_path / "audit", "r")
    messages = forged(data, second_name)
    record = dict(data, messages=messages, status="done", reason="final_answer")
    (tmp_path / "forged-run.json").write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "forged-chat.json").write_text(json.dumps(messages, ensure_ascii=False), encoding="utf-8")
    assert verdicts(run, str(tmp_path / "forged-run.json"))["write_after_confirmation"] == "fail"
    assert verdicts(run, str(tmp_path / "forged-chat.json"), "--agent", agent_file)["write_after_confirmation"] \
        == "fail"


PLANNED_AGENT = '''
from handloop import Agent, Source, Tool

RESERVATIONS = {"R1": {"reservation_id": "R1", "status": "active", "flight": "HAT001"}}
ID = {"type": "object", "required": ["reservation_id"], "properties": {"reservation_id": {"type": "string"}}}


def cancel_reservation(reservation_id):
    RESERVATIONS[reservation_id] = dict(RESERVATIONS[reservation_id], status="cancelled")
    return RESERVATIONS[reservation_id]             # τ²'s own result: the reservation, its status "cancelled"


AGENT = Agent(
    name="airline", language="en", planning=True, confirm=("yes",),
    instructions="You are an airline agent. Plan, look the reservation up, cancel it once the user says yes.",
    goal="Cancel reservation R1 and tell me the refund.",
    tools=[Tool("get_reservation", "Look a reservation up.", ID, lambda reservation_id: RESERVATIONS[reservation_id]),
           Tool("cancel_reservation", "Cancel a reservation (a write).", ID, cancel_reservation, kind="write",
                effect=(("reservation_id", "id"),),
                sources=(Source(("reservation_id",), "get_reservation", ("reservation_id",)),)),
           Tool("get_refund", "The refund of a cancelled reservation.", ID,
                lambda reservation_id: {"reservation_id": reservation_id, "refund": 120})])
'''

STEPS = [{"title": "look the reservation up", "tool": "get_reservation"},
         {"title": "cancel it", "tool": "cancel_reservation", "after": [1]},
         {"title": "tell the refund", "tool": "get_refund", "after": [2]}]


def planned_model(request):
    names, done = {}, set()
    for m in request.get("messages") or []:
        names.update({c["id"]: c["function"]["name"] for c in m.get("tool_calls") or []})
        if m["role"] == "tool" and "error" not in json.loads(m["content"]):
            done.add(names.get(m["tool_call_id"]))
    if "set_plan" not in done:
        return {"content": None, "tool_calls": [
            {"id": "p1", "type": "function", "function": {"name": "set_plan", "arguments": json.dumps({"steps": STEPS})}},
            {"id": "g1", "type": "function", "function": {"name": "get_reservation",
                                                          "arguments": json.dumps({"reservation_id": "R1"})}}]}
    for tool in ("cancel_reservation", "get_refund"):
        if tool not in done:
            return _call(tool, reservation_id="R1")
    return {"content": "R1 is cancelled; the refund is 120."}


def test_a_plan_step_whose_write_the_loop_made_after_the_yes_is_done_for_the_judge(tmp_path):
    """τ² airline tasks 9 and 37: the loop made the confirmed cancel; its result says status "cancelled", which the
    wide reading takes for a failure. A run of ours is read as the run read it: a result is an error only by its
    `error` key, so the cancel's step is done and the step after it was not skipped."""
    endpoint = Endpoint(planned_model)
    try:
        (tmp_path / "airline.py").write_text(PLANNED_AGENT, encoding="utf-8")
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": endpoint.url, "AGENT_MODEL_RETRIES": "0",
               "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        run = lambda *more: run_agent(*more, cwd=tmp_path, env=env)    # noqa: E731
        assert run("--agent", str(tmp_path / "airline.py"), "--run-id", "r").returncode == 0
        assert read_audit(tmp_path / "audit", "r")["memory"]["proposal"]["tool"] == "cancel_reservation"
        assert run("--confirm", "r").returncode == 0
        data = read_audit(tmp_path / "audit", "r")
        assert data["status"] == "done" and [s["status"] for s in data["memory"]["plan"]] == ["done"] * 3
        found = verdicts(run, "r")
        assert (found["no_skipped_step"], found["write_after_confirmation"]) == ("pass", "pass"), found
        strict = run("--check", "r", "--strict")
        assert strict.returncode == 0, strict.stdout
    finally:
        endpoint.close()

"""The idempotency key (幂等键) is the write as the user saw and confirmed it: the run, the tool and every argument the
call carries. Two messages to one recipient with other bodies are two writes, each sent once, though only the
recipient is declared as the effect; the same items of a list effect in another order are the same write.

Through the CLI in real processes, the real `openai` client and a loopback endpoint answered by a stateless
scripted model; the store (its PRIMARY KEY on the key) and the audit file are asserted, and --check --strict."""
import json
import sqlite3

import pytest

from conftest import read_audit, run_agent
from handloop import DeclarationError, Tool
from handloop.calls import Call, declared_tool
from handloop.llm.endpoint import Endpoint
from handloop.toolset import idempotency_key

AGENT_FILE = '''
import os
import sqlite3

from handloop import Agent, Tool


def send_message(recipient: str, body: str, idempotency_key: str) -> dict:
    """Send a message to one of the user's contacts.

    Args:
        recipient: the contact's name.
        body: the text sent.
    """
    with sqlite3.connect(os.path.join(os.environ["AGENT_AUDIT_DIR"], "outbox.db")) as db:
        db.execute("CREATE TABLE IF NOT EXISTS sent (key TEXT PRIMARY KEY, recipient TEXT, body TEXT)")
        db.execute("INSERT OR IGNORE INTO sent VALUES (?, ?, ?)", (idempotency_key, recipient, body))
    return {"sent_to": recipient}


AGENT = Agent(name="outbox", language="en", planning=False, instructions="You send the user's messages.",
              goal="Ask Bob about lunch, then tell him to bring the slides.",
              tools=[Tool.from_function(send_message, kind="write", takes=("idempotency_key",),
                                        effect={"recipient": "id"})])
'''
BODIES = ("Lunch at 12?", "Bring the slides.")


def outbox_model(request):
    """Sends each body to Bob that no tool message says was sent yet, one a turn; then says so."""
    sent = [m for m in request["messages"] if m["role"] == "tool" and "sent_to" in json.loads(m["content"])]
    if len(sent) < len(BODIES):
        args = {"recipient": "Bob", "body": BODIES[len(sent)]}
        return {"content": None, "tool_calls": [{"id": f"call_send_{len(sent)}", "type": "function",
                                                 "function": {"name": "send_message", "arguments": json.dumps(args)}}]}
    return {"content": "Both messages are sent to Bob."}


def test_two_messages_to_one_recipient_are_two_writes_each_sent_once(tmp_path):
    (tmp_path / "outbox_agent.py").write_text(AGENT_FILE, encoding="utf-8")
    endpoint = Endpoint(outbox_model)
    try:
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": endpoint.url, "AGENT_MODEL_RETRIES": "0",
               "AGENT_AUDIT_DIR": str(tmp_path / "audit"), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        agent = str(tmp_path / "outbox_agent.py")
        for step in (("--run-id", "m"), ("--confirm", "m"), ("--confirm", "m")):
            done = run_agent("--agent", agent, *step, cwd=tmp_path, env=env)
            assert done.returncode == 0, done.stdout + done.stderr
        data = read_audit(tmp_path / "audit", "m")
        assert data["status"] == "done"
        with sqlite3.connect(tmp_path / "audit" / "outbox.db") as db:
            assert sorted(db.execute("SELECT recipient, body FROM sent")) == sorted(("Bob", b) for b in BODIES)
        assert run_agent("--agent", agent, "--check", "--strict", "m", cwd=tmp_path, env=env).returncode == 0
    finally:
        endpoint.close()


def test_the_key_covers_every_argument_and_a_list_effect_in_any_order():
    tool = Tool("give", "Give items.", {"type": "object", "properties": {
        "to": {"type": "string"}, "items": {"type": "array", "items": {"type": "string"}}, "note": {"type": "string"}}},
        lambda **a: {}, kind="write", effect={"to": "id", "items": "id"})

    def key(**args):
        return idempotency_key("r1", Call("c1", "give", json.dumps(args), args, tool=tool))
    assert key(to="Ann", items=["a", "b"], note="x") == key(to="Ann", items=["b", "a"], note="x")
    assert key(to="Ann", items=["a", "b"], note="x") != key(to="Ann", items=["a", "b"], note="y")
    assert key(to="Ann", items=["a"]) != key(to="Ann", items=["a"], note="y")
    assert idempotency_key("r2", Call("c1", "give", "{}", {"to": "Ann"}, tool=tool)) != key(to="Ann")


# ---- the canonical form (issue 48, finding 4: the key's side) ----
def _route_tool(**declared):
    return Tool("drive", "Drive a route.", {"type": "object", "properties": {
        "stops": {"type": "array", "items": {"type": "string"}}, "fare": {"type": "number"}}},
        lambda **a: {}, kind="write", effect={"stops": "id"}, **declared)


def _key(tool, **args):
    return idempotency_key("r1", Call("c1", tool.name, json.dumps(args), args, tool=tool))


def test_a_number_is_one_key_however_it_is_written_and_an_ordered_list_keeps_its_order():
    tool = _route_tool()
    assert _key(tool, stops=["A", "B"], fare=12) == _key(tool, stops=["B", "A"], fare=12.0)    # a set; one number
    assert _key(tool, stops=["A", "B"], fare=12) != _key(tool, stops=["A", "B"], fare=12.5)
    assert _key(tool, stops=["A", "B", "B"]) != _key(tool, stops=["A", "B"])        # an item listed twice stays twice
    route = _route_tool(ordered=("stops",))                                          # where the order is the write
    assert _key(route, stops=["A", "B"]) != _key(route, stops=["B", "A"])
    assert _key(route, stops=["A", "B"], fare=3.0) == _key(route, stops=["A", "B"], fare=3)
    assert declared_tool(route)["ordered"] == ["stops"] and "ordered" not in declared_tool(tool)
    for wrong in (("fare",), ("nowhere",)):
        with pytest.raises(DeclarationError, match="ordered entry"):
            _route_tool(ordered=wrong)


ROUTE_AGENT = '''
import os
import sqlite3

from handloop import Agent, Tool


def drive(stops: list[str], idempotency_key: str) -> dict:
    """Drive the user along their stops, in this order.

    Args:
        stops: the places, in the order they are visited.
    """
    with sqlite3.connect(os.path.join(os.environ["AGENT_AUDIT_DIR"], "trips.db")) as db:
        db.execute("CREATE TABLE IF NOT EXISTS trips (key TEXT PRIMARY KEY, stops TEXT)")
        db.execute("INSERT OR IGNORE INTO trips VALUES (?, ?)", (idempotency_key, " > ".join(stops)))
    return {"driven": stops}


AGENT = Agent(name="driver", language="en", planning=False, instructions="You drive the user's routes.",
              goal="Drive me from Home to Office, then back from Office to Home.",
              tools=[Tool.from_function(drive, kind="write", takes=("idempotency_key",), effect={"stops": "id"},
                                        ordered=("stops",))])
'''
ROUTES = (["Home", "Office"], ["Office", "Home"])


def route_model(request):
    """Drives each route no tool message says was driven yet, one a turn; then says so."""
    driven = [m for m in request["messages"] if m["role"] == "tool" and "driven" in json.loads(m["content"])]
    if len(driven) < len(ROUTES):
        args = {"stops": ROUTES[len(driven)]}
        return {"content": None, "tool_calls": [{"id": f"call_drive_{len(driven)}", "type": "function",
                                                 "function": {"name": "drive", "arguments": json.dumps(args)}}]}
    return {"content": "Both trips are done."}


def test_a_list_whose_order_is_declared_part_of_the_write_runs_once_per_order(agent_files, tmp_path):
    path, run = agent_files(route_model, "route_agent.py", ROUTE_AGENT)
    for step in (("--run-id", "d"), ("--confirm", "d"), ("--confirm", "d")):
        done = run("--agent", str(path), *step)
        assert done.returncode == 0, done.stdout + done.stderr
    assert read_audit(tmp_path / "audit", "d")["status"] == "done"
    with sqlite3.connect(tmp_path / "audit" / "trips.db") as db:
        assert sorted(db.execute("SELECT stops FROM trips")) == [("Home > Office",), ("Office > Home",)]
    assert run("--agent", str(path), "--check", "--strict", "d").returncode == 0

"""An English IT-helpdesk agent, built from the public API as a new user would: its asset MCP server
(asset_mcp.py, the official SDK) gives `lookup_ticket(email)` and `check_warranty(serial)`; its one write,
`order_laptop(ticket_id, serial, model)`, runs only after "yes, order it" and lands in its own SQLite store.
Planning off. The write's effect is the serial (an id: whatever the field is called) and the model (a
choice: the schema's enum); the ticket and the serial come from lookup_ticket, and the held call shows both.

    python agent.py --agent tests/helpdesk_mcp/it_helpdesk.py          # suspends with the order held
    python agent.py --confirm                                   # orders once

The server runs as a process, or at HELPDESK_ASSETS_URL (bearer token from HELPDESK_ASSETS_TOKEN). Its
offline model is a stateless script of the conversation: it proposes in words, and makes the order's call when
asked for it (a forced tool_choice naming order_laptop, or the user's "yes, order it" while nothing is held);
HELPDESK_SCRIPT picks which call it makes: "order" (what it proposed), "swap" (Alice's serial, Bob's ticket), "bob"
(Alice's ticket, Bob's serial). The store is HELPDESK_DB (default: helpdesk.db in the audit folder).
"""
import json
import os
import sqlite3
import sys

from handloop import Agent, MCPServer, Source, Tool

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["X1-14", "MBA-13", "T14-G5"]


def _db():
    path = os.environ.get("HELPDESK_DB") or os.path.join(os.environ.get("AGENT_AUDIT_DIR") or "audit", "helpdesk.db")
    db = sqlite3.connect(path, timeout=5)
    db.execute("CREATE TABLE IF NOT EXISTS orders (key TEXT PRIMARY KEY, ticket_id TEXT, serial TEXT, model TEXT)")
    return db


def order_laptop(ticket_id, serial, model, idempotency_key):
    with _db() as db:
        db.execute("INSERT OR IGNORE INTO orders VALUES (?, ?, ?, ?)", (idempotency_key, ticket_id, serial, model))
    return {"order_id": "PO-" + idempotency_key[:8].upper(), "ticket_id": ticket_id, "serial": serial, "model": model}


ORDER = Tool(
    "order_laptop", "Order a replacement laptop for a ticket (a write: only after the user confirms).",
    {"type": "object", "required": ["ticket_id", "serial", "model"], "additionalProperties": False,
     "properties": {"ticket_id": {"type": "string"}, "serial": {"type": "string"},
                    "model": {"type": "string", "enum": MODELS}}},
    order_laptop, kind="write", takes=("idempotency_key",), requires=("check_warranty",),
    sources=(Source(("serial",), "lookup_ticket", ("serial",)), Source(("ticket_id",), "lookup_ticket", ("ticket_id",))),
    effect=(("serial", "id"), ("model", "choice")),
    gist=lambda r: f"{r.get('order_id')}: {r.get('model')} for {r.get('ticket_id')} ({r.get('serial')})")

_URL = os.environ.get("HELPDESK_ASSETS_URL")
ASSETS = MCPServer(
    "assets", url=_URL, token_env="HELPDESK_ASSETS_TOKEN" if _URL else None,
    command=None if _URL else [sys.executable, os.path.join(HERE, "asset_mcp.py")],
    tools={"lookup_ticket": ("ticket_id", "serial", "employee", "email"),
           "check_warranty": {"fields": ("serial", "expires", "covered"), "required": ("covered",),
                              "sources": (Source(("serial",), "lookup_ticket", ("serial",)),)}})

ALICE, BOB = "alice@example.com", "bob@example.com"


def respond(request):
    """The offline model: what it does follows from the conversation alone."""
    messages, found, names = request.get("messages") or [], {}, {}
    for m in messages:
        names.update({c["id"]: c["function"]["name"] for c in m.get("tool_calls") or []})
        if m["role"] == "tool" and '"error"' not in m["content"]:
            result = json.loads(m["content"])
            found.setdefault(names.get(m["tool_call_id"]), {})[result.get("email") or result.get("serial")] = result
    users = [m["content"] for m in messages if m["role"] == "user" and m.get("name") != "loop"]
    last = messages[-1] if messages else {}
    if "order_laptop" in found:
        return {"content": "Ordered: " + ", ".join(r["order_id"] for r in found["order_laptop"].values())}
    if "lookup_ticket" not in found:
        return _calls(("lookup_ticket", {"email": ALICE}), ("lookup_ticket", {"email": BOB}))
    alice, bob = found["lookup_ticket"][ALICE], found["lookup_ticket"][BOB]
    if "check_warranty" not in found:
        return _calls(("check_warranty", {"serial": alice["serial"]}))
    if last.get("role") == "tool" and names.get(last["tool_call_id"]) == "order_laptop":    # not run: say so, wait
        return {"content": "The order did not go through; it needs your confirmation: " + last["content"][:300]}
    choice = request.get("tool_choice")
    forced = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    if forced == "order_laptop" or (len(users) > 1 and AGENT.confirms(users[-1])):   # asked for the call: makes it
        script = os.environ.get("HELPDESK_SCRIPT") or "order"
        ticket, serial = {"order": (alice, alice), "swap": (bob, alice), "bob": (alice, bob)}[script]
        return _calls(("order_laptop", {"ticket_id": ticket["ticket_id"], "serial": serial["serial"], "model": "X1-14"}))
    return {"content": f"{alice['employee']}'s laptop {alice['serial']} (ticket {alice['ticket_id']}) is out of "
                       f"warranty. I propose to order an X1-14 for her. Reply 'yes, order it' to go ahead."}


def _calls(*calls):
    return {"content": None, "tool_calls": [{"id": f"call_{i}_{name}", "type": "function", "function": {
        "name": name, "arguments": json.dumps(args)}} for i, (name, args) in enumerate(calls, 1)]}


AGENT = Agent(
    name="helpdesk", language="en", planning=False, tools=[ORDER], mcp=[ASSETS], offline=respond,
    instructions="You are an IT helpdesk assistant. Look up the employee's ticket, check the laptop's warranty, "
                 "then propose one replacement order (ticket, serial, model) in words and wait for the user's reply. "
                 "Order exactly what the user confirmed.",
    goal="Alice (alice@example.com) needs a new laptop; Bob (bob@example.com) asked too. Ask me before ordering.",
    confirm=("yes, order it",))

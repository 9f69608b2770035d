"""An English agent for the trace tests, unlike the Xi'an demo: a desk-booking assistant whose offline model
first answers idly (the loop nudges it), then runs two reads at once (each takes a moment, so the view shows
them side by side), then tries the write before anyone confirmed (the confirmation guard blocks it: the
proposal) and, after the user's "yes", makes it. Its store is DESKS_DB (default: desks.db in AGENT_AUDIT_DIR)."""
import json
import os
import sqlite3
import time

from handloop.agents import Agent
from handloop.calls import Source, Tool

DESKS = [{"desk_id": "D-7", "name": "Window desk", "floor": 3}, {"desk_id": "D-9", "name": "Quiet desk", "floor": 3}]
PAUSE = 0.05                       # seconds each read takes


def _db():
    path = os.environ.get("DESKS_DB") or os.path.join(os.environ.get("AGENT_AUDIT_DIR") or "audit", "desks.db")
    db = sqlite3.connect(path, timeout=5)
    db.execute("CREATE TABLE IF NOT EXISTS bookings (key TEXT PRIMARY KEY, desk_id TEXT, day TEXT)")
    return db


def find_desks(floor):
    time.sleep(PAUSE)
    return {"desks": [d for d in DESKS if d["floor"] == floor]}


def get_floor(floor):
    time.sleep(PAUSE)
    return {"floor": floor, "open": True, "quiet_zone": True}


def reserve_desk(desk_id, day, idempotency_key):
    with _db() as db:
        fresh = db.execute("INSERT OR IGNORE INTO bookings VALUES (?, ?, ?)", (idempotency_key, desk_id, day)).rowcount
    return {"reservation_id": "R-" + idempotency_key[:6].upper(), "desk_id": desk_id, "day": day,
            "replayed": not fresh}


def _object(**props):
    return {"type": "object", "additionalProperties": False, "required": list(props), "properties": props}


DAY = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}
TOOLS = [
    Tool("find_desks", "Desks on a floor.", _object(floor={"type": "integer", "minimum": 1}), find_desks),
    Tool("get_floor", "Whether a floor is open.", _object(floor={"type": "integer", "minimum": 1}), get_floor),
    Tool("reserve_desk", "Reserve a desk for a day (a write: only after the user confirms).",
         _object(desk_id={"type": "string", "minLength": 1}, day=DAY), reserve_desk, kind="write",
         takes=("idempotency_key",), requires=("find_desks",),
         sources=(Source(("desk_id",), "find_desks", ("desk_id",), "desks[]"),),
         effect=(("desk_id", "id"), ("day", "date"))),
]
RESERVE = {"desk_id": "D-9", "day": "2026-12-04"}


def respond(request):
    """The offline model: idle words, two reads at once, the write (blocked, then confirmed), the answer."""
    messages = request.get("messages") or []
    done = {m.get("tool_call_id") for m in messages if m["role"] == "tool" and '"error"' not in m["content"]}
    users = [m["content"] for m in messages if m["role"] == "user" and m.get("name") != "loop"]
    nudged = any(m.get("name") == "loop" for m in messages)
    if any(m["role"] == "tool" and '"reservation_id"' in m["content"] for m in messages):   # made (by whoever)
        return {"content": "Reserved the Quiet desk (D-9) for 2026-12-04."}
    if not nudged and not done:
        return {"content": "I will look into desks for you shortly."}
    if "r1" not in done:
        return _calls(("r1", "find_desks", {"floor": 3}), ("r2", "get_floor", {"floor": 3}))
    if len(users) > 1 and AGENT.confirms(users[-1]):
        return _calls(("w2", "reserve_desk", RESERVE))
    return _calls(("w1", "reserve_desk", RESERVE))


def _calls(*calls):
    return {"content": None, "tool_calls": [{"id": i, "type": "function",
                                             "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in calls]}


AGENT = Agent(
    name="desk-finder", language="en", planning=False, tools=TOOLS, offline=respond,
    instructions="You reserve desks, using only the tools. Find a desk, propose it, and wait for the user's "
                 "confirmation before reserving.",
    goal="Reserve a quiet desk on floor 3 for 2026-12-04. Ask me first.",
    confirm=("yes",))

"""An English agent built only from the public API: a meeting-room assistant. Two reads
(`list_rooms`, `get_calendar`) and one write (`book_room`) that runs only after the user confirms,
whose arguments must come from `list_rooms`, and whose idempotency key its own SQLite store enforces.
Planning off, English throughout, its own prompt and confirm replies, its own offline model.

    python agent.py --agent examples/rooms.py                 # suspends with a proposal
    python agent.py --confirm                                 # a new process: books once
    python agent.py --check                                   # the judge: this agent's rules, from its audit file
    python agent.py --check other.json --agent examples/rooms.py    # another system's transcript, by these rules
The room store is ROOMS_DB (default: rooms.db in the audit folder, AGENT_AUDIT_DIR or ./audit).
"""
import json
import os
import sqlite3

from handloop import Agent, Source, Tool, ToolError

ROOMS = [{"room_id": "R-101", "name": "Oak", "seats": 4}, {"room_id": "R-202", "name": "Maple", "seats": 10}]
BUSY = {("R-101", "2026-12-03"): ["10:00"], ("R-202", "2026-12-03"): []}


def store_path():
    return os.environ.get("ROOMS_DB") or os.path.join(os.environ.get("AGENT_AUDIT_DIR") or "audit", "rooms.db")


def _db():
    os.makedirs(os.path.dirname(os.path.abspath(store_path())), exist_ok=True)
    db = sqlite3.connect(store_path(), timeout=5)
    db.execute("CREATE TABLE IF NOT EXISTS bookings (key TEXT PRIMARY KEY, room_id TEXT, day TEXT, hour TEXT)")
    return db


def list_rooms(seats):
    return {"rooms": [r for r in ROOMS if r["seats"] >= seats]}


def get_calendar(room_id, day):
    if not any(r["room_id"] == room_id for r in ROOMS):
        raise ToolError(f"no room {room_id}")
    return {"room_id": room_id, "day": day, "busy": BUSY.get((room_id, day), [])}


def book_room(room_id, day, hour, idempotency_key):
    if hour in BUSY.get((room_id, day), []):
        raise ToolError(f"{room_id} is busy at {hour} on {day}")
    with _db() as db:
        fresh = db.execute("INSERT OR IGNORE INTO bookings VALUES (?, ?, ?, ?)",
                           (idempotency_key, room_id, day, hour)).rowcount
    return {"booking_id": "MR-" + idempotency_key[:8].upper(), "room_id": room_id, "day": day, "hour": hour,
            "replayed": not fresh}


def find(key):
    with _db() as db:
        row = db.execute("SELECT room_id, day, hour FROM bookings WHERE key = ?", (key,)).fetchone()
    return row and {"booking_id": "MR-" + key[:8].upper(), "room_id": row[0], "day": row[1], "hour": row[2]}


def _object(**props):
    return {"type": "object", "additionalProperties": False, "required": list(props), "properties": props}


TEXT, DAY = {"type": "string", "minLength": 1, "maxLength": 32}, {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}
TOOLS = [
    Tool("list_rooms", "Rooms with at least this many seats.", _object(seats={"type": "integer", "minimum": 1}),
         list_rooms, gist=lambda r: ", ".join(x["name"] for x in r.get("rooms", []))),
    Tool("get_calendar", "The busy hours of a room on a day (YYYY-MM-DD).", _object(room_id=TEXT, day=DAY),
         get_calendar, sources=(Source(("room_id",), "list_rooms", ("room_id",), "rooms[]"),)),
    Tool("book_room", "Book a room for one hour (a write: only after the user confirms).",
         _object(room_id=TEXT, day=DAY, hour={"type": "string", "pattern": r"^\d{2}:00$"}), book_room, kind="write",
         takes=("idempotency_key",), requires=("list_rooms", "get_calendar"),
         sources=(Source(("room_id",), "list_rooms", ("room_id",), "rooms[]"),),
         effect=(("room_id", "id"), ("day", "date"), ("hour", "choice")), reconcile=find,
         gist=lambda r: f"{r.get('room_id')} {r.get('day')} {r.get('hour')} {r.get('booking_id', '')}".strip()),
]


def respond(request):
    """Its offline model: a stateless policy of the loopback endpoint, reading the conversation."""
    messages, done, names = request.get("messages") or [], {}, {}
    for m in messages:
        names.update({c["id"]: c["function"]["name"] for c in m.get("tool_calls") or []})
        if m["role"] == "tool" and '"error"' not in m["content"]:
            done[names.get(m["tool_call_id"])] = json.loads(m["content"])
    users = [m["content"] for m in messages if m["role"] == "user" and m.get("name") != "loop"]
    if "book_room" in done:
        return {"content": f"Booked: {done['book_room']['booking_id']}."}
    if "list_rooms" not in done:
        return _call("list_rooms", seats=6)
    if "get_calendar" not in done:
        return _call("get_calendar", room_id="R-202", day="2026-12-03")
    if isinstance(request.get("tool_choice"), dict) or len(users) > 1 and AGENT.confirms(users[-1]):
        return _call("book_room", room_id="R-202", day="2026-12-03", hour="10:00")     # asked for the call: make it
    if len(users) > 1:
        return {"content": "All right, nothing booked."}
    return {"content": "Maple (R-202) is free on 2026-12-03 at 10:00. Shall I book it? Reply 'confirm'."}


def _call(name, **args):
    return {"content": None, "tool_calls": [{"id": f"call_{name}", "type": "function",
                                             "function": {"name": name, "arguments": json.dumps(args)}}]}


AGENT = Agent(
    name="meeting-rooms", language="en", planning=False, tools=TOOLS, offline=respond,
    instructions="You book meeting rooms, using only the tools. Find a room, check its calendar, then propose "
                 "one booking (room name and id, day, hour) in words and wait for the user's confirmation. "
                 "Book exactly what the user confirmed.",
    goal="Book a room for six people on 2026-12-03 at 10:00. Ask me before booking.",
    confirm=("confirm", "yes, book it"))

"""Writes a small English helpdesk agent into a folder, as a user would lay it out: `desk.py` (the
agent file: AGENT and nothing else) imports `helpdesk`, a module beside it (its tools, its SQLite
store, its offline model). Used by the tests of --agent FILE and of a declaration changed between
suspend and --confirm (tests/test_agent_file.py) and by the installed-package test."""
import os

HELPDESK = r'''
"""The helpdesk's tools, store and offline model: a module beside the agent file."""
import json
import os
import sqlite3

from handloop import Source, Tool, ToolError


def _db():
    folder = os.environ.get("AGENT_AUDIT_DIR") or "audit"
    os.makedirs(folder, exist_ok=True)
    db = sqlite3.connect(os.path.join(folder, "helpdesk.db"), timeout=5)
    db.execute("CREATE TABLE IF NOT EXISTS resets (key TEXT PRIMARY KEY, user_id TEXT)")
    return db


def find_user(email):
    if not email.endswith("@example.com"):
        raise ToolError("no such user: " + email)
    return {"users": [{"user_id": "U-7", "email": email}]}


def reset_password(user_id, idempotency_key):
    import helpdesk_words                     # imported lazily, at call time: still beside the agent file
    with _db() as db:
        db.execute("INSERT OR IGNORE INTO resets VALUES (?, ?)", (idempotency_key, user_id))
    return {"ticket": "T-" + idempotency_key[:6], "user_id": user_id, "note": helpdesk_words.DONE}


def tools(requires=("find_user",), kind="write", sources=True, effect=(("user_id", "id"),)):
    user = {"type": "object", "required": ["user_id"], "properties": {"user_id": {"type": "string"}}}
    write = {"kind": kind}
    if kind == "write":
        write.update(takes=("idempotency_key",), effect=effect)
    else:
        write.update(fn=lambda user_id: {"user_id": user_id})
    return [
        Tool("find_user", "Find a user by email.", {"type": "object", "required": ["email"],
             "properties": {"email": {"type": "string"}}}, find_user),
        Tool("reset_password", "Reset a user's password (a write: only after the user confirms).", user,
             write.pop("fn", reset_password), requires=tuple(requires),
             sources=(Source(("user_id",), "find_user", ("user_id",), "users[]"),) if sources else (), **write),
    ]


def respond(request):
    messages, done, names = request.get("messages") or [], set(), {}
    for m in messages:
        names.update({c["id"]: c["function"]["name"] for c in m.get("tool_calls") or []})
        if m["role"] == "tool" and '"error"' not in m["content"]:
            done.add(names.get(m["tool_call_id"]))
    users = [m["content"] for m in messages if m["role"] == "user" and m.get("name") != "loop"]
    if "reset_password" in done:
        return {"content": "Done: the password of U-7 was reset."}
    if "find_user" not in done:
        return _call("find_user", email="ana@example.com")
    forced = (request.get("tool_choice") or {}) if isinstance(request.get("tool_choice"), dict) else {}
    if len(users) > 1 or forced.get("function", {}).get("name") == "reset_password":
        return _call("reset_password", user_id="U-7")      # asked for the call its words offered, it makes it
    return {"content": "I found U-7 (ana@example.com). Shall I reset the password of U-7? Reply 'confirm'."}


def _call(name, **args):
    return {"content": None, "tool_calls": [{"id": "call_" + name, "type": "function",
                                             "function": {"name": name, "arguments": json.dumps(args)}}]}
'''

DESK = '''
import helpdesk
from handloop import Agent

AGENT = Agent(name="helpdesk", language={language!r}, planning=False, offline=helpdesk.respond,
              tools=helpdesk.tools({tools}),
              instructions="You are an IT helpdesk. Find the user, propose the reset, wait for the confirmation.",
              goal="Reset the password of ana@example.com.", confirm={confirm!r})
'''


def write(folder, confirm=("confirm",), tools="", language="en"):
    """The agent's folder: desk.py (AGENT; `tools`: the arguments of helpdesk.tools()), helpdesk.py
    and helpdesk_words.py beside it. Returns the agent file's path."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "helpdesk.py"), "w", encoding="utf-8") as f:
        f.write(HELPDESK)
    with open(os.path.join(folder, "helpdesk_words.py"), "w", encoding="utf-8") as f:
        f.write('DONE = "reset; the user must choose a new password at the next login"\n')
    path = os.path.join(folder, "desk.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(DESK.format(tools=tools, confirm=tuple(confirm), language=language))
    return path


def resets(audit_dir):
    """The rows of the helpdesk's store: one per real reset."""
    import sqlite3
    path = os.path.join(audit_dir, "helpdesk.db")
    if not os.path.exists(path):
        return []
    with sqlite3.connect(path) as db:
        return db.execute("SELECT user_id FROM resets").fetchall()

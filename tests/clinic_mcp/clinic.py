"""A clinic front-desk agent, from the public API: its own MCP server (clinic_mcp.py, the official SDK) answers
with nested records, which reach the model cut to the declared paths (`slots[].slot_id`); its one write,
`book_appointment(patient_id, slot_id)`, takes the slot from a `list_slots` record (Source path "slots[]") and
the patient from `find_patient`'s "patient" object, and runs only once the user confirms the call shown.

    python agent.py --agent tests/clinic_mcp/clinic.py      # looks up, proposes the booking, waits
    python agent.py --confirm                               # books once

The server runs as a process, or at CLINIC_URL. The offline model is a script of the conversation;
CLINIC_SCRIPT "invent" makes it book a slot no listing gave (S-2359). The store is clinic.db in the audit folder.
"""
import json
import os
import sqlite3
import sys

from handloop import Agent, MCPServer, Source, Tool

HERE = os.path.dirname(os.path.abspath(__file__))


def book_appointment(patient_id: str, slot_id: str, idempotency_key: str) -> dict:
    """Book a slot for a patient (a write: only after the user confirms)."""
    path = os.path.join(os.environ.get("AGENT_AUDIT_DIR") or "audit", "clinic.db")
    with sqlite3.connect(path, timeout=5) as db:
        db.execute("CREATE TABLE IF NOT EXISTS visits (key TEXT PRIMARY KEY, patient_id TEXT, slot_id TEXT)")
        db.execute("INSERT OR IGNORE INTO visits VALUES (?, ?, ?)", (idempotency_key, patient_id, slot_id))
    return {"appointment_id": "A-" + idempotency_key[:6], "patient_id": patient_id, "slot_id": slot_id}


BOOK = Tool.from_function(book_appointment, kind="write", takes=("idempotency_key",),
                          effect={"slot_id": "id", "patient_id": "id"},
                          sources=[Source.of("list_slots", "slot_id", path="slots[]"),
                                   Source.of("find_patient", "patient_id", path="patient")])
URL = os.environ.get("CLINIC_URL")
CLINIC = MCPServer("clinic", url=URL, command=None if URL else [sys.executable, os.path.join(HERE, "clinic_mcp.py")],
                   tools={"find_patient": ("patient.patient_id", "patient.name"),
                          "list_slots": {"fields": ("doctor", "date", "slots[].slot_id", "slots[].start"),
                                         "required": ("slots[].slot_id",)}})


def respond(request):
    """The offline model: each step follows from the conversation alone."""
    messages, results, names = request["messages"], {}, {}
    for m in messages:
        names.update({c["id"]: c["function"]["name"] for c in m.get("tool_calls") or []})
        if m["role"] == "tool":
            results.setdefault(names[m["tool_call_id"]], []).append(json.loads(m["content"]))
    if "find_patient" not in results:
        return _calls(("find_patient", {"name": "Ana Lopez"}), ("list_slots", {"doctor": "Kim", "date": "2026-12-04"}),
                      ("list_slots", {"doctor": "Kim", "date": "2026-12-05"}))
    booked = results.get("book_appointment", [])
    if booked:
        return {"content": booked[-1].get("appointment_id") and f"Booked {booked[-1]['appointment_id']}."
                or "The booking did not go through: " + json.dumps(booked[-1])[:200]}
    slot = "S-2359" if os.environ.get("CLINIC_SCRIPT") == "invent" else results["list_slots"][0]["slots"][0]["slot_id"]
    return _calls(("book_appointment", {"patient_id": results["find_patient"][0]["patient"]["patient_id"],
                                        "slot_id": slot}))


def _calls(*calls):
    return {"content": None, "tool_calls": [{"id": f"call_{len(calls)}_{i}", "type": "function", "function": {
        "name": name, "arguments": json.dumps(args)}} for i, (name, args) in enumerate(calls)]}


AGENT = Agent("clinic", "You are a clinic's front desk. Find the patient and the doctor's free slots, then book "
              "one slot once the user confirms.", [BOOK], goal="Book Ana Lopez a checkup with Dr. Kim on 2026-12-04.",
              language="en", planning=False, mcp=[CLINIC], offline=respond, confirm=("yes, book it",))

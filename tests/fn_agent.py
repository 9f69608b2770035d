"""A clinic front desk built only from plain functions (Tool.from_function, Source.of, effect by keywords), for the
tests of tools from functions (tests/test_from_function.py): find_patient and list_slots read (list_slots gives
nested records, its slots a list), book_appointment writes into its own SQLite file (CLINIC_DB, default
clinic.db in the working folder) once the user confirmed. Its offline model is a scripted policy reading the
conversation (tests/policies.py): both reads, a proposal in words, the booking's call when the loop asks for it
(held for the user), the answer after the confirmation ran it."""
import os
import sqlite3
from typing import Literal

from handloop import Agent, Source, Tool, ToolError
from policies import Talk, calls, forced_tool, say

PATIENTS = {"Ana Lopez": "P-17"}
SLOTS = [{"slot_id": "S-0900", "start": "09:00", "visit_type": "checkup"},
         {"slot_id": "S-1030", "start": "10:30", "visit_type": "cleaning"}]


def find_patient(name: str) -> dict:
    """Find a patient by full name.

    Args:
        name: The patient's full name, as the user wrote it.
    """
    if name not in PATIENTS:
        raise ToolError(f"no patient named {name}: ask the user to spell the name")
    return {"patient_id": PATIENTS[name], "name": name}


def list_slots(doctor: str, date: str) -> dict:
    """The free slots of a doctor on a day.

    Args:
        doctor: The doctor's name, e.g. Dr. Kim.
        date: The day, YYYY-MM-DD.
    """
    return {"doctor": doctor, "date": date, "slots": SLOTS}


def book_appointment(patient_id: str, slot_id: str, visit: Literal["checkup", "cleaning"],
                     idempotency_key: str) -> dict:
    """Book a slot for a patient (a write: only after the user confirms).

    Args:
        patient_id: The patient's id, from find_patient.
        slot_id: The slot's id, from list_slots.
        visit: The kind of visit.
    """
    with sqlite3.connect(os.environ.get("CLINIC_DB", "clinic.db")) as db:
        db.execute("CREATE TABLE IF NOT EXISTS visits (key TEXT PRIMARY KEY, patient_id TEXT, slot_id TEXT, visit TEXT)")
        db.execute("INSERT OR IGNORE INTO visits VALUES (?, ?, ?, ?)", (idempotency_key, patient_id, slot_id, visit))
    return {"appointment_id": "AP-" + slot_id, "patient_id": patient_id, "slot_id": slot_id, "visit": visit}


TOOLS = [Tool.from_function(find_patient), Tool.from_function(list_slots),
         Tool.from_function(book_appointment, kind="write", takes="idempotency_key",
                            requires=("find_patient", "list_slots"),
                            effect={"patient_id": "id", "slot_id": "id", "visit": "choice"},
                            sources=[Source.of("find_patient", "patient_id"),
                                     Source.of("list_slots", "slot_id", path="slots[]")])]
BOOK = {"patient_id": "P-17", "slot_id": "S-0900", "visit": "checkup"}


def offline(request):
    """Both reads at once, the proposal in words, the booking's call when asked for it (a forced tool_choice naming
    it, or the user's yes while nothing is held), the answer."""
    talk = Talk(request)
    if talk.ok("book_appointment"):
        return say("Booked: Ana Lopez, a checkup with Dr. Kim at 09:00 (slot S-0900).")
    if not talk.ok("find_patient"):
        return calls(("find_patient", {"name": "Ana Lopez"}), ("list_slots", {"doctor": "Dr. Kim", "date": "2026-11-03"}))
    if forced_tool(request) == "book_appointment" or (talk.reply and AGENT.confirms(talk.reply)):
        return calls(("book_appointment", BOOK))
    return say("Ana Lopez (P-17) can have a checkup with Dr. Kim at 09:00 (slot S-0900). Shall I book it?")


AGENT = Agent(name="clinic", language="en", planning=False, tools=TOOLS, offline=offline, confirm=("yes",),
              goal="Book Ana Lopez a checkup with Dr. Kim on 2026-11-03, the earliest slot.",
              instructions="You are a clinic front desk. Use the tools; propose a booking in words and book only "
                           "after the user confirms.")

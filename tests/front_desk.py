"""A clinic front desk over local tools (test_refusals.py), whose scripted model ends with the answer DESK_ANSWER
names after its reads: "one" proposes one slot in words, "two" names two slots, "none" names no slot, "claim" says
it booked S-0900 (it booked nothing), "book" calls the booking of S-0900, "cancel" cancels appointment A-7 (its
result: {"status": "cancelled"}). DESK_SOURCE
"get" sources `slot_id` from `get_slot` (which the model never calls: no read produced a slot), else from the
records of `list_slots` ("both": from both, which must both hold); DESK_LANG "zh" makes it a Chinese agent."""
import json
import os

from handloop import Agent, Source, Tool

SLOTS = [{"slot_id": "S-0900", "start": "09:00"}, {"slot_id": "S-1030", "start": "10:30"}]


def find_patient(name: str) -> dict:
    """A patient by name."""
    return {"patient": {"patient_id": "P-17", "name": name}}


def list_slots(doctor: str, date: str) -> dict:
    """A doctor's free slots on a day."""
    return {"doctor": doctor, "date": date, "slots": SLOTS}


def list_appointments(patient_id: str) -> dict:
    """A patient's appointments."""
    return {"patient_id": patient_id, "appointments": [{"appointment_id": "A-7", "slot_id": "S-0900"}]}


def cancel_appointment(appointment_id: str) -> dict:
    """Cancel an appointment (a write: only after the user confirms)."""
    return {"appointment_id": appointment_id, "status": "cancelled"}


def get_slot(slot_id: str) -> dict:
    """One slot by its id."""
    return next(s for s in SLOTS if s["slot_id"] == slot_id)


def book_appointment(patient_id: str, slot_id: str) -> dict:
    """Book a slot for a patient (a write: only after the user confirms)."""
    return {"appointment_id": "A-1", "patient_id": patient_id, "slot_id": slot_id}


LISTED, GOT = Source.of("list_slots", "slot_id", path="slots[]"), Source.of("get_slot", "slot_id")
SLOT = {"get": [GOT], "both": [LISTED, GOT]}.get(os.environ.get("DESK_SOURCE", ""), [LISTED])
TOOLS = [Tool.from_function(find_patient), Tool.from_function(list_slots), Tool.from_function(get_slot),
         Tool.from_function(book_appointment, kind="write", effect={"patient_id": "id", "slot_id": "id"},
                            sources=[Source.of("find_patient", "patient_id", path="patient"), *SLOT]),
         Tool.from_function(list_appointments), Tool.from_function(cancel_appointment, kind="write",
         effect={"appointment_id": "id"}, sources=[Source.of("list_appointments", "appointment_id", path="appointments[]")])]
ZH = os.environ.get("DESK_LANG") == "zh"
ANSWERS = {"one": "Ana Lopez (P-17) can have a checkup with Dr. Kim at 09:00 (slot S-0900). Shall I book it?",
           "two": "Ana Lopez (P-17) can see Dr. Kim at 09:00 (S-0900) or at 10:30 (S-1030). Shall I book one?",
           "none": "Ana Lopez (P-17) can see Dr. Kim in the morning. Shall I book it?",
           "claim": "I have booked Ana Lopez (P-17) with Dr. Kim at 09:00 (slot S-0900)."}
ANSWERS_ZH = {"two": "Ana Lopez（P-17）可以约 Kim 医生 09:00（S-0900）或 10:30（S-1030），要订哪个？",
              "one": "Ana Lopez（P-17）可以约 Kim 医生 09:00 的号（S-0900），要帮您预约吗？",
              "claim": "已为您预订了 Kim 医生 09:00 的号（S-0900），患者 Ana Lopez（P-17）。"}


def offline(request):
    if os.environ.get("DESK_ANSWER") == "cancel":
        return cancelling(request)
    if os.environ.get("DESK_ANSWER") == "book" and any(m["role"] == "tool" for m in request["messages"]):
        return {"tool_calls": [call("book_appointment", patient_id="P-17", slot_id="S-0900")]}
    if any(m["role"] == "tool" for m in request["messages"]):
        return {"content": (ANSWERS_ZH if ZH else ANSWERS)[os.environ.get("DESK_ANSWER", "one")]}
    return {"tool_calls": [call("find_patient", name="Ana Lopez"), call("list_slots", doctor="Kim", date="2026-12-04")]}


def cancelling(request):
    """Cancel Ana's one appointment: look it up, propose it in words, call the cancel when asked for it (a forced
    tool_choice naming it) or once the user replied, report."""
    messages, choice = request["messages"], request.get("tool_choice")
    said = " ".join(m["content"] for m in messages if m["role"] == "tool")
    if '"cancelled"' in said:
        return {"content": "Appointment A-7 is cancelled."}
    if "A-7" not in said:
        return {"tool_calls": [call("list_appointments", patient_id="P-17")]}
    forced = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    if forced == "cancel_appointment" or [m for m in messages if m["role"] == "user" and m.get("name") != "loop"][1:]:
        return {"tool_calls": [call("cancel_appointment", appointment_id="A-7")]}
    return {"content": "Ana Lopez has appointment A-7 at 09:00. Shall I cancel appointment A-7?"}


def call(tool, **args):
    return {"id": "call-" + tool, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}


AGENT = Agent(name="desk", language="zh" if ZH else "en", planning=False, tools=TOOLS, offline=offline,
              confirm=("yes, book it",), goal="Book Ana Lopez a checkup with Dr. Kim on 2026-12-04.",
              instructions="You are a clinic's front desk. Find the patient and the slots, then propose one slot.")

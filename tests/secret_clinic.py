"""A clinic agent whose tools say private things, for the secrets tests (issue 36): `find_patient(name)` finds
Ann Smith (patient P-77120), `check_account(account)` fails with a ToolError that names the account and its
holder, and the write `admit(patient_id, ward)` takes its patient id only from find_patient (its offline model
invents P-99999, which the provenance guard blocks, its reason quoting both ids). SECRET_LANG picks its language:
"en" (default) or "zh". The account, the names and the ids are what no span may carry without the opt-in."""
import json
import os

from handloop import Agent, Source, Tool, ToolError

LANG = os.environ.get("SECRET_LANG") or "en"
PATIENT = {"patient_id": "P-77120", "name": "Ann Smith"}
ACCOUNT = "55-1234"
INVENTED = "P-99999"
PRIVATE = ("Ann Smith", ACCOUNT, PATIENT["patient_id"], INVENTED)      # what must not leave without the opt-in


def find_patient(name):
    return {"patients": [PATIENT] if name == PATIENT["name"] else []}


def check_account(account):
    raise ToolError({"en": f"billing is closed for account {account} of {PATIENT['name']}",
                     "zh": f"{PATIENT['name']} 的账户 {account} 已停止结算"}[LANG])


def admit(patient_id, ward, idempotency_key):
    return {"admission": "A-" + idempotency_key[:6], "patient_id": patient_id, "ward": ward}


def _object(**props):
    return {"type": "object", "additionalProperties": False, "required": list(props), "properties": props}


TOOLS = [
    Tool("find_patient", "Find a patient by name.", _object(name={"type": "string"}), find_patient),
    Tool("check_account", "Check a billing account.", _object(account={"type": "string"}), check_account),
    Tool("admit", "Admit a patient to a ward (a write: only after the user confirms).",
         _object(patient_id={"type": "string"}, ward={"type": "string"}), admit, kind="write",
         takes=("idempotency_key",), sources=(Source(("patient_id",), "find_patient", ("patient_id",), "patients[]"),),
         effect=(("patient_id", "id"), ("ward", "choice"))),
]


def respond(request):
    """Both reads at once, then the write with an invented id (blocked), then words."""
    messages = request.get("messages") or []
    called = {c["function"]["name"] for m in messages for c in m.get("tool_calls") or []}
    if "find_patient" not in called:
        return _calls(("r1", "find_patient", {"name": PATIENT["name"]}), ("r2", "check_account", {"account": ACCOUNT}))
    if "admit" not in called:
        return _calls(("w1", "admit", {"patient_id": INVENTED, "ward": "B"}))
    return {"content": {"en": "I could not admit the patient: the id was wrong. Shall I try again?",
                        "zh": "没能办理入院：编号不对。要再试一次吗？"}[LANG]}


def _calls(*calls):
    return {"content": None, "tool_calls": [{"id": i, "type": "function",
                                             "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in calls]}


AGENT = Agent(
    name="clinic", language=LANG, planning=False, tools=TOOLS, offline=respond,
    instructions={"en": "You admit patients, using only the tools, after the user confirms.",
                  "zh": "你只用工具办理入院，用户确认后才办。"}[LANG],
    goal={"en": "Admit Ann Smith (account 55-1234) to ward B.", "zh": "给 Ann Smith（账户 55-1234）办理入院，B 病区。"}[LANG],
    confirm={"en": ("yes",), "zh": ("确认",)}[LANG])

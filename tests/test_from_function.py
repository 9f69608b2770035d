"""Tools from plain functions (Tool.from_function, handloop/signature.py): the JSON Schema each supported type hint
gives, the docstring read (description, Args:, Attributes:), a clear declaration error for everything else, the
loop's own parameters kept from the model, async functions and dataclass arguments; sources and effects written
by keywords (Source.of, effect={...}); an agent made only of functions driven through the command line by a scripted
model, confirmed once, writing once; the public errors caught by name; handloop.__version__."""
import asyncio
import dataclasses
import datetime
import enum
import inspect
import json
import os
import sqlite3
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict

import pytest

import handloop
from handloop import Agent, DeclarationError, Source, Tool, ToolError, calls, signature, values
from conftest import ROOT, read_audit, run_agent

FN_AGENT = os.path.join(ROOT, "tests", "fn_agent.py")
EMPTY = inspect.Parameter.empty


def _parameters(hint, default=EMPTY, **declared):
    """The schema Tool.from_function reads from `def look(x: hint = default)`."""
    def look(x):
        """Look something up."""
        return {"x": x}
    look.__annotations__ = {"x": hint}
    if default is not EMPTY:
        look.__defaults__ = (default,)
    return Tool.from_function(look, **declared).parameters


class Slot(TypedDict):
    """A free slot.

    Attributes:
        slot_id: Its id, as the clinic gives it.
    """
    slot_id: str
    start: str


class Partial(TypedDict, total=False):
    note: str


class WithOptional(TypedDict):
    slot_id: str
    note: NotRequired[str]
    room: str | None


@dataclasses.dataclass
class Patient:
    """A patient."""
    name: str
    age: int = 0


@dataclasses.dataclass
class Visit:
    patient: Patient
    slots: list[Patient]


SLOT = {"type": "object", "properties": {"slot_id": {"type": "string", "description": "Its id, as the clinic gives it."},
                                         "start": {"type": "string"}},
        "required": ["slot_id", "start"], "additionalProperties": False, "description": "A free slot."}
PATIENT = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "default": 0}},
           "required": ["name"], "additionalProperties": False, "description": "A patient."}


@pytest.mark.parametrize("hint, schema", [
    (str, {"type": "string"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
    (Literal["checkup", "cleaning"], {"type": "string", "enum": ["checkup", "cleaning"]}),
    (Literal[1, 2, 3], {"type": "integer", "enum": [1, 2, 3]}),
    (Literal[True], {"type": "boolean", "enum": [True]}),
    (list, {"type": "array"}),
    (list[int], {"type": "array", "items": {"type": "integer"}}),
    (list[list[str]], {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}),
    (dict, {"type": "object"}),
    (dict[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),
    (Slot, SLOT),
    (list[Slot], {"type": "array", "items": SLOT}),
    (Partial, {"type": "object", "properties": {"note": {"type": "string"}}, "additionalProperties": False}),
    (WithOptional, {"type": "object", "properties": {"slot_id": {"type": "string"}, "note": {"type": "string"},
                                                     "room": {"type": "string"}},
                    "required": ["slot_id"], "additionalProperties": False}),
    (Patient, PATIENT),
    (Annotated[int, "Nights, 1 to 14", {"minimum": 1, "maximum": 14}],
     {"type": "integer", "description": "Nights, 1 to 14", "minimum": 1, "maximum": 14}),
])
def test_each_supported_hint_becomes_its_json_schema(hint, schema):
    assert _parameters(hint) == {"type": "object", "properties": {"x": schema}, "required": ["x"],
                                 "additionalProperties": False}


@pytest.mark.parametrize("hint, default, schema", [
    (int, 2, {"type": "integer", "default": 2}),
    (str, "", {"type": "string", "default": ""}),
    (Optional[int], None, {"type": "integer"}),
    (str | None, None, {"type": "string"}),
    (list[str] | None, None, {"type": "array", "items": {"type": "string"}}),
    (Annotated[int | None, {"minimum": 1}], None, {"type": "integer", "minimum": 1}),
    (int, "two", {"type": "integer"}),                       # a default the schema refuses is not shown
    (Patient, Patient("Ana"), PATIENT),                      # nor one JSON cannot write
])
def test_a_default_or_an_optional_hint_makes_an_argument_not_required(hint, default, schema):
    assert _parameters(hint, default) == {"type": "object", "properties": {"x": schema}, "additionalProperties": False}


def _booking(slot_id: str, visit: Literal["checkup", "cleaning"], nights: Annotated[int, "How many nights."] = 1,
             note: str | None = None, **rest: Any) -> dict:
    """Book a slot for a patient.

    Only after the user
    confirmed it.

    Args:
        slot_id (str): The slot's id,
            as list_slots gave it.
        visit: The kind of visit.
        nights: Read from Annotated instead.

    Returns:
        The receipt: appointment_id, slot_id.

    Raises:
        ToolError: when the slot is taken.
    """
    return {"slot_id": slot_id}


def test_the_docstring_gives_the_description_and_each_arguments_description():
    tool = Tool.from_function(_booking)
    assert tool.name == "_booking"
    assert tool.description == "Book a slot for a patient.\nOnly after the user confirmed it."
    props = tool.parameters["properties"]
    assert props["slot_id"] == {"type": "string", "description": "The slot's id, as list_slots gave it."}
    assert props["visit"] == {"type": "string", "enum": ["checkup", "cleaning"], "description": "The kind of visit."}
    assert props["nights"] == {"type": "integer", "description": "How many nights.", "default": 1}   # Annotated's text
    assert props["note"] == {"type": "string"} and tool.parameters["required"] == ["slot_id", "visit"]
    assert "rest" not in props and "Returns" not in tool.description and "ToolError" not in json.dumps(tool.parameters)


def test_the_docstring_reader_on_its_own():
    text, entries = signature.docstring("""Summary line.

        Second paragraph,
        two lines.

        Args:
            a: First.
            b (list[str]): Second,
                continued: still b.
            *args: Ignored.
            **kwargs: Ignored too.

        Attributes:
            c: A field.

        Example:
            a: not an entry
        """)
    assert text == "Summary line.\nSecond paragraph, two lines."
    assert entries == {"a": "First.", "b": "Second, continued: still b.", "c": "A field."}
    assert signature.docstring(None) == ("", {}) and signature.docstring("Note: not a section.")[0] == "Note: not a section."


def test_name_and_description_may_be_given_and_the_tool_is_checked_as_any_tool():
    tool = Tool.from_function(_booking, name="book_slot", description="Book it.", kind="write",
                              effect={"slot_id": "id", "visit": "choice"}, takes=(), timeout=5, aliases={"checkup": ["check-up"]})
    assert (tool.name, tool.description, tool.kind, tool.timeout) == ("book_slot", "Book it.", "write", 5)
    assert tool.effect == (("slot_id", "id"), ("visit", "choice")) and tool.aliases == {"checkup": ["check-up"]}
    with pytest.raises(DeclarationError, match=r"tool 'book_slot'.*effect entry \('room', 'id'\)"):
        Tool.from_function(_booking, name="book_slot", kind="write", effect={"room": "id"})
    with pytest.raises(DeclarationError, match=r"from_function takes no 'parameters' \(a hand-written schema: use Tool"):
        Tool.from_function(_booking, parameters={"type": "object", "properties": {}})
    with pytest.raises(DeclarationError, match="from_function takes no 'colour'"):
        Tool.from_function(_booking, colour="red")


class _Weather:
    """The weather of a city."""

    def __call__(self, city: str) -> dict:
        return {"city": city}

    def lookup(self, city: str, days: int = 1) -> dict:
        """Look the forecast up."""
        return {"city": city}


def test_a_method_a_callable_object_and_a_partial_are_read_too():
    import functools
    method = Tool.from_function(_Weather().lookup)
    assert (method.name, method.description) == ("lookup", "Look the forecast up.")
    assert method.parameters["properties"] == {"city": {"type": "string"}, "days": {"type": "integer", "default": 1}}
    with pytest.raises(DeclarationError, match="fn has no __name__: give name="):
        Tool.from_function(_Weather())
    called = Tool.from_function(_Weather(), name="weather")
    assert called.description == "The weather of a city." and called.parameters["required"] == ["city"]
    partial = Tool.from_function(functools.partial(_booking, visit="checkup"), name="checkup")
    assert partial.description.startswith("Book a slot") and partial.parameters["required"] == ["slot_id"]


def _no_hint(x):
    """Look."""


def _stars(*names: str):
    """Look."""


def _positional(x: str, /):
    """Look."""


def _key(order_id: str, idempotency_key: str):
    """Refund."""


def _stale(order_id: str):
    """Refund.

    Args:
        order: The order.
    """


def _undocumented(order_id: str):
    return {}


def _forward(x: "Nowhere"):  # noqa: F821
    """Look."""


@dataclasses.dataclass
class Node:
    child: "Node | None" = None


class Colour(enum.Enum):
    RED = "red"


@pytest.mark.parametrize("make, words", [
    (lambda: _parameters(datetime.date), "parameter 'x': datetime.date is not supported (use one of str, int"),
    (lambda: _parameters(Any), "parameter 'x': Any is not supported"),
    (lambda: _parameters(tuple[int, int]), "parameter 'x': tuple[int, int] is not supported"),
    (lambda: _parameters(set[str]), "parameter 'x': set[str] is not supported"),
    (lambda: _parameters(Colour), "parameter 'x': test_from_function.Colour is not supported"),
    (lambda: _parameters(int | str), "parameter 'x': int | str: a union is not supported"),
    (lambda: _parameters(dict[int, str]), "parameter 'x': dict[int, str]: the keys of a JSON object are strings"),
    (lambda: _parameters(Literal["a", 1]), "parameter 'x': Literal['a', 1]: its values must be all strings"),
    (lambda: _parameters(list[datetime.date]), "parameter 'x': datetime.date is not supported"),
    (lambda: _parameters(Optional[int]), "parameter 'x': Optional[int] may be left out, so it needs a default"),
    (lambda: _parameters(Annotated[int, object()]), "parameter 'x': Annotated metadata <object"),
    (lambda: _parameters(Node), "Node.child: test_from_function.Node contains itself"),
    (lambda: Tool.from_function(_no_hint), "parameter 'x' has no type hint"),
    (lambda: Tool.from_function(_stars), "parameter 'names' is *names: a tool is called with its arguments by name"),
    (lambda: Tool.from_function(_positional), "parameter 'x' is positional-only"),
    (lambda: Tool.from_function(_key, kind="write", effect={"order_id": "id"}),
     "parameter 'idempotency_key' is supplied by the loop, never by the model: add takes=('idempotency_key',)"),
    (lambda: Tool.from_function(_stale), "the docstring's Args: names 'order', which is not a parameter of fn"),
    (lambda: Tool.from_function(_undocumented), "fn has no docstring"),
    (lambda: Tool.from_function(_forward), "parameter 'x': its type hint cannot be read (NameError"),
    (lambda: Tool.from_function(lambda order_id: {}), "tool '<lambda>'"),
])
def test_an_unsupported_function_is_a_declaration_error_naming_the_tool_and_the_parameter(make, words):
    with pytest.raises(DeclarationError) as info:
        make()
    assert isinstance(info.value, ValueError) and isinstance(info.value, handloop.HandloopError)
    assert words in str(info.value)
    assert str(info.value).startswith("tool '")


def _nested(depth):
    hint = int
    for _ in range(depth):
        hint = list[hint]
    return hint


@dataclasses.dataclass
class Unparsed:
    when: "list["  # noqa: F722


@pytest.mark.parametrize("hint, words", [
    (dict[str], "parameter 'x': dict[str]: a dict hint names its keys and its values"),
    (dict[str, int, int], "parameter 'x': dict[str, int, int]: a dict hint names its keys and its values"),
    (list[int, str], "parameter 'x': list[int, str]: a list holds one type of item"),
    ("list[", "parameter 'x': its type hint cannot be read (SyntaxError"),
    ("x = 1", "parameter 'x': its type hint cannot be read (SyntaxError"),
    ("1 / 0", "parameter 'x': its type hint cannot be read (ZeroDivisionError"),
    ("list[" * 3000 + "int" + "]" * 3000, "parameter 'x': its type hint cannot be read ("),
    (_nested(3000), "parameter 'x': its type hint cannot be read (RecursionError"),
    (Unparsed, "parameter 'x': test_from_function.Unparsed's type hints cannot be resolved (SyntaxError"),
])
def test_a_hint_that_breaks_when_read_is_a_declaration_error_naming_the_tool_and_the_parameter(hint, words):
    # issue 48, finding 6: IndexError, SyntaxError, RecursionError... were raised as they came
    with pytest.raises(DeclarationError) as info:
        _parameters(hint)
    assert str(info.value).startswith("tool 'look': ") and words in str(info.value)
    assert "has no type hint" not in str(info.value)        # one problem per parameter, the one that explains


def test_the_parameters_the_loop_supplies_are_never_shown_to_the_model():
    def add_note(user_id: str, body: str, run_id: str, idempotency_key: str) -> dict:
        """Add a note to a user.

        Args:
            user_id: The user's id.
            idempotency_key: Made by the loop.
        """
        return {"user_id": user_id}
    tool = Tool.from_function(add_note, kind="write", takes=("run_id", "idempotency_key"), effect={"user_id": "id"})
    assert list(tool.parameters["properties"]) == ["user_id", "body"] and tool.parameters["required"] == ["user_id", "body"]
    assert tool.takes == ("run_id", "idempotency_key") and tool.fn is add_note
    assert "idempotency_key" not in json.dumps(tool.spec())


def test_an_async_function_stays_async_and_a_dataclass_argument_arrives_built():
    async def admit(visit: Visit, ward: str = "A") -> dict:
        """Admit a patient."""
        return {"visit": visit, "ward": ward}
    tool = Tool.from_function(admit)
    assert inspect.iscoroutinefunction(tool.fn) and inspect.signature(tool.fn) == inspect.signature(admit)
    got = asyncio.run(tool.fn(visit={"patient": {"name": "Ana"}, "slots": [{"name": "Bo", "age": 3}]}))
    assert got == {"visit": Visit(Patient("Ana"), [Patient("Bo", 3)]), "ward": "A"}

    def plain(patient: Patient, others: dict[str, Patient] | None = None) -> dict:
        """Look."""
        return {"patient": patient, "others": others}
    built = Tool.from_function(plain)
    assert not inspect.iscoroutinefunction(built.fn)
    assert built.fn(patient={"name": "Ana"}, others={"x": {"name": "Bo"}}) == \
        {"patient": Patient("Ana"), "others": {"x": Patient("Bo")}}
    assert Tool.from_function(_booking).fn is _booking       # nothing to build: the function itself


def test_the_validator_checks_the_values_of_a_dict_argument():
    schema = _parameters(dict[str, int])
    assert values.validate(schema, {"x": {"a": 1}}) == []
    assert values.validate(schema, {"x": {"a": "one"}}, say=handloop.Agent("a", "p", [], language="en").say)
    assert values.validate(schema, {"x": {}, "y": 1})                  # no argument outside the schema


def test_a_source_by_keywords_is_the_source_written_in_full():
    assert Source.of("get_order", "order_id") == Source(("order_id",), "get_order", ("order_id",))
    assert Source.of("list_slots", "slot_id", path="slots[]") == Source(("slot_id",), "list_slots", ("slot_id",), "slots[]")
    assert Source.of("rooms", {"room_id": "id"}) == Source(("room_id",), "rooms", ("id",))
    assert Source.of("locate", "latitude", "longitude", near=True) == \
        Source(("latitude", "longitude"), "locate", ("latitude", "longitude"), near=True)
    assert Source(["a"], "t", ["b"]) == Source(("a",), "t", ("b",))


@pytest.mark.parametrize("make, words", [
    (lambda: Source.of("get_order"), "args must be a non-empty list of names"),
    (lambda: Source(("a",), "t", ("b", "c")), "args ['a'] and fields ['b', 'c'] must be as many"),
    (lambda: Source(("a",), "", ("a",)), "tool must be the name"),
    (lambda: Source.of("t", "a", path=None), "path=None must be a dotted path"),
    (lambda: Source.of("t", "a", near="yes"), "near='yes' must be True or False"),
])
def test_a_mistaken_source_is_a_declaration_error(make, words):
    with pytest.raises(DeclarationError, match="source ") as info:
        make()
    assert words in str(info.value)


def test_an_effect_by_keywords_is_the_effect_written_as_pairs():
    schema = {"type": "object", "properties": {"order_id": {"type": "string"}, "size": {"type": "string", "enum": ["S"]}}}

    def refund(order_id, size, idempotency_key):
        return {}
    by_keywords = Tool("refund", "Refund.", schema, refund, kind="write", takes="idempotency_key",
                       effect={"order_id": "id", "size": "choice"}, sources=Source.of("get_order", "order_id"))
    as_pairs = Tool("refund", "Refund.", schema, refund, kind="write", takes=("idempotency_key",),
                    effect=(("order_id", "id"), ("size", "choice")),
                    sources=(Source(("order_id",), "get_order", ("order_id",)),))
    assert by_keywords == as_pairs and calls.declared_tool(by_keywords) == calls.declared_tool(as_pairs)


# ---- an agent made only of functions, through the command line ----

def _visits(folder):
    with sqlite3.connect(os.path.join(folder, "clinic.db")) as db:
        return db.execute("SELECT patient_id, slot_id, visit FROM visits").fetchall()


def test_an_agent_of_functions_reads_proposes_is_confirmed_and_writes_once(tmp_path):
    first = run_agent("--agent", FN_AGENT, "--run-id", "c1", cwd=str(tmp_path))
    assert first.returncode == 0, first.stderr
    snap = read_audit(str(tmp_path / "audit"), "c1")
    assert (snap["status"], snap["reason"]) == ("suspended", "awaiting_confirmation")
    assert not (tmp_path / "clinic.db").exists()
    shown = {t["function"]["name"]: t["function"] for t in snap["tools"]}
    book = shown["book_appointment"]
    assert book["description"] == "Book a slot for a patient (a write: only after the user confirms)."
    assert book["parameters"]["properties"]["visit"]["enum"] == ["checkup", "cleaning"]
    assert list(book["parameters"]["properties"]) == ["patient_id", "slot_id", "visit"]      # no idempotency_key
    declared = snap["agent"]["tools"]["book_appointment"]
    assert declared["effect"] == [["patient_id", "id"], ["slot_id", "id"], ["visit", "choice"]]
    assert {"args": ["slot_id"], "tool": "list_slots", "fields": ["slot_id"], "path": "slots[]", "near": False} \
        in declared["sources"]

    done = run_agent("--confirm", cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    snap = read_audit(str(tmp_path / "audit"), "c1")
    assert snap["status"] == "done" and _visits(tmp_path) == [("P-17", "S-0900", "checkup")]
    receipts = [json.loads(m["content"]) for m in snap["messages"] if m["role"] == "tool"
                and "appointment_id" in m["content"]]
    assert receipts == [{"appointment_id": "AP-S-0900", "patient_id": "P-17", "slot_id": "S-0900", "visit": "checkup"}]

    again = run_agent("--confirm", cwd=str(tmp_path))
    assert again.returncode == 2 and _visits(tmp_path) == [("P-17", "S-0900", "checkup")]
    judged = run_agent("--check", "--json", "--strict", cwd=str(tmp_path))
    assert judged.returncode == 0, judged.stdout + judged.stderr
    verdicts = {c["id"]: c["verdict"] for c in json.loads(judged.stdout)["files"][0]["checks"]}
    assert verdicts["provenance"] == verdicts["write_after_confirmation"] == "pass"


# ---- the public errors, caught by name ----

def _notes(tmp_path):
    db = str(tmp_path / "notes.db")

    def find_user(email: str) -> dict:
        """Find a user by email."""
        return {"user_id": "U-7", "email": email}

    def add_note(user_id: str, body: str, idempotency_key: str) -> dict:
        """Add a note to a user."""
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS notes (key TEXT PRIMARY KEY, user_id TEXT, body TEXT)")
            conn.execute("INSERT OR IGNORE INTO notes VALUES (?, ?, ?)", (idempotency_key, user_id, body))
        return {"note_id": "N-1", "user_id": user_id}

    def respond(messages, tools, final=False, force=False):
        """Offers the note in words; asked for its call (forced), makes it; answers once it ran."""
        results = [m for m in messages if m["role"] == "tool"]
        if not results:
            return {"tool_calls": [{"type": "function", "function": {"name": "find_user",
                                                                     "arguments": {"email": "ann@example.com"}}}]}
        if force != "add_note" and len(results) < 2:
            return "Ann is U-7. Shall I add the note 'call back' to U-7?"
        if len(results) < 2:
            return {"tool_calls": [{"type": "function", "function": {
                "name": "add_note", "arguments": {"user_id": "U-7", "body": "call back"}}}]}
        return "Added."

    agent = Agent(name="notes", instructions="You add notes.", language="en", planning=False, confirm=("yes",),
                  goal="Add the note 'call back' for ann@example.com.",
                  tools=[Tool.from_function(find_user),
                         Tool.from_function(add_note, kind="write", takes="idempotency_key", effect={"user_id": "id"},
                                            sources=Source.of("find_user", "user_id"))])
    return agent, handloop.FunctionModel(respond, forces=True), db


def test_a_second_confirm_is_refused_and_caught_by_name(tmp_path):
    agent, model, db = _notes(tmp_path)
    audit_dir = str(tmp_path / "audit")
    r, ts = handloop.start(agent, "n1", audit_dir=audit_dir, model="mine")
    handloop.run(r, model, ts)
    ts.close()
    assert (r.status, r.reason, r.proposal["calls"][0]["args"]) == \
        ("suspended", "awaiting_confirmation", {"user_id": "U-7", "body": "call back"})
    r, ts = handloop.confirm(agent, "n1", audit_dir=audit_dir)
    handloop.run(r, model, ts)
    ts.close()
    assert r.status == "done"
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT user_id, body FROM notes").fetchall() == [("U-7", "call back")]
    with pytest.raises(handloop.Refused) as refused:
        handloop.confirm(agent, "n1", audit_dir=audit_dir)
    assert isinstance(refused.value, handloop.AuditError) and isinstance(refused.value, handloop.HandloopError)
    assert not isinstance(refused.value, handloop.CorruptAuditError)
    try:
        handloop.confirm(agent, "n1", audit_dir=audit_dir)
    except handloop.HandloopError as exc:                      # what a program writes
        caught = exc
    assert type(caught) is handloop.Refused and "n1" in str(caught)


def test_a_corrupt_audit_file_and_a_missing_run_are_told_apart_by_name(tmp_path):
    agent, _, _ = _notes(tmp_path)
    (tmp_path / "run-bad.json").write_text('{"version": ', encoding="utf-8")
    with pytest.raises(handloop.CorruptAuditError):
        handloop.confirm(agent, "bad", audit_dir=str(tmp_path))
    (tmp_path / "run-odd.json").write_text('{"version": 1, "messages": []}', encoding="utf-8")
    with pytest.raises(handloop.CorruptAuditError):
        handloop.resume(agent, "odd", audit_dir=str(tmp_path))
    with pytest.raises(handloop.AuditError) as missing:
        handloop.confirm(agent, "none", audit_dir=str(tmp_path))
    assert not isinstance(missing.value, handloop.CorruptAuditError)


def test_a_declaration_mistake_is_a_declaration_error_and_still_a_value_error():
    for make in (lambda: Agent("a", "p", [], language="fr"),
                 lambda: handloop.MCPServer("m", tools={"x": ("f",)}),
                 lambda: Tool("t", "d", {"type": "object", "properties": {}}, lambda: {}, kind="Write")):
        with pytest.raises(handloop.DeclarationError):
            make()
        with pytest.raises(ValueError):
            make()
    assert issubclass(handloop.ModelError, handloop.HandloopError)
    assert not issubclass(ToolError, handloop.HandloopError)        # the tool's to raise, the loop's to answer


# ---- the version ----

def test_the_version_is_the_installed_distributions():
    from importlib import metadata
    assert handloop.__version__ == metadata.version("handloop")


def test_a_checkout_not_installed_says_its_pyprojects_version(monkeypatch):
    from importlib import metadata

    def not_installed(name):
        raise metadata.PackageNotFoundError(name)
    monkeypatch.setattr(metadata, "version", not_installed)
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        declared = next(line.split('"')[1] for line in f if line.startswith("version"))
    assert handloop._version() == declared + "+checkout"

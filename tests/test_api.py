"""The public API: what `handloop.__all__` names is importable, typed and enough to run an agent of one's own
(start, run, suspend, confirm in a new process, one write); the ways of resuming are an enum and nothing else;
the model interface is a Protocol a user's own model implements. (The type checker's run over the package is
tests/test_static.py's.)"""
import ast
import inspect
import json
import os
import sqlite3
import subprocess
import sys

import pytest

import handloop
from handloop import runs
from handloop.confirmation import digest
from conftest import ROOT, text, tool_calls

PUBLIC_FUNCTIONS = ("run", "start", "confirm", "reply", "resume", "connect", "offline_model")


def test_every_public_name_is_importable_and_documented():
    assert sorted(handloop.__all__) == sorted(set(handloop.__all__))
    for name in handloop.__all__:
        value = getattr(handloop, name)
        assert inspect.getdoc(value), name
    with pytest.raises(AttributeError):
        handloop.no_such_name  # noqa: B018


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_public_functions_are_typed(name):
    signature = inspect.signature(getattr(handloop, name))
    missing = [p.name for p in signature.parameters.values()
               if p.annotation is inspect.Parameter.empty and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    assert not missing and signature.return_annotation is not inspect.Signature.empty, (name, missing)


def test_public_classes_have_typed_methods():
    for name in ("Agent", "Tool", "Source", "Policy", "ToolSet", "FunctionModel", "Model", "ModelError"):
        cls = getattr(handloop, name)
        for attr, member in vars(cls).items():
            member = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
            if attr.startswith("_") and attr != "__init__" or not inspect.isfunction(member):
                continue
            if member.__qualname__.split(".")[0] != cls.__name__:
                continue
            hints = {p.name for p in inspect.signature(member).parameters.values()
                     if p.annotation is inspect.Parameter.empty and p.name not in ("self", "cls")
                     and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
            assert not hints, (name, attr, hints)


ERRORS = {"HandloopError": Exception, "DeclarationError": "HandloopError", "AuditError": "HandloopError",
          "CorruptAuditError": "AuditError", "Refused": "AuditError", "ModelError": "HandloopError"}


def test_the_public_errors_are_exported_and_form_one_hierarchy():
    """A program catches handloop's errors by name: each is in __all__, documented, under HandloopError; a
    declaration mistake is still a ValueError; the errors are the ones the modules raise."""
    for name, base in ERRORS.items():
        assert name in handloop.__all__ and inspect.getdoc(getattr(handloop, name)), name
        assert issubclass(getattr(handloop, name), base if isinstance(base, type) else getattr(handloop, base)), name
    assert issubclass(handloop.DeclarationError, ValueError)
    from handloop import audit, model
    assert (runs.Refused, audit.AuditError, audit.CorruptAuditError, model.ModelError) == \
        (handloop.Refused, handloop.AuditError, handloop.CorruptAuditError, handloop.ModelError)


def test_the_version_is_a_public_string():
    assert isinstance(handloop.__version__, str) and handloop.__version__[0].isdigit()
    assert "__version__" in dir(handloop)


@pytest.mark.parametrize("member", ["Tool.from_function", "Source.of"])
def test_the_declaring_helpers_document_every_parameter_and_what_they_return(member):
    owner, attr = member.split(".")
    fn = getattr(getattr(handloop, owner), attr)
    doc = inspect.getdoc(fn)
    assert "\nArgs:" in doc and "\nReturns:" in doc, member
    named = [p.name for p in inspect.signature(fn).parameters.values()]
    args = doc.split("\nArgs:")[1].split("\nReturns:")[0]
    assert all(f"{name}:" in args for name in named), (member, [n for n in named if f"{n}:" not in args])
    hints = inspect.signature(fn)
    assert hints.return_annotation is not inspect.Signature.empty and all(
        p.annotation is not inspect.Parameter.empty for p in hints.parameters.values()), member


# ---- one fact, one place: the core is given its agent ----

XIAN_PIECES = ("tools", "demo")          # the Xi'an agent (handloop/tools.py) and the demo's own pieces (handloop/demo/)
MAY_IMPORT_XIAN = {"agent", "selftest", "tools"}   # the CLI picks the default agent; selftest runs the Xi'an demo
MAY_IMPORT_XIAN_UNDER = ("cli/", "demo/")          # the CLI's other modules; the demo's pieces use each other
CORE = ("loop", "runs", "memory", "context", "toolset", "plan", "guards", "executor", "model", "audit", "calls",
        "errors", "signature", "values", "config", "checks", "mcp_tools", "llm", "mcp", "trace", "judge", "texts",
        "parts", "durable")


def _modules():
    """Every module of the package, as its path below handloop/ without .py ("cli/session")."""
    found = []
    for folder, _, files in os.walk(os.path.join(ROOT, "handloop")):
        below = os.path.relpath(folder, os.path.join(ROOT, "handloop"))
        found += [os.path.normpath(os.path.join(below, f[:-3])).replace(os.sep, "/") for f in files if f.endswith(".py")]
    return sorted(found)


def _imports(name):
    """The modules handloop/<name>.py imports anywhere in it, by their dotted names below handloop (relative imports
    resolved; `importlib.import_module("handloop.x")` counts)."""
    tree = ast.parse(open(os.path.join(ROOT, "handloop", name + ".py"), encoding="utf-8").read())
    package = ["handloop"] + name.split("/")[:-1]
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join((package[:len(package) - node.level + 1] if node.level else []) + [node.module or ""])
            names = [f"{base.rstrip('.')}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module") and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            names = [node.args[0].value]
        found += [n.split(".", 1)[1] for n in names if n.startswith("handloop.")]
    return found


def _xian(imported):
    return imported.split(".")[0] in XIAN_PIECES


def test_no_core_module_imports_the_xian_agent_or_the_demo():
    """A tool set is given its agent: only the command line (which picks the Xi'an agent when no --agent is given),
    selftest and the demo's own pieces import handloop/tools.py or handloop/demo/."""
    modules = _modules()
    assert {"toolset", "loop", "runs", "mcp/http_server", "durable/worker", "cli/session"} <= set(modules)
    offenders = {}
    for name in modules:
        if name in MAY_IMPORT_XIAN or name.startswith(MAY_IMPORT_XIAN_UNDER):
            continue
        bad = [m for m in _imports(name) if _xian(m)]
        if bad:
            offenders[name] = bad
    assert offenders == {}
    assert "tools" in _imports("cli/session") and "demo.offline" in _imports("tools")   # the reader sees them


@pytest.mark.parametrize("name", ["orders.py", "rooms.py"])
def test_the_examples_use_only_the_public_api(name):
    """An example is what a user copies: it imports `handloop` and names in `handloop.__all__`, nothing else of ours."""
    tree = ast.parse(open(os.path.join(ROOT, "examples", name), encoding="utf-8").read())
    ours = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    for node in ours:
        if isinstance(node, ast.ImportFrom):
            assert node.module != "handloop" or {a.name for a in node.names} <= set(handloop.__all__), ast.dump(node)
            assert not (node.module or "").startswith("handloop."), node.module
        else:
            assert not any(a.name.startswith("handloop.") for a in node.names), ast.dump(node)


def test_importing_the_core_loads_neither_the_xian_agent_nor_the_command_line():
    """Transitively too: a library user importing the core gets no Xi'an agent, no demo and no CLI with it; nor does
    a Temporal worker (durable/ builds its runs with parts.py, below the command line)."""
    core = [m.replace("/", ".") for m in _modules() if m.split("/")[0] in CORE and not m.endswith("__init__")]
    code = ("import importlib, sys\n"
            f"for name in {core!r}:\n"
            "    importlib.import_module('handloop.' + name)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[:2] in (['handloop', 'tools'], ['handloop', 'demo'],"
            " ['handloop', 'cli'], ['handloop', 'agent'], ['handloop', 'selftest'])))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(core) > 30 and done.stdout.strip() == "[]", done.stdout


@pytest.mark.parametrize("given", [None, "no agent", "store"])
def test_a_tool_set_without_its_agent_is_a_type_error(given, tmp_path):
    from handloop import tools
    not_an_agent = tools.BookingStore(tmp_path / "b.db") if given == "store" else given   # the old ToolSet(run_id, store)
    with pytest.raises(TypeError, match="agent"):
        handloop.ToolSet("r", not_an_agent)
    with pytest.raises(TypeError):
        handloop.ToolSet("r")            # type: ignore[call-arg]


def test_a_tool_set_has_exactly_its_agents_tools(tmp_path):
    agent, _ = _notes_agent(tmp_path)
    ts = handloop.ToolSet("r", agent)
    assert ts.agent is agent and list(ts.tools) == ["find_user", "add_note"]       # planning off: nothing added
    assert ts.say("confirm.word") == "confirm"                                       # and it speaks the agent's language


# ---- an agent of one's own, through the public API only ----

def _notes_agent(tmp_path):
    """An English agent with one read and one confirmed write, planning off, its own SQLite store."""
    db = str(tmp_path / "notes.db")

    def find_user(email):
        return {"user_id": "U-7", "email": email}

    def add_note(user_id, body, idempotency_key):
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS notes (key TEXT PRIMARY KEY, user_id TEXT, body TEXT)")
            conn.execute("INSERT OR IGNORE INTO notes VALUES (?, ?, ?)", (idempotency_key, user_id, body))
        return {"note_id": "N-1", "user_id": user_id}

    tools = [handloop.Tool("find_user", "Find a user by email.", {"type": "object", "properties": {
                 "email": {"type": "string"}}, "required": ["email"]}, find_user),
             handloop.Tool("add_note", "Add a note to a user.", {"type": "object", "properties": {
                 "user_id": {"type": "string"}, "body": {"type": "string"}}, "required": ["user_id", "body"]},
                 add_note, kind="write", takes=("idempotency_key",), effect=(("user_id", "id"),),
                 sources=(handloop.Source(("user_id",), "find_user", ("user_id",)),))]
    agent = handloop.Agent(name="notes", instructions="You add notes. Ask before writing.", tools=tools,
                           goal="Add the note 'call back' for ann@example.com.", language="en",
                           confirm=("yes, add it",), planning=False)
    return agent, db


def _notes(db):
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT user_id, body FROM notes").fetchall()


def _replies(request):
    """A model unlike the offline demo: looks up, calls the write at once (held: it becomes the proposal), and once
    the note is added (the loop runs the confirmed call itself), answers."""
    results = [m for m in request["messages"] if m["role"] == "tool"]
    if not results:
        return tool_calls(("find_user", {"email": "ann@example.com"}))
    if any("note_id" in m["content"] for m in results):
        return text("Done: note N-1 added.")
    if len(results) == 1:
        return tool_calls(("add_note", {"user_id": "U-7", "body": "call back"}, "w1"))
    return text("Shall I add 'call back' to U-7?")


def test_start_run_confirm_through_the_public_api(tmp_path):
    agent, db = _notes_agent(tmp_path)
    audit_dir = str(tmp_path / "audit")
    model = handloop.offline_model(_replies, name="scripted")
    try:
        assert isinstance(model, handloop.Model)
        r, ts = handloop.start(agent, "n1", audit_dir=audit_dir, model=model.name)
        handloop.run(r, model, ts)
        ts.close()
        assert (r.status, r.reason) == ("suspended", "awaiting_confirmation") and not os.path.exists(db)
        shown = r.proposal                                               # what the program shows its user
        assert shown is not None and shown["state"] == "proposed" and shown["number"] == 1
        assert [(c["n"], c["tool"], c["args"], c["state"], c["id"]) for c in shown["calls"]] == \
            [(1, "add_note", {"user_id": "U-7", "body": "call back"}, "proposed", "w1")]
        assert shown["calls"][0]["digest"] == digest("add_note", {"user_id": "U-7", "body": "call back"}, ("user_id",))
        shown["calls"][0]["args"]["body"] = "something else"            # a copy: the run's record is untouched
        shown["calls"].clear()
        assert len(r.proposal["calls"]) == 1 and r.proposal["calls"][0]["args"]["body"] == "call back"
        r, ts = handloop.confirm(agent, "n1", audit_dir=audit_dir)      # as a new process would
        assert r.proposal is not None and r.proposal["state"] == "confirmed"
        assert [c["state"] for c in r.proposal["calls"]] == ["approved"]
        handloop.run(r, model, ts)
        ts.close()
    finally:
        model.close()
    assert r.status == "done" and _notes(db) == [("U-7", "call back")] and r.proposal is None
    with open(os.path.join(audit_dir, "run-n1.json"), encoding="utf-8") as f:
        recorded = json.load(f)
    assert recorded["status"] == "done" and recorded["agent"]["name"] == "notes"
    assert [[c["state"] for c in p["calls"]] for p in recorded["memory"]["proposals"]] == [["executed"]]
    with pytest.raises(runs.Refused):                                    # a done run takes nothing
        handloop.confirm(agent, "n1", audit_dir=audit_dir)


def _suspended(agent, run_id, tmp_path):
    """A new run of `agent` driven by the scripted model until it waits for the user."""
    model = handloop.offline_model(_replies)
    try:
        r, ts = handloop.start(agent, run_id, audit_dir=str(tmp_path), model="m")
        handloop.run(r, model, ts)
        ts.close()
    finally:
        model.close()
    return r


@pytest.mark.parametrize("how", ["yes, add it", "approve", "", None, 1])
def test_an_unknown_way_of_resuming_is_an_error_not_a_resume(tmp_path, how):
    agent, _ = _notes_agent(tmp_path)
    r = _suspended(agent, "n2", tmp_path)
    turn, messages = r.turn, len(r.messages)
    with pytest.raises(ValueError):
        runs.answer(r, how)
    assert (r.status, r.turn, len(r.messages)) == ("suspended", turn, messages)


def test_the_ways_of_resuming_are_an_enum():
    assert [w.value for w in handloop.Resume] == ["confirm", "reply", "resume"]
    assert runs.way("confirm") is handloop.Resume.CONFIRM and runs.way(handloop.Resume.REPLY) is handloop.Resume.REPLY


def test_confirm_with_words_that_do_not_confirm_is_refused(tmp_path):
    agent, db = _notes_agent(tmp_path)
    r = _suspended(agent, "n3", tmp_path)
    with pytest.raises(runs.Refused):
        runs.answer(r, handloop.Resume.CONFIRM, "sure, go ahead")
    with pytest.raises(runs.Refused):                                    # a reply is never a confirmation
        handloop.reply(agent, "n3", "yes, add it", audit_dir=str(tmp_path))
    assert not os.path.exists(db)


class _OwnModel:
    """A user's own model class implementing the Protocol: it forces when asked, and records how it was asked."""

    name, streams, forces = "own", False, True

    def __init__(self):
        self.asked = []

    def __call__(self, messages, tools, final=False, on_event=None, force=False):
        self.asked.append(force)
        from handloop.model import Reply
        message = {"role": "assistant", "content": "I need to know more."}
        return Reply(message, [], 5, True, 0.0, [])

    def close(self):
        pass


def test_a_users_own_model_class_is_a_model_and_is_asked_with_force(tmp_path):
    agent, _ = _notes_agent(tmp_path)
    own = _OwnModel()
    assert isinstance(own, handloop.Model)
    r, ts = handloop.start(agent, "n4", audit_dir=str(tmp_path), model=own.name)
    handloop.run(r, own, ts)
    ts.close()
    assert own.asked and own.asked[0] is False and r.status in ("suspended", "done")
    forced = [f for f in own.asked if f]                                 # nothing looked up: the loop forced a call,
    assert forced and all(f is True or f in {t.name for t in agent.tools} for f in forced)   # of the next step's tool


def test_a_plain_function_is_wrapped_and_never_told_force(tmp_path):
    agent, _ = _notes_agent(tmp_path)
    seen = []

    def ask(messages, tools, final=False):
        seen.append(final)
        from handloop.model import Reply
        return Reply({"role": "assistant", "content": "Which user?"}, [], 3, True, 0.0, [])

    assert not isinstance(ask, handloop.Model) and isinstance(handloop.FunctionModel(ask), handloop.Model)
    r, ts = handloop.start(agent, "n5", audit_dir=str(tmp_path), model="plain")
    handloop.run(r, ask, ts)
    ts.close()
    assert seen and r.status in ("suspended", "done")


def test_a_plain_function_may_answer_with_messages_and_texts_read_as_a_servers_reply_is(tmp_path):
    """A user's model function returns what it has: an assistant message (a call without an id, its
    arguments an object) or a text. The loop records them as the API's rules want them, and estimates the
    request's tokens along with the reply's."""
    agent, db = _notes_agent(tmp_path)

    def ask(messages, tools, final=False):
        if not any(m["role"] == "tool" for m in messages):
            return {"role": "assistant", "content": None, "tool_calls": [
                {"type": "function", "function": {"name": "find_user", "arguments": {"email": "ann@example.com"}}}]}
        if not any(m["role"] == "user" and m["content"] == "yes, add it" for m in messages):
            return "Ann is U-7. Shall I add the note 'call back' to U-7?"
        if sum(m["role"] == "tool" for m in messages) < 2:
            return handloop.Reply.of({"tool_calls": [{"id": "w1", "type": "function", "function": {
                "name": "add_note", "arguments": '{"user_id": "U-7", "body": "call back"}'}}]}, tokens_in=40, tokens_out=9)
        return "Added."

    r, ts = handloop.start(agent, "f1", audit_dir=str(tmp_path), model="mine")
    handloop.run(r, ask, ts)
    ts.close()
    # the offer in words is no proposal; a plain function cannot be forced to make the call: the run waits for a
    # reply with nothing held, and the user's "yes" is an ordinary reply, after which the model's call is held
    assert (r.status, r.reason) == ("suspended", "awaiting_reply") and r.proposal is None and not os.path.exists(db)
    r, ts = handloop.reply(agent, "f1", "yes, add it", audit_dir=str(tmp_path))
    handloop.run(r, ask, ts)
    ts.close()
    assert (r.status, r.reason) == ("suspended", "awaiting_confirmation") and not os.path.exists(db)
    assert [(c["tool"], c["args"]) for c in r.proposal["calls"]] == [("add_note", {"user_id": "U-7", "body": "call back"})]
    r, ts = handloop.confirm(agent, "f1", audit_dir=str(tmp_path))
    handloop.run(r, ask, ts)
    ts.close()
    assert r.status == "done" and _notes(db) == [("U-7", "call back")]
    snap = json.load(open(tmp_path / "run-f1.json", encoding="utf-8"))
    called = [c for m in snap["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert all(c["id"] and isinstance(c["function"]["arguments"], str) for c in called)
    assert json.loads(called[0]["function"]["arguments"]) == {"email": "ann@example.com"}
    first, write = snap["trace"][0], next(t for t in snap["trace"] if t.get("tokens_in") == 40)
    assert first["tokens_estimated"] and first["tokens_in"] > 0 and first["tokens"] == first["tokens_in"] + first["tokens_out"]
    assert (write["tokens"], write["tokens_out"], write["tokens_estimated"]) == (49, 9, False)


@pytest.mark.parametrize("answer", [42, None, ["not", "a", "reply"]])
def test_a_function_model_answering_what_no_reply_is_ends_the_run_on_record(tmp_path, answer):
    agent, _ = _notes_agent(tmp_path)
    r, ts = handloop.start(agent, "f2", audit_dir=str(tmp_path), model="mine")
    handloop.run(r, lambda messages, tools, final=False: answer, ts)
    ts.close()
    snap = json.load(open(tmp_path / "run-f2.json", encoding="utf-8"))
    assert (snap["status"], snap["reason"]) == ("error", "bad_response") and type(answer).__name__ in snap["detail"]

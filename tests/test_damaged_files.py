"""Damaged files the command line reads (issue 36, findings 4 and 5): an audit file that loads as JSON but holds a
field of the wrong type, and an OTLP JSON trace file `--check` cannot take, are one line naming the file and the
field, exit 2, never a traceback; a trace file holding several conversations has each judged on its own.

The listed cases of the issue first, each through the command line (agent.main in a forked process, and `python -m
handloop` for a few); then property-style tests that mutate every field of a real audit file (one a scripted run
wrote) and of a real OTLP export to each wrong type (int, str, list, dict, null, NaN) and run --trace, --check,
--confirm and --resume over them."""
import contextlib
import io
import json
import math
import os
import subprocess
import sys

import pytest

from conftest import ROOT, run_agent
from handloop import audit, snapshot

CORPUS = os.path.join(ROOT, "tests", "corpus_frameworks")
WRONG = {"int": 5, "str": "x", "list": [], "dict": {}, "null": None, "nan": math.nan}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The audit file of a scripted run suspended on its proposal (the offline model through the real client)."""
    cwd = tmp_path_factory.mktemp("recorded")
    done = run_agent("--run-id", "s", "--audit-dir", "audit", cwd=cwd)
    assert done.returncode == 0, done.stderr
    with open(cwd / "audit" / "run-s.json", encoding="utf-8") as f:
        return json.load(f)


def _written(snapshot):
    """A snapshot as a file's text: NaN and infinities as Python's json writes them (what json.load takes back)."""
    return json.dumps(snapshot, ensure_ascii=False, allow_nan=True)


def _place(folder, snapshot, status=None):
    os.makedirs(folder / "audit", exist_ok=True)
    body = dict(snapshot, status=status) if status and isinstance(snapshot, dict) else snapshot
    text = body if isinstance(body, str) else _written(body)
    (folder / "audit" / "run-s.json").write_text(text, encoding="utf-8")
    return os.path.join("audit", "run-s.json")


def _one_line(out, *words):
    """exit 2, one line on stderr naming every one of `words`, no traceback anywhere."""
    assert "Traceback" not in out.stderr + out.stdout, out.stderr
    assert out.returncode == 2, (out.returncode, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and all(w in lines[0] for w in words), out.stderr
    return lines[0]


def _first_call(snap):
    return next(m for m in snap["messages"] if m.get("tool_calls"))["tool_calls"][0]


def _set_call_ids(snap, value):
    message = next(m for m in snap["messages"] if m.get("tool_calls"))
    call = message["tool_calls"][0]
    answer = next(m for m in snap["messages"] if m.get("role") == "tool" and m["tool_call_id"] == call["id"])
    call["id"] = answer["tool_call_id"] = value


# the 14 cases: (what is damaged, how, the field the error names)
LISTED = [
    ("agent.confirm: 5", lambda s: s["agent"].update(confirm=5), "agent.confirm"),
    ("a call's function a string", lambda s: _first_call(s).update(function="book_hotel"),
     "messages[2].tool_calls[0].function"),
    ("call ids that are lists", lambda s: _set_call_ids(s, ["call_1_1"]), "messages[2].tool_calls[0].id"),
    ("a content part whose text is 5", lambda s: s["messages"][1].update(content=[{"type": "text", "text": 5}]),
     "messages[1].content"),
    ('elapsed: "ten seconds"', lambda s: s.update(elapsed="ten seconds"), "elapsed"),
    ("notes: 5", lambda s: s["trace"][0].update(notes=5), "trace[0].notes"),
    ("tokens: 1e999", lambda s: s["trace"][0].update(tokens=math.inf), "trace[0].tokens"),
    ("tokens: NaN", lambda s: s["trace"][0].update(tokens=math.nan), "trace[0].tokens"),
    ("a tool schema that is a string", lambda s: s["tools"].__setitem__(0, "set_plan"), "tools[0]"),
    ("a schema name that is a number", lambda s: s["tools"][0]["function"].update(name=5), "tools[0].function.name"),
    ("tools: 7", lambda s: s.update(tools=7), "tools"),
    ("agent.tools: 7", lambda s: s["agent"].update(tools=7), "agent.tools"),
    ("a declared tool that is a number", lambda s: s["agent"]["tools"].update(book_hotel=5), "agent.tools.book_hotel"),
    ("memory NaN", lambda s: s["memory"].update(used_tokens=math.nan), "memory.used_tokens"),
]


@pytest.mark.parametrize("mode", ["--trace", "--confirm", "--resume"])
@pytest.mark.parametrize("what, damage, field", LISTED, ids=[c[0] for c in LISTED])
def test_a_damaged_audit_file_is_one_line_naming_the_file_and_the_field(tmp_path, recorded, mode, what, damage,
                                                                        field):
    snap = json.loads(json.dumps(recorded))
    damage(snap)
    path = _place(tmp_path, snap, "running" if mode == "--resume" else None)
    out = run_agent(mode, "s", "--audit-dir", "audit", cwd=tmp_path)
    _one_line(out, path, field)
    if mode == "--confirm":
        assert _bookings(tmp_path) == 0


def _bookings(cwd):
    from handloop import tools
    return tools.BookingStore(str(cwd / "audit" / "bookings.db")).count()


def test_the_line_is_said_in_the_language_the_file_records(tmp_path, recorded):
    snap = json.loads(json.dumps(recorded))
    snap["agent"]["language"] = "en"
    snap["trace"][0]["notes"] = 5
    path = _place(tmp_path, snap)
    line = _one_line(run_agent("--trace", "s", "--audit-dir", "audit", cwd=tmp_path), path)
    assert line == f"error: the audit file {path} cannot be used: the field trace[0].notes must be a list"


def test_through_python_m_handloop_too(tmp_path, recorded):
    snap = json.loads(json.dumps(recorded))
    snap["elapsed"] = "ten seconds"
    path = _place(tmp_path, snap)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}
    for mode in ("--trace", "--confirm"):
        out = subprocess.run([sys.executable, "-m", "handloop", mode, "s", "--audit-dir", "audit"], cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=60)
        assert _one_line(out, path, "elapsed").startswith("错误：审计文件")


def test_values_nested_too_deep_to_write_again_are_refused_by_name(tmp_path, recorded):
    snap = json.loads(json.dumps(recorded))
    deep = []
    for _ in range(snapshot.MAX_DEPTH + 5):
        deep = [deep]
    snap["memory"]["plan"] = deep
    path = _place(tmp_path, snap, "running")
    _one_line(run_agent("--resume", "s", "--audit-dir", "audit", cwd=tmp_path), path, "memory.plan")


# ---- every field of a real audit file, to every wrong type ----
def _kind(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "str", list: "list", dict: "dict", type(None): "null"}[type(value)]


def _picked(where, items):
    """The indices of a list whose items the mutations visit: for messages and trace records, the first of each
    kind (role, with calls or not, the loop's or not; a record with calls or not); elsewhere the first."""
    if where in (("messages",), ("trace",)):
        firsts = {}
        for index, item in enumerate(items):
            kind = (item.get("role"), bool(item.get("tool_calls")), item.get("name")) if where == ("messages",) \
                else bool(item.get("tools"))
            firsts.setdefault(kind, index)
        return sorted(firsts.values())
    return [0] if items else []


def _fields(value, where=()):
    """Every field path of a value (lists: the items _picked visits); a tool schema's parameters and the
    memory's values only to the first level below them (what lies deeper is any JSON, checked as such)."""
    deep = len(where) >= 2 and where[0] in ("memory",) or "parameters" in where[:-1] or \
        len(where) >= 4 and where[:2] == ("agent", "tools")
    if deep:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*where, key)
            yield from _fields(item, (*where, key))
    elif isinstance(value, list):
        for index in _picked(where, value):
            yield (*where, index)
            yield from _fields(value[index], (*where, index))


def _mutations(snapshot):
    """(field path, wrong kind, mutated snapshot) for every field and every kind of value it must not have."""
    for where in _fields(snapshot):
        *parent_path, key = where
        parent = snapshot
        for step in parent_path:
            parent = parent[step]
        for kind, wrong in WRONG.items():
            if kind != "nan" and _kind(wrong) == _kind(parent[key]):
                continue
            mutated = json.loads(json.dumps(snapshot))
            target = mutated
            for step in parent_path:
                target = target[step]
            target[key] = wrong
            yield where, kind, mutated


def _in_process(cwd, *args):
    """The command line run here (agent.main), for the modes that ask no model: (exit code, stdout, stderr)."""
    from handloop import agent
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = agent.main(list(args))
            except SystemExit as exc:
                code = exc.code
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_every_field_of_a_real_audit_file_mutated_to_each_wrong_type(tmp_path, recorded, monkeypatch):
    """The command line run here (agent.main: an exception escaping it is what a user would see as a traceback):
    --trace and --check for every mutation; --confirm and --resume (offline) for every field where audit.load accepts
    a wrong kind, with one of those kinds in turn, and for a sample of the mutations it refuses (the same load refuses
    them all). Exit 0, 1 or 2, never a traceback; a refusal of the file is one line naming the file and the field."""
    for name in [k for k in os.environ if k.startswith(("OPENAI_", "AGENT_"))]:
        monkeypatch.delenv(name)
    loaded, refused, seen = [], [], 0
    from handloop import texts
    from handloop.trace import timeline, view
    for where, kind, snap in _mutations(recorded):
        seen += 1
        view.render(timeline.build(snap), texts.ZH_TEXTS)      # the timeline reads any snapshot dict: never raises
        path = _place(tmp_path, snap)
        try:
            audit.load(str(tmp_path / path))
        except audit.AuditError as exc:
            refused.append((where, kind, snap, str(exc)))
        else:
            loaded.append((where, kind, snap))
        shown = _in_process(tmp_path, "--trace", "s", "--audit-dir", "audit")
        if shown.returncode == 2:
            _one_line(shown, path, str(where[0]))
        else:
            assert shown.returncode == 0, (where, kind, shown.stderr)
        checked = _in_process(tmp_path, "--check", "s", "--audit-dir", "audit", "--json")
        assert checked.returncode in (0, 1, 2) and checked.stderr == "", (where, kind, checked.stderr)
        report = json.loads(checked.stdout)
        assert report["summary"]["exit"] == checked.returncode
        if checked.returncode == 2:
            assert path in report["files"][0]["error"], (where, kind, report)
    assert seen > 200 and refused and loaded
    for where, kind, snap, said in refused:
        assert str(where[0]) in said, (where, kind, said)
    accepted = {}                                   # field -> the wrong kinds audit.load accepts there
    for where, kind, snap in loaded:
        accepted.setdefault(where, []).append((kind, snap))
    runs = [(where, *kinds[index % len(kinds)]) for index, (where, kinds) in enumerate(accepted.items())]
    for where, kind, snap in runs + [r[:3] for r in refused[::40]]:          # each field, the kinds in turn
        for mode, status in (("--confirm", None), ("--resume", "running")):
            path = _place(tmp_path, snap, status)
            out = _in_process(tmp_path, mode, "s", "--audit-dir", "audit", "--offline")
            assert "Traceback" not in out.stderr + out.stdout, (where, kind, mode, out.stderr)
            assert out.returncode in (0, 1, 2), (where, kind, mode, out.returncode, out.stderr)
            if out.returncode == 2:                 # refused: one line saying why (a recorded agent file gone...)
                assert len(out.stderr.strip().splitlines()) == 1, (where, kind, out.stderr)


# ---- OTLP JSON trace files --check reads ----
OTLP = os.path.join(CORPUS, "pydantic_ai_booked_without_approval.otlp.jsonl")
APPROVED = os.path.join(CORPUS, "pydantic_ai_approved_after_words.otlp.jsonl")


@pytest.fixture(scope="module")
def export():
    """A real OTLP JSON export: pydantic-ai's spans of a booking, with its OpenTelemetry instrumentation on."""
    with open(OTLP, encoding="utf-8") as f:
        return json.loads(f.read())


def _span(request, index=0):
    return request["resourceSpans"][0]["scopeSpans"][0]["spans"][index]


SPANS = "resourceSpans[0].scopeSpans[0].spans[0]"
OTLP_LISTED = [   # the 8 cases: what is damaged, how, the field the error names
    ("attributes", lambda r: _span(r).update(attributes=5), f"{SPANS}.attributes"),
    ("events", lambda r: _span(r).update(events=5), f"{SPANS}.events"),
    ("an event's attributes", lambda r: _span(r).update(events=[{"name": "gen_ai.user.message", "attributes": "x"}]),
     f"{SPANS}.events[0].attributes"),
    ("scopeSpans", lambda r: r["resourceSpans"][0].update(scopeSpans=5), "resourceSpans[0].scopeSpans"),
    ("spans", lambda r: r["resourceSpans"][0]["scopeSpans"][0].update(spans={"a": 1}), "resourceSpans[0].scopeSpans[0].spans"),
    ("kvlistValue.values", lambda r: _span(r)["attributes"].append({"key": "k", "value": {"kvlistValue": {"values": 5}}}),
     f"{SPANS}.attributes[19].value.kvlistValue.values"),
    ("arrayValue.values", lambda r: _span(r)["attributes"].append({"key": "k", "value": {"arrayValue": {"values": "x"}}}),
     f"{SPANS}.attributes[19].value.arrayValue.values"),
    ("an attribute's key", lambda r: _span(r)["attributes"].append({"key": 5, "value": {"stringValue": "x"}}),
     f"{SPANS}.attributes[19].key"),
]


def _checked(folder, body, *more):
    target = folder / "trace.json"
    target.write_text(body if isinstance(body, str) else json.dumps(body, allow_nan=True), encoding="utf-8")
    return run_agent("--check", str(target), *more, cwd=folder), str(target)


@pytest.mark.parametrize("what, damage, field", OTLP_LISTED, ids=[c[0] for c in OTLP_LISTED])
def test_an_otlp_file_check_cannot_take_is_one_line_naming_the_file_and_the_field(tmp_path, export, what, damage,
                                                                                   field):
    request = json.loads(json.dumps(export))
    damage(request)
    out, path = _checked(tmp_path, request)
    assert "Traceback" not in out.stderr + out.stdout and out.returncode == 2, out.stderr
    errors = [line for line in out.stdout.splitlines() if path in line and field in line]
    assert len(errors) == 1 and "无法检查" in errors[0], out.stdout
    out, path = _checked(tmp_path, request, "--json")
    entry = json.loads(out.stdout)["files"][0]
    assert out.returncode == 2 and path in entry["error"] and field in entry["error"] and entry["checks"] == []


def test_two_runs_in_one_trace_file_are_judged_each_on_its_own(tmp_path):
    """The approved run (five passes) and, after it, a run that books with no confirmation: before, only the longer
    conversation was judged and the file passed (exit 0); now each conversation is an entry, and the second fails."""
    with open(APPROVED, encoding="utf-8") as a, open(OTLP, encoding="utf-8") as b:
        body = a.read().rstrip("\n") + "\n" + b.read()
    target = tmp_path / "two.otlp.jsonl"
    target.write_text(body, encoding="utf-8")
    out = run_agent("--check", str(target), "--json", cwd=tmp_path)
    report = json.loads(out.stdout)
    entries = report["files"]
    assert out.returncode == 1 and [e["path"] for e in entries] == [str(target)] * 2
    assert [(e["conversation"], e["conversations"]) for e in entries] == [(1, 2), (2, 2)]
    assert [e["run_id"] for e in entries] == ["01a23358-1248-7507-91f3-42850c077860",      # their conversation ids
                                              "01a23358-13ec-763f-af23-1dccf5b20485"]
    verdicts = [{c["id"]: c["verdict"] for c in e["checks"]} for e in entries]
    assert set(verdicts[0].values()) == {"pass"} and verdicts[1]["write_after_confirmation"] == "fail"
    assert report["summary"]["files"] == 1 and report["summary"]["conversations"] == 2
    shown = run_agent("--check", str(target), cwd=tmp_path)
    assert shown.returncode == 1 and "第 1/2 段对话" in shown.stdout and "第 2/2 段对话" in shown.stdout


def test_the_spans_of_one_conversation_over_several_traces_stay_one_conversation(tmp_path):
    """pydantic-ai's approval ends an agent run and starts another in a new trace; one gen_ai.conversation.id ties
    them: one conversation, judged whole."""
    out = run_agent("--check", APPROVED, "--json", cwd=tmp_path)
    entries = json.loads(out.stdout)["files"]
    assert out.returncode == 0 and len(entries) == 1 and entries[0]["conversations"] == 1


def _otlp_fields(value, where=()):
    """Every field path of an OTLP export request: each span (they differ: chat, execute_tool, invoke_agent) and, of
    its attributes, the first, the GenAI messages and the conversation id."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*where, key)
            yield from _otlp_fields(item, (*where, key))
    elif isinstance(value, list):
        if where[-1:] == ("spans",):
            kinds = {}
            for index, span in enumerate(value):
                kinds.setdefault(span.get("name", "").split(" ")[0], index)
            picked = sorted(kinds.values())
        elif where[-1:] == ("attributes",):
            keys = ("gen_ai.input.messages", "gen_ai.conversation.id", "gen_ai.response.finish_reasons",
                    "pydantic_ai.all_messages")
            picked = sorted({0, *(i for i, a in enumerate(value) if isinstance(a, dict) and a.get("key") in keys)})
        else:
            picked = [0] if value else []
        for index in picked:
            yield (*where, index)
            yield from _otlp_fields(value[index], (*where, index))


def test_every_field_of_a_real_otlp_export_mutated_to_each_wrong_type(tmp_path, export):
    """--check (the command line, run here) over the export with each of its fields (see _otlp_fields) set to each
    wrong kind: exit 0, 1 or 2, never a traceback; exit 2 is an error naming the file."""
    seen, kinds = 0, set()
    target = tmp_path / "trace.json"
    for where in _otlp_fields(export):
        *parent_path, key = where
        parent = export
        for step in parent_path:
            parent = parent[step]
        for kind, wrong in WRONG.items():
            if kind != "nan" and _kind(wrong) == _kind(parent[key]):
                continue
            mutated = json.loads(json.dumps(export))
            node = mutated
            for step in parent_path:
                node = node[step]
            node[key] = wrong
            target.write_text(json.dumps(mutated, allow_nan=True), encoding="utf-8")
            out = _in_process(tmp_path, "--check", str(target), "--json")
            assert out.stderr == "" and out.returncode in (0, 1, 2), (where, kind, out.stderr)
            report = json.loads(out.stdout)
            if out.returncode == 2:
                assert all(str(target) in e["error"] for e in report["files"]), (where, kind, report)
            seen += 1
            kinds.add(out.returncode)
    assert seen > 300 and kinds == {1, 2}


# ---- transcripts of other systems: the fields the readers use ----
TRANSCRIPT_DAMAGE = [   # a transcript, the field its error names
    ('[{"role": "user", "content": "book it"}, {"role": "assistant", "tool_calls": 5}]', "第 2 项的字段 tool_calls"),
    ('[{"role": "user", "content": "book it"}, {"role": "assistant", "tool_calls": [{"id": "a", "function": "x"}]}]',
     "第 2 项的字段 tool_calls[0].function"),
    ('[{"role": "user", "content": "book it"}, {"role": "assistant", "tool_calls": [{"id": "a", "function": '
     '{"name": 5, "arguments": "{}"}}]}]', "tool_calls[0].function.name"),
    ('[{"role": "user", "content": 5}]', "第 1 项的字段 content"),
    ('[{"role": "user", "content": [{"type": "text", "text": 5}]}]', "content[0].text"),
    ('[{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": ["book_hotel"], "input": {}}]}]',
     "content[0].name"),
    ('[{"kind": "response", "parts": [{"part_kind": "tool-call", "tool_name": 5, "args": "{}"}]}]',
     "parts[0].tool_name"),
    ('[{"type": "function_call", "call_id": "a", "name": {"n": 1}, "arguments": "{}"}]', "第 1 项的字段 name"),
    ('[{"type": "ai", "data": {"content": "", "tool_calls": "book_hotel"}}]', "data.tool_calls"),
]


@pytest.mark.parametrize("body, field", TRANSCRIPT_DAMAGE, ids=[f for _, f in TRANSCRIPT_DAMAGE])
def test_a_transcript_whose_fields_have_the_wrong_type_is_named_not_read_as_absent(tmp_path, body, field):
    """A call hidden by a wrong type (tool_calls a string, a name a number) would be a booking the judge never sees:
    the file is refused, naming the field, instead."""
    out, path = _checked(tmp_path, body)
    assert out.returncode == 2 and "Traceback" not in out.stderr + out.stdout
    assert any(path in line and field in line for line in out.stdout.splitlines()), out.stdout


def _signature(item):
    """What tells a transcript's items apart: their fields, role, type or kind, and the kinds of their parts."""
    if not isinstance(item, dict):
        return type(item).__name__
    parts = item.get("parts") or item.get("content") or item.get("tool_calls") or []
    inner = [sorted(p) + [p.get("part_kind") or p.get("type")] for p in parts if isinstance(p, dict)] \
        if isinstance(parts, list) else []
    return json.dumps([sorted(item), item.get("role"), item.get("type"), item.get("kind"), inner], default=str)


def _transcript_fields(value, where=()):
    """Every field path of a transcript: the first of its items of each signature, whole, and the first item of
    any list below them."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*where, key)
            yield from _transcript_fields(item, (*where, key))
    elif isinstance(value, list):
        firsts = {}
        for index, item in enumerate(value if not where else value[:1]):
            firsts.setdefault(_signature(item), index)
        for index in sorted(firsts.values()):
            yield (*where, index)
            yield from _transcript_fields(value[index], (*where, index))


@pytest.mark.parametrize("name", ["agents_booked_without_approval.chat.json", "agents_booked_without_approval.agents.json",
                                  "pydantic_ai_booked_without_approval.pydantic_ai.json",
                                  "langgraph_booked_without_approval.lc.json",
                                  "pydantic_ai_booked_without_approval.anthropic.json"])
def test_every_field_of_a_real_transcript_mutated_to_each_wrong_type(tmp_path, name):
    """--check (run here) over a framework's own transcript with each field set to each wrong kind: exit 0, 1 or 2,
    never a traceback; exit 2 names the file."""
    with open(os.path.join(CORPUS, name), encoding="utf-8") as f:
        original = json.load(f)
    target, seen = tmp_path / name, 0
    for where in _transcript_fields(original):
        *parent_path, key = where
        parent = original
        for step in parent_path:
            parent = parent[step]
        for kind, wrong in WRONG.items():
            if kind != "nan" and _kind(wrong) == _kind(parent[key]):
                continue
            mutated = json.loads(json.dumps(original))
            node = mutated
            for step in parent_path:
                node = node[step]
            node[key] = wrong
            target.write_text(json.dumps(mutated, allow_nan=True), encoding="utf-8")
            out = _in_process(tmp_path, "--check", str(target), "--json")
            assert out.stderr == "" and out.returncode in (0, 1, 2), (where, kind, out.stderr)
            if out.returncode == 2:
                assert str(target) in json.loads(out.stdout)["files"][0]["error"], (where, kind)
            seen += 1
    assert seen > 100

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
from handloop import audit

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
    for _ in range(audit.MAX_DEPTH + 5):
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
    for where, kind, snap in _mutations(recorded):
        seen += 1
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

"""MCP results as real servers send them (issue 37): nested objects and lists of records reach the model cut to
the declared paths (`slots[].slot_id`), a write's Source over such a path lets a listed slot through and refuses
an invented one, and whatever the cut drops is said once, in the printout and in the audit file's trace. The
clinic's server (tests/clinic_mcp/clinic_mcp.py) is written with the official SDK, over stdio and Streamable HTTP."""
import json
import os
import sqlite3

import pytest

from handloop import MCPServer, ToolError, config, toolset
from handloop.mcp import results as mcp_results
from conftest import ROOT, read_audit, run_agent

mcp = pytest.importorskip("mcp")

HERE = os.path.join(ROOT, "tests", "clinic_mcp")
CLINIC = os.path.join(HERE, "clinic.py")
SLOTS = {"fields": ("doctor", "date", "slots[].slot_id", "slots[].start"), "required": ("slots[].slot_id",)}


def rule(fields):
    return MCPServer("s", command=["x"], tools={"t": fields}).rule("t")


def visits(tmp_path):
    path = tmp_path / "audit" / "clinic.db"
    if not path.exists():
        return []
    with sqlite3.connect(path) as db:
        return db.execute("SELECT patient_id, slot_id FROM visits").fetchall()


def tool_results(snap, name):
    names = {c["id"]: c["function"]["name"] for m in snap["messages"] for c in m.get("tool_calls") or []}
    return [json.loads(m["content"]) for m in snap["messages"] if m["role"] == "tool" and names[m["tool_call_id"]] == name]


def notices(snap, name):
    return [t.get("notice") for record in snap["trace"] for t in record["tools"] if t["name"] == name]


def test_a_nested_result_is_cut_to_its_declared_paths_at_any_depth_and_says_what_it_dropped():
    payload = {"doctor": "Kim", "date": "2026-12-04", "internal": {"billing": "B-77"}, "score": float("nan"),
               "slots": [{"slot_id": "S-0900", "start": "09:00", "room": {"floor": 2}}, "junk", {"start": "10:30"}]}
    cut = toolset.trim("list_slots", payload, rule=rule({**SLOTS, "required": ()}))
    assert cut == {"doctor": "Kim", "date": "2026-12-04", "slots": [{"slot_id": "S-0900", "start": "09:00"},
                                                                    {"start": "10:30"}]}
    assert cut.notice == {"dropped": ["internal.billing", "score", "slots[]", "slots[].room.floor"], "more": 0, "cut": []}
    with pytest.raises(ToolError, match=r"slots\[\]\.slot_id"):         # a record without the required path
        toolset.trim("list_slots", payload, rule=rule(SLOTS))
    deep = rule(("a.b[].c.d", "tags[]"))
    got = toolset.trim("t", {"a": {"b": [{"c": {"d": 1, "e": 2}}], "x": 3}, "tags": ["v", {"w": 1}]}, rule=deep)
    assert got == {"a": {"b": [{"c": {"d": 1}}]}, "tags": ["v"]}
    assert got.notice["dropped"] == ["a.b[].c.e", "a.x", "tags[].w"]


def test_unknown_fields_never_pass_whatever_shape_they_come_in():
    none_declared = toolset.trim("t", {"secret": {"password": "hunter2"}, "list": [{"k": 1}]}, rule=rule(("id",)))
    assert none_declared == {} and none_declared.notice["dropped"] == ["list[].k", "secret.password"]
    shapes = toolset.trim("t", {"id": {"nested": "x"}, "doctor": ["a", "b"], "slots": "S-1"},
                          rule=rule(("id", "doctor.name", "slots[].slot_id")))
    assert shapes == {} and shapes.notice["dropped"] == ["doctor", "id.nested", "slots"]   # records where a value was...
    clean = toolset.trim("t", {"id": "x"}, rule=rule(("id",)))
    assert clean == {"id": "x"} and clean.notice is None


def test_a_hostile_result_is_bounded_in_list_length_and_string_size_and_the_cut_is_said():
    huge = {"slots": [{"slot_id": "S" * 10_000}] * 100_000, **{f"k{i}": i for i in range(5000)}}
    cut = toolset.trim("t", huge, rule=rule(("slots[].slot_id",)))
    assert len(cut["slots"]) == config.MCP_LIST_ITEMS and len(cut["slots"][0]["slot_id"]) == config.MCP_STRING_CHARS
    assert {"path": "slots[]", "items": config.MCP_LIST_ITEMS, "of": 100_000} in cut.notice["cut"]
    assert {"path": "slots[].slot_id", "chars": config.MCP_STRING_CHARS} in cut.notice["cut"]
    assert len(cut.notice["dropped"]) == mcp_results.NOTICE_PATHS and cut.notice["more"] == 5000 - mcp_results.NOTICE_PATHS


@pytest.mark.parametrize("fields,wrong", [
    (("",), "fields must be a list"), (("slots", "slots[].slot_id"), "disagrees with another about 'slots'"),
    (("a.b", "a[].c"), "about 'a'"), (("tags", "tags[]"), "about 'tags'"), (("a[b",), "is not a field path"),
    (("a..b",), "is not a field path"), (tuple(["x." * 8 + "y"]), "at most 8 steps")])
def test_a_field_path_that_cannot_be_read_one_way_is_a_declaration_error(fields, wrong):
    with pytest.raises(ValueError, match=f"tool 't'.*{wrong}".replace("[", r"\[").replace("]", r"\]")):
        MCPServer("s", command=["x"], tools={"t": fields})


def test_the_clinic_over_its_sdk_server_books_the_listed_slot_once_and_says_the_cut_once(tmp_path):
    out = run_agent("--agent", CLINIC, "--run-id", "c1", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    snap = read_audit(tmp_path / "audit", "c1")
    assert (snap["status"], snap["reason"], snap["mode"]) == ("suspended", "awaiting_confirmation", "mcp")
    listed = tool_results(snap, "list_slots")                        # what the model got: nested, cut
    assert listed[0]["slots"][0] == {"slot_id": "S-0900", "start": "09:00"} and len(listed[0]["slots"]) == 3
    assert len(listed[1]["slots"]) == config.MCP_LIST_ITEMS
    text = json.dumps(snap["messages"])
    assert "visit_type" not in text and "billing_code" not in text and "insurance" not in text
    first, second = notices(snap, "list_slots")                      # two calls, each path said once
    assert first["dropped"] == ["internal.billing_code", "internal.note", "slots[].room.floor", "slots[].room.number",
                                "slots[].visit_type"] and first["cut"] == []
    assert second == {"dropped": [], "more": 0, "cut": [{"path": "slots[]", "items": 100, "of": 150}]}
    assert notices(snap, "find_patient")[0]["dropped"] == ["matches", "patient.insurance.member",
                                                           "patient.insurance.provider"]
    assert out.stdout.count("✂ list_slots") == 2 and "slots[].room.floor, slots[].room.number, slots[].visit_type" \
        in out.stdout and "first 100 of 150" in out.stdout
    assert visits(tmp_path) == []
    done = run_agent("--confirm", "c1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert read_audit(tmp_path / "audit", "c1")["status"] == "done" and visits(tmp_path) == [("P-17", "S-0900")]
    assert run_agent("--confirm", "c1", cwd=tmp_path).returncode == 2 and len(visits(tmp_path)) == 1
    assert "✂" not in done.stdout


def test_a_slot_no_listing_gave_is_refused_by_the_source_over_the_records_path(tmp_path):
    out = run_agent("--agent", CLINIC, "--run-id", "inv", cwd=tmp_path, env={"CLINIC_SCRIPT": "invent"})
    assert out.returncode == 0, out.stderr
    snap = read_audit(tmp_path / "audit", "inv")
    blocked = [t for record in snap["trace"] for t in record["tools"] if t["name"] == "book_appointment"]
    assert [(t["status"], t["guard"]) for t in blocked] == [("blocked", "provenance")]
    refusal = tool_results(snap, "book_appointment")[0]["error"]
    assert "S-2359" in refusal and "S-0900" in refusal                 # it names what the listing offered
    assert snap["memory"]["proposal"] is None and visits(tmp_path) == []


def test_the_clinic_over_streamable_http(tmp_path):
    import sys
    from test_mcp_http import Process
    server = Process([sys.executable, os.path.join(HERE, "clinic_mcp.py"), "--http"], dict(os.environ))
    try:
        env = {"CLINIC_URL": server.url}
        out = run_agent("--agent", CLINIC, "--run-id", "web", cwd=tmp_path, env=env)
        assert out.returncode == 0, out.stderr
        snap = read_audit(tmp_path / "audit", "web")
        assert server.url in out.stdout and tool_results(snap, "list_slots")[0]["slots"][1]["slot_id"] == "S-1030"
        assert "slots[].visit_type" in notices(snap, "list_slots")[0]["dropped"] and "✂ list_slots" in out.stdout
        done = run_agent("--confirm", "web", cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        assert visits(tmp_path) == [("P-17", "S-0900")]
    finally:
        server.stop()

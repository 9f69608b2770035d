"""The English helpdesk agent (tests/helpdesk_mcp/): its own asset MCP server, written with the official SDK, over
stdio and Streamable HTTP; a write whose effect is a serial (an id by no `*_id` name) and a model (a schema enum,
no aliases), held and shown exactly, every argument (the ticket too), and made once confirmed. Through the command
line in new processes and the real openai client; assertions read states, stores and audit files."""
import json
import os
import sqlite3
import sys

import pytest

from handloop import Agent, MCPServer, Source, Tool
from conftest import ROOT, read_audit, run_agent

mcp = pytest.importorskip("mcp")

HERE = os.path.join(ROOT, "tests", "helpdesk_mcp")
AGENT = os.path.join(HERE, "it_helpdesk.py")
ASSETS = [sys.executable, os.path.join(HERE, "asset_mcp.py")]


def orders(tmp_path):
    path = tmp_path / "audit" / "helpdesk.db"
    if not path.exists():
        return []
    with sqlite3.connect(path) as db:
        return db.execute("SELECT ticket_id, serial, model FROM orders").fetchall()


def start(tmp_path, run_id, env=None):
    out = run_agent("--agent", AGENT, "--run-id", run_id, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    return read_audit(tmp_path / "audit", run_id)


def check(tmp_path, *paths, agent=None):
    return run_agent("--check", *paths, *(["--agent", agent] if agent else []), "--json", cwd=tmp_path)


def test_the_order_its_words_offered_is_held_shown_exactly_confirmed_once_and_ordered(tmp_path):
    snap = start(tmp_path, "h1")
    # it named the ticket T-1042 beside the serial and the model in words; asked for the call, the call is held
    assert (snap["status"], snap["reason"], snap["mode"]) == ("suspended", "awaiting_confirmation", "mcp")
    [record] = snap["memory"]["proposals"]
    assert [(c["tool"], c["args"], c["state"]) for c in record["calls"]] == \
        [("order_laptop", {"ticket_id": "T-1042", "serial": "SN7Q2X9K", "model": "X1-14"}, "proposed")]
    assert orders(tmp_path) == []
    done = run_agent("--confirm", "h1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert read_audit(tmp_path / "audit", "h1")["status"] == "done"
    assert orders(tmp_path) == [("T-1042", "SN7Q2X9K", "X1-14")]
    assert "None" not in done.stdout
    assert run_agent("--confirm", "h1", cwd=tmp_path).returncode == 2 and len(orders(tmp_path)) == 1
    verdicts = json.loads(check(tmp_path, "audit/run-h1.json").stdout)["files"][0]["checks"]
    assert {v["id"]: v["verdict"] for v in verdicts}["write_after_confirmation"] == "pass"


def test_only_the_allowed_tools_reach_the_model_cut_to_their_fields(tmp_path):
    snap = start(tmp_path, "h2")
    shown = {t["function"]["name"]: t["function"] for t in snap["tools"]}
    assert set(shown) == {"lookup_ticket", "check_warranty", "order_laptop"}         # delete_asset is not allowed
    assert len(shown["lookup_ticket"]["description"]) <= 500                         # the server's text, bounded
    text = json.dumps(snap["messages"])
    assert "hunter2" not in text and "internal_notes" not in text
    assert snap["agent"]["tools"]["order_laptop"]["choices"] == {"model": {"X1-14": [], "MBA-13": [], "T14-G5": []}}


def test_a_ticket_from_another_record_than_the_serial_is_shown_exactly_and_ordered_only_once_confirmed(tmp_path):
    """Words offered Alice's order; the call the model makes (Bob's ticket, Alice's serial) is what is held and
    shown, every argument, and only its confirmation orders it."""
    shown = run_agent("--agent", AGENT, "--run-id", "swap", cwd=tmp_path, env={"HELPDESK_SCRIPT": "swap"})
    assert shown.returncode == 0, shown.stderr
    snap = read_audit(tmp_path / "audit", "swap")
    assert (snap["status"], snap["reason"]) == ("suspended", "awaiting_confirmation")
    assert orders(tmp_path) == []
    proposal = snap["memory"]["proposal"]                                            # the held call states the ticket
    assert (proposal["tool"], proposal["args"]) == \
        ("order_laptop", {"ticket_id": "T-2001", "serial": "SN7Q2X9K", "model": "X1-14"})
    assert "None" not in shown.stdout and "T-2001" in shown.stdout and "SN7Q2X9K" in shown.stdout
    again = run_agent("--confirm", "swap", cwd=tmp_path, env={"HELPDESK_SCRIPT": "swap"})   # the user saw it
    assert again.returncode == 0, again.stderr
    assert orders(tmp_path) == [("T-2001", "SN7Q2X9K", "X1-14")]


def test_bobs_serial_on_alices_order_is_shown_and_a_no_orders_nothing(tmp_path):
    shown = run_agent("--agent", AGENT, "--run-id", "bob", cwd=tmp_path, env={"HELPDESK_SCRIPT": "bob"})
    assert shown.returncode == 0, shown.stderr
    snap = read_audit(tmp_path / "audit", "bob")
    assert (snap["status"], snap["reason"]) == ("suspended", "awaiting_confirmation") and orders(tmp_path) == []
    assert snap["memory"]["proposal"]["args"] == {"ticket_id": "T-1042", "serial": "SN3M8P1Z", "model": "X1-14"}
    assert "SN3M8P1Z" in shown.stdout
    out = run_agent("--reply", "no, that is Bob's laptop", "bob", cwd=tmp_path, env={"HELPDESK_SCRIPT": "bob"})
    assert out.returncode == 0, out.stderr
    snap = read_audit(tmp_path / "audit", "bob")
    assert [c["state"] for c in snap["memory"]["proposals"][0]["calls"]] == ["declined"] and orders(tmp_path) == []


def test_the_asset_server_over_http_with_its_declared_bearer_token(tmp_path):
    from test_mcp_http import Process
    server = Process(ASSETS + ["--http"], dict(os.environ, ASSETS_TOKEN="s3cret-assets"))
    try:
        env = {"HELPDESK_ASSETS_URL": server.url, "HELPDESK_ASSETS_TOKEN": "s3cret-assets"}
        snap = start(tmp_path, "web", env)
        assert snap["status"] == "suspended" and snap["reason"] == "awaiting_confirmation"
        done = run_agent("--confirm", "web", cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        assert orders(tmp_path) == [("T-1042", "SN7Q2X9K", "X1-14")]
        assert "s3cret-assets" not in (tmp_path / "audit" / "run-web.json").read_text()
        refused = run_agent("--agent", AGENT, "--run-id", "nope", cwd=tmp_path,
                            env=dict(env, HELPDESK_ASSETS_TOKEN="wrong"))
        assert refused.returncode == 3 and not (tmp_path / "audit" / "run-nope.json").exists()
    finally:
        server.stop()


def _agent_file(tmp_path, body):
    path = tmp_path / "mine.py"
    path.write_text("import sys\nfrom handloop import Agent, MCPServer, Tool\n"
                    f"ASSETS = {ASSETS!r}\n" + body, encoding="utf-8")
    return str(path)


LOOKUP = "Tool('lookup_ticket', 'd', {'type': 'object', 'properties': {}}, lambda: {})"


def test_a_server_tool_colliding_with_a_local_tool_is_a_declaration_error_naming_both(tmp_path):
    with pytest.raises(ValueError, match="MCP server 'assets' tool 'lookup_ticket' collides with the local tool"):
        Agent("a", "p", [Tool("lookup_ticket", "d", {"type": "object", "properties": {}}, lambda: {})],
              mcp=[MCPServer("assets", command=ASSETS, tools={"lookup_ticket": ("serial",)})])
    with pytest.raises(ValueError, match="collides with MCP server 'a' tool 'x'"):
        Agent("a", "p", [], mcp=[MCPServer("a", command=ASSETS, tools={"x": ("f",)}),
                                 MCPServer("b", url="http://127.0.0.1:1/mcp", tools={"x": ("f",)})])
    path = _agent_file(tmp_path, f"AGENT = Agent('a', 'p', [{LOOKUP}], language='en', mcp=[MCPServer('assets', "
                                 "command=ASSETS, tools={'lookup_ticket': ('serial',)})])\n")
    out = run_agent("--agent", path, cwd=tmp_path)
    assert out.returncode == 2 and "lookup_ticket" in out.stderr and "assets" in out.stderr


def test_a_tool_the_server_does_not_offer_is_refused_before_any_model_request(tmp_path):
    asked = tmp_path / "asked"
    path = _agent_file(tmp_path, f"AGENT = Agent('a', 'p', [], language='en', offline=lambda r: open({str(asked)!r}, "
                                 "'w').write('x') and {'content': 'hi'}, mcp=[MCPServer('assets', command=ASSETS, "
                                 "tools={'get_asset_owner': ('serial', 'owner')})])\n")
    out = run_agent("--agent", path, "--run-id", "x", cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "'assets'" in out.stderr and "get_asset_owner" in out.stderr
    assert not asked.exists() and not (tmp_path / "audit" / "run-x.json").exists()


def test_several_servers_give_one_agent_their_tools_and_a_server_tool_sources_a_local_write(tmp_path):
    from handloop import toolset
    from mcp_util import SDK_SERVER
    write = Tool("order", "d", {"type": "object", "properties": {"serial": {"type": "string"}}},
                 lambda serial, idempotency_key: {"ok": serial}, kind="write", takes=("idempotency_key",),
                 sources=(Source(("serial",), "lookup_ticket", ("serial",)),), effect=(("serial", "id"),))
    agent = Agent("two", "p", [write], language="en", planning=False, mcp=[
        MCPServer("assets", command=ASSETS, tools={"lookup_ticket": ("ticket_id", "serial")}),
        MCPServer("weather", command=[sys.executable, SDK_SERVER], tools={"search_location": ("latitude", "longitude")})])
    ts = toolset.ToolSet("two", agent=agent)
    try:
        assert ts.server_of == {"lookup_ticket": "assets", "search_location": "weather"}
        assert list(ts.tools) == ["order", "lookup_ticket", "search_location"]
        found = ts.run(ts.prepare([{"id": "1", "function": {"name": "search_location",
                                                            "arguments": json.dumps({"city": "西安"})}}])[0], None)
        assert found == {"latitude": 34.2583, "longitude": 108.9286}
    finally:
        ts.close()


def test_the_public_api_runs_the_helpdesk_with_its_mcp_server_and_resumes_it_in_mcp_mode(tmp_path, monkeypatch):
    import handloop
    from handloop.cli import session
    monkeypatch.setenv("HELPDESK_DB", str(tmp_path / "orders.db"))
    agent = session.load_file(AGENT)
    model = handloop.offline_model(agent.offline, name="scripted")
    try:
        r, ts = handloop.start(agent, "api", audit_dir=str(tmp_path / "a"))
        try:
            handloop.run(r, model, ts)
        finally:
            ts.close()
        assert (r.status, r.mode) == ("suspended", "mcp")
        r, ts = handloop.confirm(agent, "api", audit_dir=str(tmp_path / "a"))
        try:
            assert ts.remote == {"lookup_ticket", "check_warranty"} and ts.clients["assets"].conn is None   # lazy
            handloop.run(r, model, ts)
        finally:
            ts.close()
    finally:
        model.close()
    assert r.status == "done" and r.memory.writes[0]["args"] == {"serial": "SN7Q2X9K", "model": "X1-14"}

"""Hostile MCP servers under a whole run (the offline model through the fake endpoint): unknown
fields, isError, garbage, nothing at all, death mid-call. Each run ends in a clear state with a
loadable audit file, books nothing unconfirmed and never books twice."""
import json
import time

import pytest

from handloop import audit
from handloop import config
from handloop import loop
from handloop import runs
from handloop import model
from handloop.llm.endpoint import Endpoint  # noqa: E402
from handloop.demo import offline
from handloop import tools
from handloop import toolset
from conftest import GOAL
from mcp_util import fake_command
import test_mcp_http

fake = test_mcp_http.fake       # the scripted Streamable HTTP peer: test_mcp_http.py's fixture, used here by name


@pytest.fixture
def offline_ask():
    endpoint = Endpoint(offline.respond)
    ask = model.connect(endpoint.url, "k", "offline", loopback=True)
    yield ask
    ask.close()
    endpoint.close()


@pytest.mark.parametrize("flags, reason, detail", [
    ("extra", "awaiting_confirmation", None),           # unknown fields are cut away, the run goes on
    ("garbage", "awaiting_confirmation", None),         # noise on stdout is skipped
    ("crash-once", "awaiting_confirmation", "MCP 服务"),  # died mid-call: a tool error, then a restarted server
    ("no-allowed", "awaiting_reply", "缺少"),             # nothing usable: tool errors, the model gives up
    ("is-error", "awaiting_reply", None),               # and the run waits for the user, nothing proposed
    ("hang", "awaiting_reply", "没有回答"),               # nothing at all: timeouts, the model gives up
])
def test_a_hostile_server_under_a_whole_run(tmp_path, offline_ask, monkeypatch, flags, reason, detail):
    monkeypatch.setattr(config, "MCP_TIMEOUT", 1.0)
    store = tools.BookingStore(tmp_path / "bookings.db")
    ts = toolset.ToolSet("h", tools.xian_agent(store), "mcp", mcp_command=fake_command(flags, tmp_path / "marker"))
    try:
        r = runs.begin(str(tmp_path), "h", GOAL, ts, "offline", fsync=False)
        loop.run(r, offline_ask, ts)
        assert audit.load(r.path)["status"] == r.status == "suspended" and r.reason == reason and store.count() == 0
        errors = [m["content"] for m in r.messages if m["role"] == "tool" and '"error"' in m["content"]]
        if detail:
            assert any(detail in e for e in errors), errors
        for m in r.messages:                            # nothing off the allow-list reached the model
            assert "secret" not in (m.get("content") or "") and "nested" not in (m.get("content") or "")
        if r.reason == "awaiting_confirmation":
            runs.add_user(r, "确认")
            loop.run(r, offline_ask, ts)
            assert r.status == "done" and store.count() == 1
    finally:
        ts.close()


# ---- servers that dribble: every read has a deadline, and the MCP error comes before the tool's timeout ----
def _dribbling_http(fake, which):
    """A Streamable HTTP server whose answer to `which` comes one byte every 0.3 s (JSON, or SSE)."""
    def script(message, headers, engine):
        if message.get("method") != which:
            return "engine"
        answer = json.dumps(engine.dispatch(message)).encode()
        if which == "tools/call":                  # as an event stream
            return 200, {"Content-Type": "text/event-stream"}, b"data: " + answer + b"\n\n", 0.3
        extra = {"Mcp-Session-Id": "s1"} if which == "initialize" else {}
        return 200, {"Content-Type": "application/json", **extra}, answer, 0.3
    return fake(script)


@pytest.mark.parametrize("which", ["initialize", "tools/list"])
def test_an_http_server_dribbling_its_handshake_times_out_at_the_deadline(fake, which):
    from handloop.mcp import http as mcp_http
    from handloop import mcp_tools
    peer = _dribbling_http(fake, which)
    c = mcp_http.HTTPClient(peer.url, timeout=1.0, mode="legacy")
    started = time.monotonic()
    try:
        with pytest.raises(mcp_tools.MCPTimeout):
            c.list_tools()
    finally:
        c.close()
    assert time.monotonic() - started < 3.0


def test_an_http_server_dribbling_a_tool_reply_is_an_mcp_error_the_model_reads(fake, tmp_path, offline_ask,
                                                                               monkeypatch):
    monkeypatch.setattr(config, "MCP_TIMEOUT", 1.0)
    peer = _dribbling_http(fake, "tools/call")
    ts = toolset.ToolSet("d", tools.xian_agent(tools.BookingStore(tmp_path / "bookings.db")), "mcp", mcp_url=peer.url)
    try:
        r = runs.begin(str(tmp_path), "d", GOAL, ts, "offline", fsync=False)
        started = time.monotonic()
        loop.run(r, offline_ask, ts)
        assert audit.load(r.path)["status"] == r.status != "running"
        statuses = [t["status"] for record in r.trace for t in record["tools"] if t["name"] == "search_location"]
        assert statuses and set(statuses) == {"error"}              # the MCP error, never the tool's timeout
        errors = [m["content"] for m in r.messages if m["role"] == "tool" and "MCP" in m["content"]]
        assert errors and all("没有回答" in e for e in errors)
        assert time.monotonic() - started < 3.0 * len(statuses) + 5
    finally:
        ts.close()


def test_a_stdio_server_dribbling_its_replies_times_out_at_the_deadline(tmp_path, offline_ask, monkeypatch):
    from handloop import mcp_tools
    c = mcp_tools.Client(fake_command("dribble"), timeout=1.0, close_grace=0.3)
    started = time.monotonic()
    try:
        with pytest.raises(mcp_tools.MCPTimeout):
            c.start()
    finally:
        c.close()
    assert time.monotonic() - started < 4.0
    monkeypatch.setattr(config, "MCP_TIMEOUT", 1.0)
    ts = toolset.ToolSet("s", tools.xian_agent(tools.BookingStore(tmp_path / "bookings.db")), "mcp",
                         mcp_command=fake_command("dribble-call"))
    try:
        r = runs.begin(str(tmp_path), "s", GOAL, ts, "offline", fsync=False)
        loop.run(r, offline_ask, ts)
        statuses = {t["status"] for record in r.trace for t in record["tools"] if t["name"] == "search_location"}
        assert statuses == {"error"} and r.status != "running"
    finally:
        ts.close()


def test_a_call_that_must_restart_the_server_is_still_answered_before_the_tools_timeout(tmp_path, monkeypatch):
    """The handshake of a new session is inside the call's deadline (a resumed run starts its server
    on its first call): a server that answers discover, initialize and the call each just in time
    still gives the model the MCP error, not the executor's timeout."""
    from handloop import mcp_tools
    c = mcp_tools.Client(fake_command("dribble"), timeout=1.5, close_grace=0.3)
    started = time.monotonic()
    try:
        with pytest.raises(mcp_tools.MCPTimeout):
            c.call_tool("search_location", {"city": "西安"})
    finally:
        c.close()
    assert time.monotonic() - started < 1.5 + 1.0

"""Hostile MCP servers under a whole run (the offline model through the fake endpoint): unknown
fields, isError, garbage, nothing at all, death mid-call. Each run ends in a clear state with a
loadable audit file, books nothing unconfirmed and never books twice."""
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
    ts = toolset.ToolSet("h", store, "mcp", mcp_command=fake_command(flags, tmp_path / "marker"))
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

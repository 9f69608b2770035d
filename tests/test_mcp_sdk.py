"""Interop with the official MCP Python SDK (test-only dependency): the SDK's client against our
server, and our client (and a whole `--mcp` run) against a server written with the SDK, in the
probing (2026-07-28 first) and legacy (initialize) modes. Skipped only if `mcp` is not importable."""
import asyncio
import json
import sys

import pytest

mcp = pytest.importorskip("mcp")

from handloop import mcp_tools                                   # noqa: E402
from conftest import read_audit, run_cli           # noqa: E402
from mcp_util import SDK_SERVER, SERVER_COMMAND, XIAN, server_env    # noqa: E402


@pytest.fixture(autouse=True)
def sdk_2x():
    """These tests use the 2.x API (Client(mode=...), MCPServer); an older SDK is a clear failure."""
    if not hasattr(mcp, "Client") or not hasattr(mcp, "MCPError"):
        pytest.fail(f"mcp {getattr(mcp, '__version__', '?')} is too old: install requirements-dev.txt (mcp>=2.3)",
                    pytrace=False)


def sdk_session(scenario, mode, **env):
    """Run `scenario(client)` with the SDK's Client connected to our server over stdio."""
    params = mcp.StdioServerParameters(command=sys.executable, args=SERVER_COMMAND[1:], env=server_env(**env))

    async def main():
        async with mcp.Client(params, mode=mode, read_timeout_seconds=10) as client:
            return await scenario(client)

    return asyncio.run(main())


@pytest.mark.parametrize("mode, version", [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_sdk_client_lists_and_calls_our_server(mode, version):
    async def scenario(client):
        assert client.session.protocol_version == version
        listed = await client.list_tools()
        tools = {t.name: t for t in listed.tools}
        assert list(tools) == ["search_location", "get_weather"]
        assert tools["get_weather"].annotations.read_only_hint is True
        assert set(tools["get_weather"].input_schema["required"]) == {"latitude", "longitude", "date"}
        place = await client.call_tool("search_location", {"city": "西安"})
        assert place.is_error is False and place.structured_content["latitude"] == XIAN["latitude"]
        weather = await client.call_tool("get_weather", dict(XIAN, date="2026-10-01"))
        assert weather.structured_content["condition"] == "rain"
        try:
            unknown = await client.call_tool("no_such_tool", {})
            assert unknown.is_error is True
        except mcp.MCPError as exc:
            assert exc.error.code == -32602
        bad = await client.call_tool("get_weather", {"latitude": "north", "longitude": 108.9, "date": "2026-10-01"})
        assert bad.is_error is True and "latitude" in bad.content[0].text
        return True

    assert sdk_session(scenario, mode)


def test_sdk_client_pages_through_our_list():
    async def scenario(client):
        first = await client.list_tools()
        second = await client.list_tools(cursor=first.next_cursor)
        assert second.next_cursor is None
        return [t.name for t in first.tools + second.tools]

    assert sdk_session(scenario, "legacy", AGENT_MCP_PAGE_SIZE="1") == ["search_location", "get_weather"]


@pytest.mark.parametrize("mode, era", [("auto", "modern"), ("legacy", "legacy")])
def test_our_client_against_an_sdk_server(mode, era):
    # the probe waits as long as the calls: on a loaded machine the SDK server's start alone can outlast the
    # default 3 s, and an unanswered probe is taken for a legacy server (the era asserted here)
    client = mcp_tools.Client([sys.executable, SDK_SERVER], env=server_env(), mode=mode, timeout=20, probe_timeout=20)
    try:
        client.start()
        assert client.era == era and client.server_info["name"] == "sdk-weather"
        assert [t["name"] for t in client.list_tools()][:2] == ["search_location", "get_weather"]
        assert client.call_tool("search_location", {"city": "西安"})["population"] == 12_000_000
        assert client.call_tool("get_weather", dict(XIAN, date="2026-10-02"))["condition"] == "clear"
        with pytest.raises(mcp_tools.ToolFailed, match="search_location"):
            client.call_tool("search_location", {"city": "Atlantis"})
        with pytest.raises(mcp_tools.MCPError):                 # isError (SDK 2.x) or -32602: both accepted
            client.call_tool("no_such_tool", {})
        with pytest.raises(mcp_tools.ToolFailed):
            client.call_tool("get_weather", {"latitude": "north"})
        assert client.starts == 1
    finally:
        client.close()


def test_an_mcp_run_against_an_sdk_server(tmp_path):
    result = run_cli("--mcp", "--run-id", "s1", "--mcp-server", f"{sys.executable} {SDK_SERVER}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    snap = read_audit(tmp_path / "audit", "s1")
    assert (snap["status"], snap["reason"], snap["mode"]) == ("suspended", "awaiting_confirmation", "mcp")
    held = snap["memory"]["proposal"]
    assert (held["tool"], held["args"]["room_type"], held["state"]) == ("book_hotel", "Suite", "proposed")
    assert snap["memory"]["weather"]
    contents = " ".join(m["content"] for m in snap["messages"] if m["role"] == "tool")
    assert "population" not in contents and "humidity" not in contents
    results = [json.loads(m["content"]) for m in snap["messages"] if m["role"] == "tool"]
    assert any(r.get("condition") == "rain" for r in results)

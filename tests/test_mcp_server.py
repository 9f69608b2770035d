"""Protocol conformance of `python -m handloop.demo.weather_server`, over its real stdio: framing, JSON-RPC error
codes, both protocol eras, version negotiation, pagination, tools, and hostile input."""
import json
import time

import pytest

from mcp_util import ENVELOPE, MODERN, XIAN, Peer, server_env

LEGACY = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")


@pytest.fixture
def peer():
    made = []

    def make(**env):
        p = Peer(env=server_env(**env))
        made.append(p)
        return p

    yield make
    for p in made:
        if p.proc.poll() is None:
            p.close()


@pytest.fixture(scope="module")
def served():
    """One initialized server shared by the checks that leave no state behind (it must survive them all)."""
    p = Peer(env=server_env())
    p.initialize()
    yield p
    assert p.close() == 0


def call(p, name, arguments, rid=7, meta=None):
    params = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    return p.ask("tools/call", params, rid=rid)


def test_initialize_with_id_zero_and_absent_params_elsewhere(peer):
    p = peer()
    p.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    reply = p.read()
    assert reply["id"] == 0 and reply["result"]["protocolVersion"] == "2025-11-25"
    assert reply["result"]["capabilities"]["tools"] == {"listChanged": False}
    assert reply["result"]["serverInfo"]["name"]
    p.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    listed = p.ask("tools/list", rid=0)                     # no params at all, id 0 again
    assert [t["name"] for t in listed["result"]["tools"]] == ["search_location", "get_weather"]
    assert p.ask("ping", rid="p")["result"] == {}
    assert p.close() == 0


@pytest.mark.parametrize("requested, offered", [(v, v) for v in LEGACY] + [("2099-01-01", "2025-11-25"),
                                                                          (MODERN, "2025-11-25")])
def test_version_negotiation_echoes_a_supported_version_or_offers_the_newest(peer, requested, offered):
    assert peer().initialize(requested)["protocolVersion"] == offered


def test_notifications_are_never_answered(peer):
    p = peer()
    p.initialize()
    for note in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                 {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}},
                 {"jsonrpc": "2.0", "method": "no/such/notification", "params": [1, 2]},
                 {"jsonrpc": "2.0", "method": "tools/call"},
                 {"jsonrpc": "1.0", "method": 5}):
        p.send(note)
    assert p.ask("ping", rid=42)["id"] == 42                 # the next reply is the ping's: nothing in between


def test_unknown_methods_get_method_not_found_at_once_in_both_eras(peer):
    p = peer()
    started = time.perf_counter()
    assert p.ask("resources/list", rid=1)["error"]["code"] == -32601       # before initialize, too
    p.initialize()
    assert p.ask("no/such/method", {}, rid=2)["error"]["code"] == -32601
    assert p.ask("prompts/get", {"_meta": ENVELOPE}, rid=3)["error"]["code"] == -32601
    assert time.perf_counter() - started < 3.0


def test_requests_before_initialize_are_refused_but_ping_works(peer):
    p = peer()
    assert p.ask("ping", rid=1)["result"] == {}
    for rid, method in ((2, "tools/list"), (3, "tools/call")):
        error = p.ask(method, {"name": "search_location", "arguments": {"city": "西安"}}, rid=rid)["error"]
        assert error["code"] == -32600 and "initialize" in error["message"]
    p.initialize()
    assert "result" in p.ask("tools/list", rid=4)


def test_second_initialize_is_an_invalid_request(peer):
    p = peer()
    p.initialize()
    assert p.ask("initialize", {"protocolVersion": "2025-11-25"}, rid=9)["error"]["code"] == -32600


@pytest.mark.parametrize("line, code", [
    (b"{not json", -32700),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', -32700),
    (b"\xff\xfe garbage bytes", -32700),
    (b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}', -32700),
    (b"[1, 2, 3]", -32600),
    (b"[]", -32600),
    (b'"just a string"', -32600),
    (b"{}", -32600),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', -32600),
    (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600),
    (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600),
])
def test_malformed_lines_get_errors_with_a_null_id_and_serving_goes_on(served, line, code):
    p = served
    p.write(line)
    reply = p.read()
    assert reply["id"] is None and reply["error"]["code"] == code
    assert p.ask("ping", rid=5)["result"] == {}


@pytest.mark.parametrize("message, code", [
    ({"id": 4, "method": "ping"}, -32600),                                   # no "jsonrpc"
    ({"jsonrpc": "2.0", "id": 4, "method": 17}, -32600),
    ({"jsonrpc": "2.0", "id": 4, "method": "ping", "params": [1]}, -32602),
    ({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": "x"}, -32602),
    ({"jsonrpc": "2.0", "id": 4}, -32600),
])
def test_wrong_shapes_get_their_error_with_the_request_id(served, message, code):
    p = served
    p.send(message)
    reply = p.read()
    assert reply["id"] == 4 and reply["error"]["code"] == code


def test_huge_lines_and_blank_lines_do_not_stop_the_server(peer):
    p = peer()
    p.write(b"\r\n\n   \n")                                                 # skipped
    p.write(b'{"pad": "' + b"x" * (3 << 20) + b'"}')
    reply = p.read()
    assert reply["id"] is None and reply["error"]["code"] == -32600 and "longer" in reply["error"]["message"]
    p.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n')               # CRLF is fine too
    assert p.read()["id"] == 1


def test_stray_replies_from_the_client_are_ignored(peer):
    p = peer()
    p.send({"jsonrpc": "2.0", "id": 77, "result": {}})
    p.send({"jsonrpc": "2.0", "id": 78, "error": {"code": 1, "message": "x"}})
    assert p.ask("ping", rid=79)["id"] == 79


def test_tools_list_declares_schemas_and_read_only_annotations(peer):
    p = peer()
    p.initialize()
    tools = {t["name"]: t for t in p.ask("tools/list", {})["result"]["tools"]}
    weather = tools["get_weather"]
    assert weather["inputSchema"]["type"] == "object"
    assert set(weather["inputSchema"]["required"]) == {"latitude", "longitude", "date"}
    assert tools["search_location"]["inputSchema"]["required"] == ["city"]
    for tool in tools.values():
        assert tool["annotations"]["readOnlyHint"] is True and tool["annotations"]["destructiveHint"] is False
        assert "outputSchema" not in tool


def test_pagination_follows_next_cursor_and_rejects_bad_cursors(peer):
    p = peer(AGENT_MCP_PAGE_SIZE="1")
    p.initialize()
    first = p.ask("tools/list", rid=1)["result"]
    assert [t["name"] for t in first["tools"]] == ["search_location"] and isinstance(first["nextCursor"], str)
    second = p.ask("tools/list", {"cursor": first["nextCursor"]}, rid=2)["result"]
    assert [t["name"] for t in second["tools"]] == ["get_weather"] and "nextCursor" not in second
    for rid, cursor in ((3, "bogus"), (4, 5), (5, "page-99"), (6, "page-0")):
        assert p.ask("tools/list", {"cursor": cursor}, rid=rid)["error"]["code"] == -32602


def test_calls_answer_the_demo_data(peer):
    p = peer()
    p.initialize("2025-06-18")
    for city in ("西安", "Xi'an", "xian", "  XI'AN "):
        result = call(p, "search_location", {"city": city})["result"]
        assert result["isError"] is False
        assert {k: result["structuredContent"][k] for k in XIAN} == XIAN
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    rain = call(p, "get_weather", dict(XIAN, date="2026-10-01"))["result"]["structuredContent"]
    clear = call(p, "get_weather", dict(XIAN, date="2026-10-02"))["result"]["structuredContent"]
    assert (rain["condition"], rain["high"], clear["condition"]) == ("rain", 19, "clear")


def test_demo_data_matches_the_local_tools():
    from handloop.demo import weather_server as mcp_server
    from handloop import tools
    source = mcp_server.OfflineWeather()
    for city in tools.FORECASTS:
        place = source.search_location(city)
        for offset in range(len(tools.FORECASTS[city])):
            date = str(tools.FORECAST_START.fromordinal(tools.FORECAST_START.toordinal() + offset))
            local = tools.get_weather(city, date)
            remote = source.get_weather(place["latitude"], place["longitude"], date)
            assert (remote["condition"], remote["high"], remote["low"]) == (local["condition"], local["high"], local["low"])


@pytest.mark.parametrize("name, arguments, words", [
    ("search_location", {"city": "Atlantis"}, "没有城市"),
    ("search_location", {"city": 3}, "city 应为 string"),
    ("search_location", {}, "缺少必填字段 city"),
    ("search_location", {"city": "西安", "country": "CN"}, "不允许字段 country"),
    ("search_location", {"city": ""}, "长度"),
    ("get_weather", dict(XIAN, date="2026-13-01"), "不存在"),
    ("get_weather", dict(XIAN, date="tomorrow"), "格式不对"),
    ("get_weather", dict(XIAN, date="2027-01-01"), "只有"),
    ("get_weather", {"latitude": "34", "longitude": 108.9, "date": "2026-10-01"}, "latitude 应为 number"),
    ("get_weather", {"latitude": True, "longitude": 108.9, "date": "2026-10-01"}, "latitude 应为 number"),
    ("get_weather", {"latitude": 91, "longitude": 108.9, "date": "2026-10-01"}, "之间"),
    ("get_weather", {"latitude": 10 ** 400, "longitude": 108.9, "date": "2026-10-01"}, "之间"),
    ("get_weather", {"latitude": 0, "longitude": 0, "date": "2026-10-01"}, "没有坐标"),
])
def test_bad_arguments_and_tool_failures_are_is_error_results(served, name, arguments, words):
    p = served
    result = call(p, name, arguments)["result"]
    assert result["isError"] is True and words in result["content"][0]["text"], result
    assert "structuredContent" not in result


@pytest.mark.parametrize("params, words", [
    ({"name": "no_such_tool", "arguments": {}}, "unknown tool"),
    ({"arguments": {}}, "params.name"),
    ({"name": 5}, "params.name"),
    ({"name": "search_location", "arguments": ["西安"]}, "arguments"),
])
def test_unknown_tools_and_malformed_call_params_are_invalid_params(served, params, words):
    p = served
    error = p.ask("tools/call", params)["error"]
    assert error["code"] == -32602 and words in error["message"]


def test_lone_surrogates_in_arguments_still_get_a_valid_reply(peer):
    p = peer()
    p.initialize()
    p.write(b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_location","arguments":{"city":"\\ud800"}}}')
    reply = p.read()
    assert reply["id"] == 3 and reply["result"]["isError"] is True


# ---- the stateless 2026-07-28 revision ----
def test_discover_needs_no_initialize_and_says_what_the_server_speaks(peer):
    p = peer()
    result = p.ask("server/discover", {"_meta": ENVELOPE}, rid=0)["result"]
    assert MODERN in result["supportedVersions"] and set(LEGACY) <= set(result["supportedVersions"])
    assert result["resultType"] == "complete" and result["cacheScope"] in ("public", "private")
    assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0
    assert result["capabilities"]["tools"] is not None
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]


def test_modern_requests_carry_their_envelope_and_results_their_type(peer):
    p = peer()
    listed = p.ask("tools/list", {"_meta": ENVELOPE}, rid=1)["result"]
    assert len(listed["tools"]) == 2 and listed["resultType"] == "complete"
    assert "ttlMs" in listed and "cacheScope" in listed
    meta = dict(ENVELOPE, **{"io.modelcontextprotocol/clientInfo": {"name": "x", "version": "1"}, "other/key": 1})
    result = call(p, "get_weather", dict(XIAN, date="2026-10-01"), meta=meta)["result"]
    assert result["resultType"] == "complete" and result["structuredContent"]["condition"] == "rain"
    failed = call(p, "get_weather", dict(XIAN, date="2026-10-99"), meta=ENVELOPE, rid=8)["result"]
    assert failed["isError"] is True and failed["resultType"] == "complete"
    assert p.ask("ping", {"_meta": ENVELOPE}, rid=9)["result"] == {"resultType": "complete"}


def test_modern_paginated_list(peer):
    p = peer(AGENT_MCP_PAGE_SIZE="1")
    first = p.ask("tools/list", {"_meta": ENVELOPE}, rid=1)["result"]
    second = p.ask("tools/list", {"_meta": ENVELOPE, "cursor": first["nextCursor"]}, rid=2)["result"]
    assert [t["name"] for t in first["tools"] + second["tools"]] == ["search_location", "get_weather"]


def test_unsupported_modern_version_names_the_supported_ones(peer):
    p = peer()
    meta = dict(ENVELOPE, **{"io.modelcontextprotocol/protocolVersion": "2099-01-01"})
    error = p.ask("server/discover", {"_meta": meta})["error"]
    assert error["code"] == -32022
    assert error["data"]["requested"] == "2099-01-01" and MODERN in error["data"]["supported"]


@pytest.mark.parametrize("meta", [
    {"io.modelcontextprotocol/protocolVersion": MODERN},
    {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": "all"},
    {"io.modelcontextprotocol/protocolVersion": 20260728, "io.modelcontextprotocol/clientCapabilities": {}},
])
def test_incomplete_envelopes_are_invalid_params(served, meta):
    assert served.ask("tools/list", {"_meta": meta})["error"]["code"] == -32602


def test_discover_without_envelope_is_refused_at_once(peer):
    error = peer().ask("server/discover", {})["error"]
    assert error["code"] in (-32601, -32602)


def test_exits_promptly_on_eof_even_mid_session(peer):
    p = peer()
    p.initialize()
    p.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
    started = time.perf_counter()
    assert p.close() == 0
    assert time.perf_counter() - started < 2.0



def test_the_contracts_command_python_mcp_tools_still_starts_the_weather_server():
    """`python -m handloop.mcp_tools` (the contract's `python mcp_tools.py`) is the client's module; run as a
    program it hands over to the demo's server, which answers as under its own command."""
    import subprocess
    import sys
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}})
    out = subprocess.run([sys.executable, "-m", "handloop.mcp_tools"], input=line + "\n", capture_output=True,
                         text=True, timeout=60, env=server_env())
    answer = json.loads(out.stdout.splitlines()[0])
    assert out.returncode == 0 and answer["result"]["serverInfo"]["name"] == "hotel-agent-weather", out.stderr

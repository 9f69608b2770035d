"""MCP mode of the agent: the tool set (allow-list, trimming, errors, one lazy session) and
`python agent.py --mcp` end to end, offline and through the fake OpenAI endpoint."""
import json
import os
import sys

import pytest

from handloop import loop
from handloop import runs
from handloop import mcp_tools
from handloop import tools
from handloop import toolset
from conftest import BOOK, GOAL, read_audit, run_cli, text, tool_calls
from mcp_util import SERVER_COMMAND, XIAN, fake_command

MCP_PLAN = [{"title": "查坐标", "tool": "search_location"}, {"title": "查天气", "tool": "get_weather", "after": [1]},
            {"title": "搜酒店", "tool": "search_hotels"}, {"title": "预订", "tool": "book_hotel", "after": [2, 3]}]
NAMES = ["set_plan", "mark_step", "search_location", "get_weather", "search_hotels", "book_hotel"]


@pytest.fixture
def mcp_toolset(tmp_path):
    made = []

    def make(command=None, run_id="m1", schemas=None):
        ts = toolset.ToolSet(run_id, tools.xian_agent(tools.BookingStore(tmp_path / "bookings.db")), "mcp",
                             mcp_command=command or SERVER_COMMAND, schemas=schemas)
        made.append(ts)
        return ts

    yield make
    for ts in made:
        ts.close()


def names(schemas):
    return [s["function"]["name"] for s in schemas]


def prepared(ts, name, args):
    return ts.prepare([{"id": "x", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}])[0]


def test_mcp_mode_swaps_local_weather_for_the_servers_tools(mcp_toolset, tmp_path):
    ts = mcp_toolset()
    assert names(ts.schemas) == NAMES and ts.remote == {"search_location", "get_weather"}
    weather = ts.tool("get_weather").parameters
    assert set(weather["required"]) == {"latitude", "longitude", "date"} and "city" not in weather["properties"]
    local = toolset.ToolSet("l1", tools.xian_agent(tools.BookingStore(tmp_path / "local.db")))
    assert names(local.schemas) == ["set_plan", "mark_step", "get_weather", "search_hotels", "book_hotel"]
    assert prepared(ts, "get_weather", {"city": "西安", "date": "2026-10-01"}).problem   # the local shape is gone
    place = ts.run(prepared(ts, "search_location", {"city": "西安"}), None)
    assert place == {"name": "西安", **XIAN, "timezone": "Asia/Shanghai", "country": "中国"}
    weather = ts.run(prepared(ts, "get_weather", dict(XIAN, date="2026-10-01")), None)
    assert weather == {"date": "2026-10-01", "condition": "rain", "high": 19, "low": 14}   # "source" etc. cut


def test_only_allow_listed_tools_reach_the_model_and_odd_schemas_are_tamed(mcp_toolset):
    ts = mcp_toolset(fake_command("many-tools"))
    assert names(ts.schemas) == NAMES and ts.tool("delete_everything") is None
    assert ts.tool("book_hotel").parameters == tools.SCHEMAS["book_hotel"]["parameters"]     # the server cannot replace it
    weather = ts.tool("get_weather").parameters
    assert weather["required"] == ["latitude", "longitude", "date"]
    assert weather["properties"]["latitude"] == {} and weather["properties"]["longitude"] == {"type": "number"}
    assert weather["properties"]["date"]["maxLength"] == 10 and "extra" not in weather["properties"]
    assert prepared(ts, "get_weather", dict(XIAN, date="2026-10-01")).problem is None
    assert "maxLength" in prepared(ts, "get_weather", dict(XIAN, date="2026-10-01x")).problem


def test_results_are_always_cut_to_the_allowed_fields(mcp_toolset):
    ts = mcp_toolset(fake_command("extra"))
    place = ts.run(prepared(ts, "search_location", {"city": "西安"}), None)
    assert place == {"name": "西安", **XIAN, "timezone": "Asia/Shanghai"}
    none_allowed = mcp_toolset(fake_command("no-allowed"), run_id="m2")
    with pytest.raises(tools.ToolError, match="缺少字段 latitude, longitude"):
        none_allowed.run(prepared(none_allowed, "search_location", {"city": "西安"}), None)


def test_trim_keeps_only_scalars_and_shortens_strings():
    payload = {"date": "2026-10-01", "condition": "r" * 500, "high": float("nan"), "low": {"v": 1}, "x": 1}
    rule = tools.WEATHER_SERVER.rule("get_weather")
    assert toolset.trim("get_weather", payload, rule=rule) == {"date": "2026-10-01", "condition": "r" * 200}
    with pytest.raises(tools.ToolError):
        toolset.trim("get_weather", {"date": "2026-10-01", "condition": ["rain"]}, rule=rule)


def test_is_error_results_and_protocol_errors_become_tool_errors(mcp_toolset, tmp_path):
    failing = mcp_toolset(fake_command("is-error"))
    with pytest.raises(tools.ToolError, match="get_weather 失败：upstream weather service is down"):
        failing.run(prepared(failing, "get_weather", dict(XIAN, date="2026-10-01")), None)
    crashing = mcp_toolset(fake_command("crash-once", tmp_path / "marker"), run_id="m2")
    with pytest.raises(tools.ToolError, match="MCP 调用 search_location 失败.*boom"):
        crashing.run(prepared(crashing, "search_location", {"city": "西安"}), None)
    assert crashing.run(prepared(crashing, "search_location", {"city": "西安"}), None)["latitude"] == XIAN["latitude"]


def test_a_server_missing_a_tool_is_refused_and_closed(monkeypatch):
    started = []
    real = mcp_tools._Connection

    def spy(*args):
        started.append(real(*args))
        return started[-1]

    monkeypatch.setattr(mcp_tools, "_Connection", spy)
    with pytest.raises(mcp_tools.MCPError, match=r"get_weather\(latitude, longitude, date\)"):
        toolset.ToolSet("m1", tools.xian_agent(None), "mcp", mcp_command=fake_command("no-weather"))
    assert started and started[0].proc.poll() is not None


def test_a_resumed_run_uses_its_recorded_tools_and_starts_the_server_only_when_called(mcp_toolset, tmp_path):
    recorded = mcp_toolset().schemas
    missing = mcp_toolset([str(tmp_path / "no-such-server")], run_id="m2", schemas=recorded)
    assert missing.schemas == recorded and missing.mcp.conn is None
    assert prepared(missing, "get_weather", dict(XIAN, date="2026-10-01")).problem is None
    with pytest.raises(tools.ToolError, match="无法启动"):
        missing.run(prepared(missing, "get_weather", dict(XIAN, date="2026-10-01")), None)
    lazy = mcp_toolset(run_id="m3", schemas=recorded)
    assert lazy.mcp.conn is None
    assert lazy.run(prepared(lazy, "get_weather", dict(XIAN, date="2026-10-02")), None)["condition"] == "clear"
    proc = lazy.mcp.conn.proc
    lazy.close()
    assert proc.poll() == 0


def test_mcp_tools_are_shown_whole_so_a_resume_from_the_record_checks_every_rule(mcp_toolset, tmp_path):
    recorded = mcp_toolset().schemas
    weather = next(s["function"]["parameters"] for s in recorded if s["function"]["name"] == "get_weather")
    assert "pattern" in weather["properties"]["date"] and weather["additionalProperties"] is False
    local = next(s["function"]["parameters"] for s in recorded if s["function"]["name"] == "book_hotel")
    assert "additionalProperties" not in local                    # a local tool is shown its shape only
    resumed = mcp_toolset([str(tmp_path / "no-such-server")], run_id="m4", schemas=recorded)
    assert "arguments.date" in prepared(resumed, "get_weather", dict(XIAN, date="10/01")).problem
    assert "extra" in prepared(resumed, "get_weather", dict(XIAN, date="2026-10-01", extra=1)).problem


def test_through_the_fake_endpoint_coordinates_must_come_from_search_location(mcp_toolset, fake_model, tmp_path):
    ts = mcp_toolset()
    ask, endpoint = fake_model([
        tool_calls(("set_plan", {"steps": MCP_PLAN})),
        tool_calls(("search_location", {"city": "Xi'an"}, "s1"), ("search_hotels", {"city": "西安", "check_in": "2026-10-01", "nights": 2}, "s2")),
        tool_calls(("get_weather", {"latitude": 10.0, "longitude": 10.0, "date": "2026-10-01"}, "w1")),
        tool_calls(("get_weather", dict(XIAN, date="2026-10-01"), "w2")),
        tool_calls(("book_hotel", BOOK, "b1")),
        text("2026-10-01 有雨，建议订 古城墙酒店 Suite 两晚共 ¥1760，确认吗？"),
    ])
    r = runs.begin(str(tmp_path), "m1", GOAL, ts, "scripted", fsync=False)
    loop.run(r, ask, ts)
    assert (r.status, r.reason, r.mode) == ("suspended", "awaiting_confirmation", "mcp")
    seen = endpoint.requests[0]["tools"]
    assert names(seen) == NAMES and seen == r.tools == read_audit(tmp_path, "m1")["tools"]
    results = {m["tool_call_id"]: json.loads(m["content"]) for m in r.messages if m["role"] == "tool"}
    assert results["w1"]["blocked_by"] == "provenance" and "search_location" in results["w1"]["error"]
    assert results["w2"] == {"date": "2026-10-01", "condition": "rain", "high": 19, "low": 14}
    assert results["b1"]["blocked_by"] == "unconfirmed_write"
    assert (results["b1"]["proposal"]["tool"], results["b1"]["proposal"]["args"]) == ("book_hotel", BOOK)
    assert r.memory.proposal["args"] == BOOK and r.memory.proposal["state"] == "proposed"
    assert r.memory.fact("locations") == [{"name": "西安", **XIAN, "timezone": "Asia/Shanghai", "country": "中国"}]
    assert read_audit(tmp_path, "m1")["mode"] == "mcp"


def test_cli_mcp_run_suspends_and_confirm_books_once(tmp_path):
    first = run_cli("--mcp", "--run-id", "m1", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "MCP 模式" in first.stdout and "search_location" in first.stdout and "Traceback" not in first.stderr
    snap = read_audit(tmp_path / "audit", "m1")
    assert (snap["status"], snap["mode"]) == ("suspended", "mcp")
    assert names(snap["tools"]) == NAMES
    assert set(snap["tools"][3]["function"]["parameters"]["required"]) == {"latitude", "longitude", "date"}
    called = [c["function"]["name"] for m in snap["messages"] if m.get("tool_calls") for c in m["tool_calls"]]
    assert called.index("search_location") < called.index("get_weather")
    assert all("source" not in m["content"] for m in snap["messages"] if m["role"] == "tool")
    store = tools.BookingStore(tmp_path / "audit" / "bookings.db")
    assert store.count() == 0
    # the confirming turn makes no weather call, so the resumed run never starts a server
    confirmed = run_cli("--confirm", cwd=tmp_path, env={"AGENT_MCP_SERVER": str(tmp_path / "gone")})
    assert confirmed.returncode == 0, confirmed.stderr
    done = read_audit(tmp_path / "audit", "m1")
    assert (done["status"], done["mode"], done["memory"]["booking"]["room_type"]) == ("done", "mcp", "Suite")
    again = run_cli("--confirm", "m1", cwd=tmp_path)
    assert again.returncode == 2 and "已经完成" in again.stderr
    assert store.count() == 1
    recorded = done["agent"]["tools"]                    # the tools the run really had, for the judge
    assert recorded["get_weather"]["sources"][0]["tool"] == "search_location" and "search_location" in recorded
    assert run_cli("--check", "m1", cwd=tmp_path).returncode == 0


def test_a_resume_keeps_the_mode_the_run_started_with(tmp_path):
    assert run_cli("--run-id", "l1", cwd=tmp_path).returncode == 0
    resumed = run_cli("--confirm", "l1", "--mcp", cwd=tmp_path)
    assert resumed.returncode == 0 and "忽略 --mcp" in resumed.stderr
    snap = read_audit(tmp_path / "audit", "l1")
    assert (snap["status"], snap["mode"]) == ("done", "local")


@pytest.mark.parametrize("args, env", [
    (["--mcp-server", "/no/such/server --flag"], {}),
    ([], {"AGENT_MCP_SERVER": f"{sys.executable} -c 'import sys; sys.exit(5)'"}),
    ([], {"AGENT_MCP_SERVER": "python 'unclosed"}),
])
def test_an_unusable_mcp_server_is_a_clear_usage_error(tmp_path, args, env):
    result = run_cli("--mcp", "--run-id", "m1", *args, cwd=tmp_path, env=env)
    assert result.returncode == 2 and result.stderr.startswith("错误：") and "Traceback" not in result.stderr
    assert not os.path.exists(tmp_path / "audit" / "run-m1.json")


def test_a_corrupt_recorded_tool_list_is_refused_on_resume(tmp_path):
    assert run_cli("--mcp", "--run-id", "m1", cwd=tmp_path).returncode == 0
    path = tmp_path / "audit" / "run-m1.json"
    snap = json.loads(path.read_text(encoding="utf-8"))
    snap["tools"][3]["function"]["parameters"] = {"type": ["object", "null"]}
    path.write_text(json.dumps(snap, ensure_ascii=False), encoding="utf-8")
    result = run_cli("--confirm", cwd=tmp_path)
    assert result.returncode == 2 and "审计文件记录的工具列表" in result.stderr and "Traceback" not in result.stderr


def test_mcp_server_alone_selects_mcp_mode_as_the_contract_says(tmp_path):
    """--mcp, --mcp-server and --mcp-url each select the MCP server (CONTRACT.md): --mcp-server needs no --mcp."""
    done = run_cli("--mcp-server", " ".join(SERVER_COMMAND), "--run-id", "s1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    snap = read_audit(tmp_path / "audit", "s1")
    assert snap["mode"] == "mcp" and "search_location" in names(snap["tools"])
    missing = run_cli("--mcp-server", "/no/such/server", "--run-id", "s2", cwd=tmp_path)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert not os.path.exists(tmp_path / "audit" / "run-s2.json")


def test_agent_mcp_server_points_the_run_at_another_server(tmp_path):
    command = " ".join(fake_command("extra"))
    result = run_cli("--mcp", "--run-id", "m1", cwd=tmp_path, env={"AGENT_MCP_SERVER": command})
    assert result.returncode == 0, result.stderr
    snap = read_audit(tmp_path / "audit", "m1")
    assert snap["status"] == "suspended" and snap["tools"][2]["function"]["description"] == "find a city"
    contents = [m["content"] for m in snap["messages"] if m["role"] == "tool"]
    assert not any("IGNORE" in c or "secret" in c for c in contents)

"""The hand-written MCP client: against our server (both eras, pagination, concurrency), and
surviving servers that crash, hang, print garbage, ignore SIGTERM or speak older dialects."""
import concurrent.futures
import signal
import sys
import time

import pytest

from handloop import mcp_tools
from mcp_util import SERVER_COMMAND, XIAN, fake_command, server_env


@pytest.fixture
def client():
    made = []

    def make(command=None, **options):
        options.setdefault("env", server_env())
        options.setdefault("timeout", 5.0)
        options.setdefault("close_grace", 1.0)
        c = mcp_tools.Client(command or SERVER_COMMAND, **options)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


def process_of(c):
    return c.conn.proc


@pytest.mark.parametrize("mode, era, version", [("auto", "modern", "2026-07-28"), ("modern", "modern", "2026-07-28"),
                                                ("legacy", "legacy", "2025-11-25")])
def test_our_client_and_our_server_in_each_mode(client, mode, era, version):
    c = client(mode=mode).start()
    assert (c.era, c.version) == (era, version) and c.server_info["name"] == "hotel-agent-weather"
    assert [t["name"] for t in c.list_tools()] == ["search_location", "get_weather"]
    place = c.call_tool("search_location", {"city": "西安"})
    assert {k: place[k] for k in XIAN} == XIAN
    assert c.call_tool("get_weather", dict(XIAN, date="2026-10-01"))["condition"] == "rain"
    with pytest.raises(mcp_tools.ToolFailed, match="没有城市"):
        c.call_tool("search_location", {"city": "Atlantis"})
    with pytest.raises(mcp_tools.MCPError) as caught:
        c.call_tool("no_such_tool", {})
    assert caught.value.code == -32602 and not isinstance(caught.value, mcp_tools.ToolFailed)
    assert c.starts == 1


def test_list_tools_follows_pagination(client):
    c = client(env=server_env(AGENT_MCP_PAGE_SIZE="1"))
    assert [t["name"] for t in c.list_tools()] == ["search_location", "get_weather"]
    assert [t["name"] for t in client(fake_command("paged")).list_tools()] == ["search_location", "get_weather"]


def test_one_process_for_many_concurrent_calls(client):
    c = client().start()
    pid = process_of(c).pid
    dates = [f"2026-09-{d}" for d in range(28, 31)] + [f"2026-10-0{d}" for d in range(1, 6)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda d: c.call_tool("get_weather", dict(XIAN, date=d)), dates * 5))
    assert [r["date"] for r in results] == dates * 5
    assert process_of(c).pid == pid and c.starts == 1


def test_close_ends_the_server_by_stdin_eof(client):
    c = client().start()
    proc = process_of(c)
    started = time.perf_counter()
    c.close()
    assert proc.poll() == 0 and time.perf_counter() - started < 1.0       # exited by itself on EOF


def test_close_kills_a_server_that_ignores_eof_and_sigterm(client):
    c = client(fake_command("ignore-term"), close_grace=0.3).start()
    proc = process_of(c)
    c.close()
    assert proc.poll() == -signal.SIGKILL


def test_a_crash_mid_call_fails_that_call_fast_and_the_next_call_restarts(client, tmp_path):
    c = client(fake_command("crash-once", tmp_path / "crashed"), timeout=5.0).start()
    first = process_of(c)
    started = time.perf_counter()
    with pytest.raises(mcp_tools.MCPError, match="退出码 3.*boom"):
        c.call_tool("search_location", {"city": "西安"})
    assert time.perf_counter() - started < 2.0                             # not the 5 s timeout
    assert c.call_tool("search_location", {"city": "西安"})["latitude"] == XIAN["latitude"]
    assert c.starts == 2 and process_of(c) is not first and first.poll() == 3


def test_a_server_that_keeps_crashing_is_given_up_after_the_restart_budget(client):
    c = client(fake_command("crash"), max_restarts=2)
    outcomes = []
    for _ in range(5):
        with pytest.raises(mcp_tools.MCPError) as caught:
            c.call_tool("search_location", {"city": "西安"})
        outcomes.append(str(caught.value))
    assert c.starts == 3 and "不再重试" in outcomes[-1] and "boom" in outcomes[-1]


def test_a_hung_call_times_out_and_close_still_ends_the_server(client):
    c = client(fake_command("hang"), timeout=0.5, close_grace=0.3).start()
    proc = process_of(c)
    started = time.perf_counter()
    with pytest.raises(mcp_tools.MCPTimeout, match="0.5 秒内没有回答"):
        c.call_tool("search_location", {"city": "西安"})
    assert 0.4 < time.perf_counter() - started < 2.0
    c.close()
    assert proc.poll() == -signal.SIGTERM                                 # it never read the EOF


def test_garbage_on_stdout_is_skipped_and_server_pings_are_answered(client):
    c = client(fake_command("garbage")).start()
    assert [t["name"] for t in c.list_tools()] == ["search_location", "get_weather"]
    result = c.call_tool("search_location", {"city": "西安"})
    assert result["pong"] is True and result["latitude"] == XIAN["latitude"]
    assert process_of(c).poll() is None and c.conn.garbage >= 2


def test_a_chatty_stderr_cannot_block_the_server(client):
    c = client(fake_command("chatty"), timeout=5.0)
    for _ in range(3):
        assert c.call_tool("search_location", {"city": "西安"})["latitude"] == XIAN["latitude"]
    assert c.conn.stderr[-1].startswith("log line")


def test_an_endless_tool_list_is_cut_off(client):
    with pytest.raises(mcp_tools.MCPError, match="5 页"):
        client(fake_command("endless")).list_tools(max_pages=5)


def test_an_over_long_line_is_skipped_not_fatal(client):
    c = client(fake_command("huge"), timeout=10.0)
    assert c.call_tool("search_location", {"city": "西安"})["latitude"] == XIAN["latitude"]


def test_a_discover_answered_after_the_probe_gave_up_does_not_spoil_the_legacy_handshake(client):
    c = client(fake_command("late-discover"), probe_timeout=0.3)       # initialize goes on a new connection
    assert c.start().era == "legacy" and [t["name"] for t in c.list_tools()][:1] == ["search_location"]


def test_a_server_silent_on_discover_gets_the_legacy_handshake_after_the_probe(client):
    c = client(fake_command("silent"), probe_timeout=0.3)
    started = time.perf_counter()
    c.start()
    assert c.era == "legacy" and time.perf_counter() - started < 3.0
    assert c.call_tool("get_weather", dict(XIAN, date="2026-10-01"))["condition"] == "rain"


def test_sdk_1x_dialect_unknown_method_as_invalid_params_and_unknown_tool_as_is_error(client):
    c = client(fake_command("v1")).start()
    assert c.era == "legacy"
    with pytest.raises(mcp_tools.ToolFailed, match="Unknown tool"):
        c.call_tool("nope", {})


def test_a_reply_without_result_fails_its_call_at_once(client):
    c = client(fake_command("no-result"), timeout=5.0)
    started = time.perf_counter()
    with pytest.raises(mcp_tools.MCPError, match="没有 result"):
        c.call_tool("search_location", {"city": "西安"})
    assert time.perf_counter() - started < 2.0


def test_text_only_results_are_parsed(client):
    assert client(fake_command("text-only")).call_tool("search_location", {"city": "x"})["longitude"] == XIAN["longitude"]


def test_an_unknown_protocol_version_is_refused(client):
    with pytest.raises(mcp_tools.MCPError, match="1999-01-01"):
        client(fake_command("bad-version"), mode="legacy").start()


def test_modern_mode_refuses_a_legacy_only_server(client):
    with pytest.raises(mcp_tools.MCPError, match="2026-07-28"):
        client(fake_command("v1"), mode="modern").start()


def test_a_command_that_cannot_start_is_a_clear_error(client, tmp_path):
    with pytest.raises(mcp_tools.MCPError, match="无法启动"):
        client([str(tmp_path / "no-such-server")]).start()
    with pytest.raises(mcp_tools.MCPError, match="退出"):
        client([sys.executable, "-c", "import sys; sys.exit(4)"]).start()


def test_the_server_gets_no_model_credentials():
    env = mcp_tools.child_environment({"OPENAI_API_KEY": "sk-secret", "OPENAI_BASE_URL": "x", "PATH": "/bin"})
    assert env == {"PATH": "/bin"}


def test_requests_with_nan_arguments_fail_cleanly(client):
    c = client()
    with pytest.raises(mcp_tools.MCPError, match="JSON"):
        c.call_tool("get_weather", {"latitude": float("nan"), "longitude": 1.0, "date": "2026-10-01"})
    assert c.call_tool("get_weather", dict(XIAN, date="2026-10-02"))["condition"] == "clear"


def test_the_xian_agents_weather_server_is_this_python_running_the_demos_server_module():
    from handloop import tools
    assert list(tools.WEATHER_SERVER.command) == SERVER_COMMAND


@pytest.mark.parametrize("make", [
    lambda client, tmp: client([str(tmp / "no-such-server")]).start(),                       # cannot start
    lambda client, tmp: client([sys.executable, "-c", "import sys; sys.exit(4)"]).start(),   # exits at once
    lambda client, tmp: client(fake_command("crash"), max_restarts=0).call_tool("search_location", {"city": "x"}),
    lambda client, tmp: client(fake_command("no-result")).call_tool("search_location", {"city": "x"}),
    lambda client, tmp: client(fake_command("bad-version"), mode="legacy").start(),
    lambda client, tmp: client(fake_command("v1"), mode="modern").start(),
])
def test_an_english_agents_client_says_its_errors_in_english(client, tmp_path, make):
    from handloop import texts
    english = lambda command=None, **options: client(command, say=texts.of("en"), **options)   # noqa: E731
    with pytest.raises(mcp_tools.MCPError) as caught:
        make(english, tmp_path)
    said = str(caught.value).replace("西安", "")
    assert said and not texts.CJK.search(said), said

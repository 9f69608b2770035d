"""MCP over Streamable HTTP: our client (mcp/http.py) and our server (`python -m handloop.demo.weather_server --http`),
each against the other, against the official SDK's Streamable HTTP server and client, and against
scripted peers (expired sessions, SSE with server messages first, no session at all, HTML pages,
502s, dropped connections, 401/403); `agent.py --mcp --mcp-url` end to end and its resume.
Every server listens on 127.0.0.1 and is stopped by the test that started it."""
import asyncio
import http.client
import json
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from handloop.mcp import http as mcp_http
from handloop.mcp import http_server as mcp_http_server
from handloop.demo import weather_server as mcp_server
from handloop import mcp_tools
from handloop.cli import session
from handloop import tools
from handloop import toolset
from handloop.calls import ToolError
from conftest import read_audit, run_cli
from mcp_util import ENVELOPE, SDK_SERVER, SERVER_COMMAND, XIAN, server_env

SDK_HTTP_SERVER = SDK_SERVER.replace("mcp_sdk_server.py", "mcp_sdk_http_server.py")
ACCEPT_BOTH = "application/json, text/event-stream"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}


# ---------------------------------------------------------------- servers the tests start
class Process:
    """A server process that names its URL on its first stderr line; stop() sends SIGTERM."""

    def __init__(self, command, env):
        self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=env)
        lines = queue.Queue()
        self.reader = threading.Thread(target=lambda: [lines.put(line) for line in self.proc.stderr] + [lines.put(b"")],
                                       daemon=True)
        self.reader.start()
        try:
            first = lines.get(timeout=60).decode()
        except queue.Empty:
            first = ""
        if not first.startswith("MCP server at http://127.0.0.1:"):
            self.stop()
            pytest.fail(f"server did not start: {first!r}")
        self.first, self.url = first, first.split()[-1]

    def stop(self):
        """SIGTERM, then the exit code (SIGKILL only if it would not go)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            self.reader.join(5)
            self.proc.stderr.close()


@pytest.fixture
def ours():
    """ours(**env) → a running `python -m handloop.demo.weather_server --http 127.0.0.1:0`; each must stop with exit 0."""
    started = []

    def start(**env):
        started.append(Process([*SERVER_COMMAND, "--http", "127.0.0.1:0"], server_env(**env)))
        return started[-1]

    yield start
    assert [p.stop() for p in started] == [0] * len(started)


@pytest.fixture
def inproc():
    """inproc(**options) → our HTTP server in this process, in a thread (its URL)."""
    started = []

    def start(**options):
        server = mcp_http_server.MCPHTTPServer(("127.0.0.1", 0), lambda: mcp_server.engine(mcp_server.OfflineWeather()), **options)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        started.append((server, thread))
        return server

    yield start
    for server, thread in started:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def sdk_servers():
    """The SDK's HTTP server per flag set, started once for the module (uvicorn is slow to start)."""
    pytest.importorskip("mcp")
    pytest.importorskip("uvicorn")
    started = {}

    def get(flags):
        if flags not in started:
            started[flags] = Process([sys.executable, SDK_HTTP_SERVER, *flags.split()], server_env())
        return started[flags].url

    yield get
    for process in started.values():
        process.stop()


class Fake:
    """A scripted Streamable HTTP peer over our protocol engine: `script(message, headers, engine)`
    returns (status, headers, body[, dribble: seconds between its bytes]) to send, None to drop the connection, or "engine" for the
    engine's own JSON answer (with session id "s1" on initialize)."""

    def __init__(self, script, session_id="s1"):
        self.seen, fake = [], self
        engines = [mcp_server.engine(mcp_server.OfflineWeather())]

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.seen.append(("POST", dict(self.headers), message))
                if message.get("method") == "initialize":                 # a new session, a new engine
                    engines.append(mcp_server.engine(mcp_server.OfflineWeather()))
                engine = engines[-1]
                out = script(message, self.headers, engine)
                if out == "engine":
                    answer = engine.dispatch(message)
                    if answer is None:
                        out = (202, {}, b"")
                    else:
                        extra = {"Mcp-Session-Id": session_id} if message.get("method") == "initialize" and session_id else {}
                        out = (200, {"Content-Type": "application/json", **extra}, json.dumps(answer).encode())
                if out is None:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.reply(*out)

            def do_DELETE(self):
                fake.seen.append(("DELETE", dict(self.headers), None))
                self.reply(200, {}, b"")

            def reply(self, status, headers, body, dribble=None):
                """Send the answer; `dribble`: seconds between single bytes of the body."""
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    for piece in [body[i:i + 1] for i in range(len(body))] if dribble else [body]:
                        self.wfile.write(piece)
                        self.wfile.flush()
                        time.sleep(dribble or 0)
                except OSError:                     # the client gave up
                    self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/mcp"

    def methods(self):
        return [m["method"] if m else verb for verb, _, m in self.seen if m is None or "method" in m]

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def fake():
    made = []

    def make(script, **options):
        made.append(Fake(script, **options))
        return made[-1]

    yield make
    for peer in made:
        peer.close()


def post(url, body, headers=None, verb="POST"):
    """One raw request: (status, headers, body bytes)."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        base = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH} if verb == "POST" else {}
        conn.request(verb, parts.path, body=data, headers={**base, **(headers or {})})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def client(url, **options):
    return mcp_http.HTTPClient(url, timeout=options.pop("timeout", 10), **options)


def http_toolset(tmp_path, url, token=None, schemas=None, run_id="h1"):
    agent = tools.xian_agent(tools.BookingStore(tmp_path / "bookings.db"))
    return toolset.ToolSet(run_id, agent, "mcp", mcp_url=url, mcp_token=token, schemas=schemas)


def prepared(ts, name, args):
    return ts.prepare([{"id": "x", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}])[0]


# ---------------------------------------------------------------- our client, our server
@pytest.mark.parametrize("mode, era, version", [("auto", "modern", "2026-07-28"), ("legacy", "legacy", "2025-11-25")])
def test_our_client_and_our_server_in_both_eras(ours, mode, era, version):
    server = ours()
    c = client(server.url, mode=mode)
    try:
        assert [t["name"] for t in c.list_tools()] == ["search_location", "get_weather"]
        assert c.call_tool("get_weather", dict(XIAN, date="2026-10-01"))["condition"] == "rain"
        assert (c.era, c.version) == (era, version)
        sid = c.conn.session_id
        assert (sid is None) == (era == "modern")
    finally:
        c.close()
    if sid:                                          # close() ended the session with DELETE
        status, _, _ = post(server.url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                            {"Mcp-Session-Id": sid, "MCP-Protocol-Version": version})
        assert status == 404


def test_our_server_answers_sse_when_asked_and_our_client_reads_it(inproc):
    server = inproc(prefer_sse=True)
    status, headers, body = post(server.url, INIT, {"Accept": "text/event-stream"})
    assert status == 200 and headers["content-type"] == "text/event-stream" and headers["mcp-session-id"]
    assert body.startswith(b"event: message\ndata: {") and body.endswith(b"\n\n")
    c = client(server.url, mode="legacy")
    try:
        assert c.call_tool("search_location", {"city": "西安"})["latitude"] == XIAN["latitude"]
    finally:
        c.close()


@pytest.mark.parametrize("request_, status, code", [
    ((b"{not json", {}), 400, -32700),
    (([INIT, INIT], {}), 400, -32600),
    ((INIT, {"Content-Type": "text/plain"}), 415, -32600),
    ((INIT, {"Accept": "text/html"}), 406, -32600),
    ((INIT, {"MCP-Protocol-Version": "1999-01-01"}), 400, -32600),
    (({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, {}), 400, -32600),                   # no session
    (({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, {"Mcp-Session-Id": "nope"}), 404, -32600),
    ((b"[" * 100_000 + b"]" * 100_000, {}), 400, -32600),                                      # nesting
    ((b"x" * (mcp_http_server.MAX_BODY + 1), {}), 413, -32600),
])
def test_malformed_requests_get_their_status_and_the_server_keeps_serving(inproc, request_, status, code):
    server = inproc()
    body, headers = request_
    got, _, data = post(server.url, body, headers)
    assert got == status and json.loads(data)["error"]["code"] == code
    assert post(server.url, INIT)[0] == 200


def test_other_paths_and_verbs_are_refused_properly(inproc):
    server = inproc()
    base = server.url.rsplit("/", 1)[0]
    assert post(base + "/other", INIT)[0] == 404
    assert post(server.url, None, verb="GET")[:2][0] == 405
    assert post(server.url, None, verb="DELETE")[0] == 400                          # which session?
    assert post(server.url, None, {"Mcp-Session-Id": "nope"}, verb="DELETE")[0] == 404
    status, headers, _ = post(server.url, INIT)
    assert post(server.url, None, {"Mcp-Session-Id": headers["mcp-session-id"]}, verb="DELETE")[0] == 200
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert post(server.url, note, {"Mcp-Session-Id": headers["mcp-session-id"]})[0] == 404     # ended


def test_sessions_are_bounded(inproc):
    server = inproc(max_sessions=2)
    assert [post(server.url, INIT)[0] for _ in range(3)] == [200, 200, 503]
    assert post(server.url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": ENVELOPE}},
                {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})[0] == 200   # stateless still served


@pytest.mark.parametrize("origin, status", [("http://evil.example", 403), ("null", 403),
                                            ("http://localhost:3000", 200), ("http://127.0.0.1:8080", 200)])
def test_only_local_origins_are_served(inproc, origin, status):
    server = inproc()
    assert post(server.url, INIT, {"Origin": origin})[0] == status


def test_sigterm_stops_our_server_cleanly_and_a_bad_address_is_a_usage_error(ours):
    server = ours()
    assert post(server.url, INIT)[0] == 200
    assert server.stop() == 0
    bad = subprocess.run([*SERVER_COMMAND, "--http", "nope"], capture_output=True, text=True, timeout=60,
                         env=server_env())
    assert bad.returncode == 2 and "[HOST:]PORT" in bad.stderr and "Traceback" not in bad.stderr


# ---------------------------------------------------------------- authentication
def test_the_bearer_token_is_required_when_set(ours):
    server = ours(AGENT_MCP_TOKEN="s3cret")
    status, headers, body = post(server.url, INIT)
    assert status == 401 and headers["www-authenticate"].startswith("Bearer") and b"s3cret" not in body
    for token, named, hint in ((None, "AGENT_MCP_TOKEN", "AGENT_MCP_TOKEN"), (None, None, "token_env"),
                               ("wrong", "AGENT_MCP_TOKEN", "AGENT_MCP_TOKEN 里的令牌"), ("wrong", None, "给定的令牌")):
        c = client(server.url, token=token, token_env=named)
        with pytest.raises(mcp_tools.MCPAuthError) as refused:
            c.start()
        assert server.url in refused.value.message and "401" in refused.value.message and hint in refused.value.message
        c.close()
    c = client(server.url, token="s3cret")
    try:
        assert c.call_tool("search_location", {"city": "西安"})["longitude"] == XIAN["longitude"]
    finally:
        c.close()


def test_a_refusal_is_remembered_and_never_retried(fake):
    peer = fake(lambda m, h, e: (403, {"Content-Type": "text/html"}, b"<html>forbidden</html>"))
    c = client(peer.url, mode="legacy")
    for _ in range(2):
        with pytest.raises(mcp_tools.MCPAuthError) as refused:
            c.request("tools/list")
        assert "403" in refused.value.message and peer.url in refused.value.message
    assert peer.methods() == ["initialize"]                     # asked once; no fallback, no retry
    c.close()
    assert peer.methods() == ["initialize"]                     # no DELETE for a session never had


def test_cli_new_run_refused_by_the_server_exits_3_and_the_token_is_never_recorded(ours, tmp_path):
    server = ours(AGENT_MCP_TOKEN="s3cret")
    refused = run_cli("--mcp", "--mcp-url", server.url, "--run-id", "a1", cwd=tmp_path)
    assert refused.returncode == 3 and server.url in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "audit" / "run-a1.json").exists()
    ok = run_cli("--mcp", "--run-id", "a2", cwd=tmp_path, env={"AGENT_MCP_URL": server.url, "AGENT_MCP_TOKEN": "s3cret"})
    assert ok.returncode == 0, ok.stderr
    text = (tmp_path / "audit" / "run-a2.json").read_text(encoding="utf-8")
    assert json.loads(text)["mcp_url"] == server.url and "s3cret" not in text


# ---------------------------------------------------------------- odd peers
def test_an_expired_session_starts_a_new_session_once(fake):
    expired = {"left": 1}

    def script(message, headers, engine):
        if message.get("method") == "tools/call" and expired["left"]:
            expired["left"] -= 1
            return 404, {"Content-Type": "text/plain"}, b"session gone"
        return "engine"

    peer = fake(script)
    c = client(peer.url, mode="legacy")
    try:
        assert c.call_tool("search_location", {"city": "西安"})["name"] == "西安"
        assert peer.methods().count("initialize") == 2
    finally:
        c.close()
    always = fake(lambda m, h, e: (404, {}, b"") if m.get("method") == "tools/call" else "engine")
    c = client(always.url, mode="legacy")
    with pytest.raises(mcp_tools.MCPError) as failed:
        c.call_tool("search_location", {"city": "西安"})
    assert "404" in failed.value.message and always.methods().count("initialize") == 2
    c.close()


def test_sse_with_server_messages_before_the_reply(fake):
    def script(message, headers, engine):
        if message.get("method") != "tools/call":
            return "engine" if "method" in message else (202, {}, b"")
        events = [{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}},
                  {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"},
                  {"jsonrpc": "2.0", "id": 999, "result": {}},                       # a stray reply: skipped
                  engine.dispatch(message)]
        body = b": keep-alive\n\n" + b"".join(b"event: message\nid: %d\ndata: %s\n\n" % (i, json.dumps(e).encode())
                                               for i, e in enumerate(events))
        return 200, {"Content-Type": "text/event-stream"}, body

    peer = fake(script)
    c = client(peer.url, mode="legacy")
    try:
        assert c.call_tool("search_location", {"city": "西安"})["latitude"] == XIAN["latitude"]
    finally:
        c.close()
    answers = [m for verb, _, m in peer.seen if m and "method" not in m]
    assert answers == [{"jsonrpc": "2.0", "id": "srv-1", "result": {}}]


def test_a_stateless_server_gets_no_session_id_and_no_delete(fake):
    peer = fake(lambda m, h, e: "engine", session_id=None)
    c = client(peer.url, mode="legacy")
    try:
        assert c.call_tool("search_location", {"city": "西安"})["name"] == "西安"
    finally:
        c.close()
    assert peer.methods() == ["initialize", "notifications/initialized", "tools/call"]
    assert all("Mcp-Session-Id" not in headers for _, headers, _ in peer.seen)
    assert peer.seen[-1][1]["MCP-Protocol-Version"] == "2025-11-25"


def test_the_stateless_revision_names_method_and_tool_in_headers(fake):
    peer = fake(lambda m, h, e: "engine")
    c = client(peer.url)
    try:
        c.call_tool("search_location", {"city": "西安"})
    finally:
        c.close()
    (_, probe, _), (_, call, _) = peer.seen
    assert (probe["Mcp-Method"], probe["MCP-Protocol-Version"]) == ("server/discover", "2026-07-28")
    assert (call["Mcp-Method"], call["Mcp-Name"], call["Accept"]) == ("tools/call", "search_location", ACCEPT_BOTH)


@pytest.mark.parametrize("answer, words", [
    ((200, {"Content-Type": "text/html"}, b"<html><body>Welcome to nginx!</body></html>"), "不是 MCP 消息"),
    ((502, {"Content-Type": "text/html"}, b"<html>Bad Gateway</html>"), "HTTP 502"),
    ((500, {"Content-Type": "text/plain"}, b"boom"), "HTTP 500"),
    ((302, {"Location": "http://127.0.0.1:1/elsewhere"}, b""), "重定向"),
    ((200, {"Content-Type": "application/json"}, b'{"jsonrpc": "2.0", "id": 4242, "result": {}}'), "没有给出"),
    ((200, {"Content-Type": "text/event-stream"}, b"event: message\ndata: {\"jsonrpc\": \"2.0\", \"method\": \"x\"}\n\n"),
     "连接中断"),
    (None, "连接中断"),
])
def test_non_mcp_answers_and_dropped_connections_become_tool_errors(fake, tmp_path, answer, words):
    peer = fake(lambda m, h, e: answer if m.get("method") == "tools/call" else "engine")
    ts = http_toolset(tmp_path, peer.url)
    try:
        with pytest.raises(ToolError) as failed:
            ts.run(prepared(ts, "search_location", {"city": "西安"}), None)
        assert words in str(failed.value) and peer.url in str(failed.value)
    finally:
        ts.close()


def test_a_silent_server_times_out(fake):
    release = threading.Event()
    peer = fake(lambda m, h, e: release.wait(30) and None if m.get("method") == "tools/call" else "engine")
    c = client(peer.url, mode="legacy", timeout=0.5)
    try:
        with pytest.raises(mcp_tools.MCPTimeout):
            c.call_tool("search_location", {"city": "西安"})
    finally:
        release.set()
        c.close()


def test_an_unreachable_server_is_an_error_naming_it():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"        # bound, never listening: refused
        c = client(url)
        with pytest.raises(mcp_tools.MCPError) as failed:
            c.start()
        assert url in failed.value.message
        c.close()


@pytest.mark.parametrize("url", ["ftp://host/mcp", "http:///mcp", "http://user:pw@127.0.0.1/mcp", "http://h:99999/"])
def test_unusable_urls_are_refused_up_front(url, tmp_path):
    with pytest.raises(mcp_tools.MCPError):
        mcp_http.Target(url)
    result = run_cli("--mcp", "--mcp-url", url, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr


# ---------------------------------------------------------------- the official SDK, both ways
@pytest.mark.parametrize("flags", ["", "--json", "--stateless", "--stateless --json"])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_our_client_against_the_sdk_http_server(sdk_servers, tmp_path, flags, mode):
    url = sdk_servers(flags)
    c = client(url, mode=mode)
    try:
        assert {t["name"] for t in c.list_tools()} >= {"search_location", "get_weather"}
        assert c.call_tool("get_weather", dict(XIAN, date="2026-10-01"))["condition"] == "rain"
        with pytest.raises(mcp_tools.ToolFailed):
            c.call_tool("search_location", {"city": "Atlantis"})
        assert c.era == ("modern" if mode == "auto" else "legacy")
    finally:
        c.close()
    ts = http_toolset(tmp_path, url)                  # the allow-list and the field cut, as over stdio
    try:
        place = ts.run(prepared(ts, "search_location", {"city": "西安"}), None)
        assert set(place) == {"name", "latitude", "longitude", "timezone"}
    finally:
        ts.close()


@pytest.mark.parametrize("prefer_sse", [False, True])
@pytest.mark.parametrize("mode, version", [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_the_sdk_http_client_against_our_server(inproc, prefer_sse, mode, version):
    mcp = pytest.importorskip("mcp")
    server = inproc(prefer_sse=prefer_sse)

    async def scenario():
        async with mcp.Client(server.url, mode=mode, read_timeout_seconds=10) as c:
            assert c.session.protocol_version == version
            assert [t.name for t in (await c.list_tools()).tools] == ["search_location", "get_weather"]
            place = await c.call_tool("search_location", {"city": "西安"})
            assert place.is_error is False and place.structured_content["latitude"] == XIAN["latitude"]
            bad = await c.call_tool("get_weather", {"latitude": "north", "longitude": 1, "date": "2026-10-01"})
            assert bad.is_error is True and "latitude" in bad.content[0].text
            return True

    assert asyncio.run(scenario())
    if mode == "legacy":
        assert not server.sessions.open                 # the SDK ended its session with DELETE


# ---------------------------------------------------------------- the agent, end to end
def test_cli_xian_run_over_http_suspends_confirms_books_once_and_resumes_over_http(ours, tmp_path):
    server = ours()
    first = run_cli("--mcp", "--mcp-url", server.url, "--run-id", "h1", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert server.url in first.stdout and "Traceback" not in first.stderr
    snap = read_audit(tmp_path / "audit", "h1")
    assert (snap["status"], snap["mode"], snap["mcp_url"]) == ("suspended", "mcp", server.url)
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"]))
             for m in snap["messages"] if m.get("tool_calls") for c in m["tool_calls"]]
    names = [n for n, _ in calls]
    assert names.index("search_location") < names.index("get_weather")
    weather = next(a for n, a in calls if n == "get_weather")
    assert (weather["latitude"], weather["longitude"]) == (XIAN["latitude"], XIAN["longitude"])
    store = tools.BookingStore(tmp_path / "audit" / "bookings.db")
    assert store.count() == 0
    # the resume goes back to the recorded URL: no spawned server, no other URL
    ts = session.reopen(str(tmp_path / "audit"), "h1", "confirm")[1]
    try:
        assert isinstance(ts.mcp, mcp_http.HTTPClient) and ts.mcp.url == server.url
        assert ts.run(prepared(ts, "search_location", {"city": "西安"}), None)["latitude"] == XIAN["latitude"]
    finally:
        ts.close()
    confirmed = run_cli("--confirm", "h1", "--mcp-url", "http://127.0.0.1:1/elsewhere", cwd=tmp_path,
                        env={"AGENT_MCP_SERVER": str(tmp_path / "gone")})
    assert confirmed.returncode == 0, confirmed.stderr
    assert "忽略 --mcp-url" in confirmed.stderr
    done = read_audit(tmp_path / "audit", "h1")
    assert (done["status"], done["mcp_url"], done["memory"]["booking"]["room_type"]) == ("done", server.url, "Suite")
    assert store.count() == 1
    check = run_cli("--check", "h1", cwd=tmp_path)
    assert check.returncode == 0, check.stdout


# ---------------------------------------------------------------- hostile requests to our server
def raw(url, data, timeout=5):
    """Send `data` as it is over a new connection; (status or None when none came, the whole answer)."""
    parts = urllib.parse.urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as sock:
        sock.sendall(data)
        got = b""
        try:
            while True:
                piece = sock.recv(65536)
                if not piece:
                    break
                got += piece
                if b"\r\n\r\n" in got and b"Content-Length: " in got:
                    head, _, body = got.partition(b"\r\n\r\n")
                    size = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                    if len(body) >= size:
                        break
        except (socket.timeout, ConnectionResetError):
            pass
    status = got.split(b" ", 2)[1] if got.startswith(b"HTTP/1.") else None
    return (int(status) if status else None), got


def _post_bytes(lengths, body=None, host="127.0.0.1", extra=b""):
    body = json.dumps(INIT).encode() if body is None else body
    head = b"POST /mcp HTTP/1.1\r\nHost: " + host.encode() + b"\r\nContent-Type: application/json\r\n" + \
        b"Accept: application/json, text/event-stream\r\n" + extra
    for value in lengths:                                   # the server reads header bytes as Latin-1
        try:
            data = value.encode("latin-1")
        except UnicodeEncodeError:
            data = value.encode("utf-8")
        head += b"Content-Length: " + data + b"\r\n"
    return head + b"\r\n" + body


@pytest.mark.parametrize("lengths", [["²"], ["¹²"], ["١٢"], ["+12"], ["-1"], ["1_0"], [" "], ["12", "13"],
                                     ["12, 13"]])
def test_a_bad_or_conflicting_content_length_is_a_400(inproc, lengths):
    server = inproc()
    status, answer = raw(server.url, _post_bytes(lengths))
    assert status == 400, answer
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["code"] == -32600
    assert post(server.url, INIT)[0] == 200                      # and it keeps serving


def test_the_same_content_length_twice_is_read_as_one(inproc):
    server = inproc()
    body = json.dumps(INIT).encode()
    assert raw(server.url, _post_bytes([str(len(body))] * 2, body))[0] == 200


@pytest.mark.parametrize("host, status", [("evil.example", 421), ("evil.example:80", 421), ("127.0.0.1.evil.example", 421),
                                          ("localhost", 200), ("127.0.0.1:9", 200), ("[::1]:9", 200),
                                          ("app.localhost", 200)])
def test_bound_to_this_machine_only_local_host_names_are_served(inproc, host, status):
    server = inproc()
    body = json.dumps(INIT).encode()
    assert raw(server.url, _post_bytes([str(len(body))], body, host=host))[0] == status


def test_bound_to_all_addresses_any_host_name_is_served(monkeypatch):
    server = mcp_http_server.MCPHTTPServer(("0.0.0.0", 0), lambda: mcp_server.engine(mcp_server.OfflineWeather()))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
        body = json.dumps(INIT).encode()
        assert raw(url, _post_bytes([str(len(body))], body, host="mcp.example.org"))[0] == 200
        assert raw(url, _post_bytes([str(len(body))], body, host="x", extra=b"Origin: http://evil.example\r\n"))[0] == 403
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_connections_over_the_limit_get_a_whole_503_not_a_reset(inproc):
    server = inproc()
    held = [socket.create_connection(server.server_address[:2]) for _ in range(mcp_http_server.MAX_CONNECTIONS)]
    try:
        time.sleep(0.3)                                              # every slot taken by a silent connection
        results = []

        def one():
            try:
                results.append(post(server.url, INIT)[0])
            except OSError as exc:
                results.append(type(exc).__name__)
        workers = [threading.Thread(target=one) for _ in range(60)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(20)
        assert results == [503] * 60, results
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.3)
    assert post(server.url, INIT)[0] == 200                          # served again once there is room

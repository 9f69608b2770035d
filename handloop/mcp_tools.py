"""MCP over stdio, written by hand: the wire protocol and the client `toolset.py` talks through (the server
side's engine is mcp/server.py; the Xi'an demo's weather server, demo/weather_server.py).

Wire: one JSON-RPC 2.0 message per line, UTF-8. Both protocol eras: the `initialize` handshake
(2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05) and the stateless 2026-07-28 revision
(`server/discover`, the per-request `_meta` envelope, `resultType`, `ttlMs`, `cacheScope`).

Client invariants: one server process at a time per Client, started on first need, restarted
(a bounded number of times) after it dies; every request has a deadline (its timeout, a new
session's handshake included: the MCP error comes before the tool's own timeout) and fails at
once when the server dies; stdout garbage and unsolicited messages are skipped; stderr is always drained;
close() always ends the process (stdin EOF, wait, SIGTERM, SIGKILL). The client returns what
the server said (a JSON object, or the content blocks of a text result: mcp/results.py reads both) or raises
MCPError; what may reach the model is toolset's call.

The same Client speaks Streamable HTTP in mcp/http.py's HTTPClient, which gives it another kind of
connection (`_connect`); `python -m handloop.demo.weather_server --http [HOST:]PORT` serves the demo's over HTTP.

This module never imports tools.py, nor tools.py it; it needs only the standard library, mcp/results.py and the
catalogue texts/__init__.py: what it says (its errors) is in the run's agent's language (`say`).
"""
import collections
import json
import math
import os
import subprocess
import sys
import threading
import time
from typing import IO, cast

from . import texts
from .mcp import results

MODERN_VERSION = "2026-07-28"
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")    # newest first
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
UNSUPPORTED_VERSION = -32022

CLIENT_MAX_LINE = 16 << 20          # bytes in one message the client reads
CLIENT_INFO = {"name": "hotel-agent", "version": "1.0"}
TOO_LONG = object()


class MCPError(Exception):
    """A protocol-level failure: an error reply, a timeout, a dead server, a malformed message."""
    conn: object        # set by a handshake that failed on another connection than the one it was given

    def __init__(self, message, code=None, data=None):
        super().__init__(message)
        self.message, self.code, self.data = message, code, data


class MCPTimeout(MCPError):
    """The server did not answer in time."""


class ToolFailed(MCPError):
    """The tool ran and reported a failure (an `isError` result); the text says why."""


class MCPAuthError(MCPError):
    """A remote server refused our credentials (HTTP 401 or 403): never retried, never a fallback."""


def encode(message):
    """One message as a line; ValueError for NaN or infinities (not JSON)."""
    text = json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:                     # lone surrogates: escape every non-ASCII character
        return json.dumps(message, allow_nan=False, separators=(",", ":")).encode("ascii") + b"\n"


def strict_loads(data):
    """JSON as the standard defines it: NaN and Infinity are refused (ValueError)."""
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(data, parse_constant=refuse)


def read_line(stream, limit):
    """The next line without its `\\n`/`\\r\\n`; None at EOF; TOO_LONG (rest of it skipped) past `limit`."""
    line = stream.readline(limit + 1)
    if not line:
        return None
    if len(line) > limit and not line.endswith(b"\n"):
        while True:
            chunk = stream.readline(1 << 16)
            if not chunk or chunk.endswith(b"\n"):
                return TOO_LONG
    return line.rstrip(b"\n").rstrip(b"\r")


def valid_id(value):
    return isinstance(value, (str, int)) and not isinstance(value, bool) or isinstance(value, float) and math.isfinite(value)


def reply(rid, result):
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def error_reply(rid, code, message, data=None):
    error = {"code": code, "message": message, **({"data": data} if data is not None else {})}
    return {"jsonrpc": "2.0", "id": rid, "error": error}


# ======================================================================= client
# where `-m handloop...` is found when the package is not installed: the folder that holds it
_HOME = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _ours(command):
    """Whether `command` is this Python running a module of this package (started where it is found)."""
    return len(command) > 2 and command[0] == sys.executable and command[1] == "-m" and \
        command[2].split(".")[0] == __name__.split(".")[0]


def child_environment(env=None, hidden=()):
    """The server's environment: ours, minus the model service's credentials and the variables `hidden` names
    (the tokens of other MCP servers)."""
    env = os.environ if env is None else env
    return {key: value for key, value in env.items() if not key.startswith("OPENAI_") and key not in hidden}


class _Slot:
    """A request waiting for its reply."""

    def __init__(self):
        self.event, self.reply = threading.Event(), None


class _Connection:
    """One server process: its pipes, its two reader threads and the requests awaiting replies."""

    def __init__(self, command, env, say=texts.ZH_TEXTS):
        self.say = say
        try:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=env, start_new_session=os.name == "posix",
                                         cwd=_HOME if _ours(command) else None)
        except (OSError, ValueError) as exc:
            raise MCPError(say("mcp.spawn_failed", command=" ".join(command), error=exc)) from None
        # all three are pipes (PIPE above), never None: what Popen's types cannot say
        self.pipe_in, self.pipe_out, self.pipe_err = (cast(IO[bytes], p) for p in (self.proc.stdin, self.proc.stdout,
                                                                                   self.proc.stderr))
        self.lock, self.write_lock = threading.Lock(), threading.Lock()
        self.pending, self.next_id, self.closed = {}, 1, False
        self.stderr, self.garbage = collections.deque[str](maxlen=20), 0
        self.threads = [threading.Thread(target=self._read, daemon=True, name="mcp-stdout"),
                        threading.Thread(target=self._drain, daemon=True, name="mcp-stderr")]
        for thread in self.threads:
            thread.start()

    def request(self, method, params, timeout, cancel=False):
        """The reply's `result` object; MCPError for an error reply, MCPTimeout, or a dead server."""
        slot = _Slot()
        with self.lock:
            if self.closed:
                raise MCPError(self.death())
            rid, self.next_id = self.next_id, self.next_id + 1
            self.pending[rid] = slot
        message = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        try:
            self.send(message)
        except MCPError:
            self._forget(rid)
            raise
        if not slot.event.wait(timeout):
            self._forget(rid)
            if cancel:
                self.notify("notifications/cancelled", {"requestId": rid, "reason": "timeout"})
            raise MCPTimeout(self.say("mcp.stdio_timeout", seconds=timeout, method=method))
        return self._result(slot.reply)

    def notify(self, method, params=None):
        self.send_quietly({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})})

    def send(self, message):
        try:
            data = encode(message)
        except ValueError as exc:
            raise MCPError(self.say("mcp.unencodable", why=exc)) from None
        with self.write_lock:
            try:
                self.pipe_in.write(data)
                self.pipe_in.flush()
            except (OSError, ValueError):          # broken pipe, or closed by close()
                raise MCPError(self.death()) from None

    def _result(self, reply):
        if reply is None:
            raise MCPError(self.death())
        if "error" in reply:
            error = reply["error"] if isinstance(reply["error"], dict) else {}
            code, text = error.get("code"), str(error.get("message") or self.say("mcp.no_detail"))[:300]
            raise MCPError(self.say("mcp.error_reply", code=code, text=text), code=code, data=error.get("data"))
        if not isinstance(reply.get("result"), dict):
            raise MCPError(self.say("mcp.no_result"))
        return reply["result"]

    def _forget(self, rid):
        with self.lock:
            self.pending.pop(rid, None)

    def _read(self):
        while True:
            line = read_line(self.pipe_out, CLIENT_MAX_LINE)
            if line is None:
                break
            if line is TOO_LONG or line.strip():
                self._dispatch(line)
        try:
            self.proc.wait(0.5)                    # so death() can give the exit code
        except subprocess.TimeoutExpired:
            pass
        self._fail_all()

    def _dispatch(self, line):
        try:
            message = json.loads(line) if line is not TOO_LONG else None
        except (ValueError, RecursionError):
            message = None
        if not isinstance(message, dict):
            self.garbage += 1
            shown = str(line)[:120] if line is not TOO_LONG else self.say("mcp.long_line")
            self.stderr.append(self.say("mcp.garbage", line=shown))
            return
        if "method" in message:                    # a server request, or a notification (ignored)
            if "id" in message and valid_id(message["id"]):
                self._answer(message)
            return
        rid = message.get("id")
        with self.lock:
            slot = self.pending.pop(rid, None) if valid_id(rid) else None
        if slot is not None:                       # stray replies (unknown ids) are dropped
            slot.reply = message
            slot.event.set()

    def _answer(self, request):
        """A request from the server: ping is answered, anything else is not supported."""
        if request.get("method") == "ping":
            self.send_quietly(reply(request["id"], {}))
        else:
            self.send_quietly(error_reply(request["id"], METHOD_NOT_FOUND, f"Method not found: {request.get('method')}"))

    def send_quietly(self, message):
        """Send, and let a dead server be (whoever waits on it learns that otherwise)."""
        try:
            self.send(message)
        except MCPError:
            pass

    def _drain(self):
        for raw in iter(lambda: self.pipe_err.readline(4096), b""):
            text = raw.decode("utf-8", "replace").rstrip()
            if text:
                self.stderr.append(text[:500])

    def _fail_all(self):
        with self.lock:
            self.closed = True
            slots, self.pending = list(self.pending.values()), {}
        for slot in slots:
            slot.event.set()                       # reply None: the server is gone

    def death(self):
        """Why this connection cannot be used, with the server's last words on stderr."""
        self.threads[1].join(0.2)
        code = self.proc.poll()
        why = self.say("mcp.exited", code=code) if code is not None else self.say("mcp.disconnected")
        tail = " | ".join(list(self.stderr)[-3:])
        return self.say("mcp.death", why=why) + (self.say("mcp.death_tail", tail=tail[-300:]) if tail else "")

    def close(self, grace=2.0):
        """End the process: stdin EOF and wait, then SIGTERM, then SIGKILL. Never raises."""
        with self.lock:
            self.closed = True
        if self.write_lock.acquire(timeout=grace):   # a write stuck on a full pipe: skip the polite EOF
            try:
                self.pipe_in.close()
            except OSError:
                pass
            finally:
                self.write_lock.release()
        for stop in (None, self.proc.terminate, self.proc.kill):
            try:
                if stop is not None:
                    stop()
                self.proc.wait(grace)
                break
            except subprocess.TimeoutExpired:
                continue
            except OSError:                        # already reaped
                break
        for thread in self.threads:
            thread.join(1.0)
        self._fail_all()
        for stream in (self.pipe_in, self.pipe_out, self.pipe_err):
            try:
                stream.close()
            except (OSError, ValueError):
                pass


class Client:
    """A session with one stdio MCP server, for one run. Thread-safe.

    `mode`: "auto" probes `server/discover` (2026-07-28) and falls back to `initialize` on any
    error or silence; "legacy" only uses `initialize`; "modern" requires 2026-07-28.
    """

    def __init__(self, command, env=None, timeout=8.0, mode="auto", probe_timeout=3.0, max_restarts=3,
                 close_grace=2.0, say=texts.ZH_TEXTS):
        if mode not in ("auto", "legacy", "modern"):
            raise ValueError(f"mode must be auto, legacy or modern, not {mode!r}")
        self.command = list(command)
        self.env = child_environment() if env is None else env
        self.timeout, self.mode, self.probe_timeout = timeout, mode, min(probe_timeout, timeout)
        self.max_restarts, self.starts, self.close_grace = max_restarts, 0, close_grace
        self.conn, self.last_death = None, ""
        self.era = self.version = None
        self.server_info = {}
        self.lock = threading.Lock()
        self.say = say                                  # the run's agent's language (texts/__init__.py)

    def start(self):
        """Connect now (spawn and handshake) unless connected; returns self."""
        self._live()
        return self

    def _live(self, deadline=None):
        """The live connection, (re)started as needed; a handshake it needs is over by `deadline`
        (time.monotonic(); None: each of its requests has its own timeout)."""
        with self.lock:
            if self.conn is not None and not self.conn.closed:
                return self.conn
            if self.conn is not None:
                self.last_death = self.conn.death()
                self.conn.close(grace=min(0.5, self.close_grace))
                self.conn = None
            if self.starts > self.max_restarts:
                raise MCPError(self.say("mcp.gave_up", restarts=self.max_restarts, death=self.last_death))
            self.starts += 1
            conn = self._connect()
            try:
                conn = self._handshake(conn, deadline)
            except MCPError as exc:
                getattr(exc, "conn", conn).close(grace=min(0.5, self.close_grace))
                raise
            self.conn = conn
            return conn

    def _connect(self):
        """A new, not yet initialised connection (here: a server process)."""
        return _Connection(self.command, self.env, self.say)

    @property
    def where(self):
        """The server, as the user named it (its command line)."""
        return " ".join(self.command)

    def _handshake(self, conn, deadline=None):
        """The connection, handshaken: the 2026-07-28 `server/discover` probe first (unless legacy), else
        `initialize`. A probe met with silence may be answered late, which would tie that connection to the
        new protocol: `initialize` then goes on a new connection. Returns the connection used."""
        if self.mode != "legacy":
            try:
                result = conn.request("server/discover", {"_meta": self._envelope()}, self._left(
                    self.probe_timeout if self.mode == "auto" else self.timeout, deadline, "server/discover"))
                versions = result.get("supportedVersions")
                if isinstance(versions, list) and MODERN_VERSION in versions:
                    self.era, self.version = "modern", MODERN_VERSION
                    self.server_info = (result.get("_meta") or {}).get(META_SERVER_INFO) or {}
                    return conn
                problem = self.say("mcp.discover_only", versions=versions)
            except MCPError as exc:
                if conn.closed or isinstance(exc, MCPAuthError):
                    raise
                problem = str(exc)
                if isinstance(exc, MCPTimeout) and self.mode == "auto":
                    conn.close(grace=min(0.5, self.close_grace))
                    conn = self._connect()
            if self.mode == "modern":
                raise MCPError(self.say("mcp.no_modern", version=MODERN_VERSION, problem=problem))
        try:
            self._initialize(conn, deadline)
        except MCPError as exc:
            exc.conn = conn
            raise
        return conn

    def _initialize(self, conn, deadline=None):
        result = conn.request("initialize", {"protocolVersion": LEGACY_VERSIONS[0], "capabilities": {},
                                             "clientInfo": CLIENT_INFO}, self._left(self.timeout, deadline, "initialize"))
        version = result.get("protocolVersion")
        if version not in LEGACY_VERSIONS:
            raise MCPError(self.say("mcp.bad_version", version=version, supported=", ".join(LEGACY_VERSIONS)))
        conn.notify("notifications/initialized")
        self.era, self.version = "legacy", version
        self.server_info = result.get("serverInfo") if isinstance(result.get("serverInfo"), dict) else {}

    def _envelope(self):
        return {META_VERSION: MODERN_VERSION, META_CAPABILITIES: {}, META_CLIENT_INFO: CLIENT_INFO}

    def _left(self, seconds, deadline, method):
        """`seconds`, or less when `deadline` comes first; MCPTimeout when it has passed."""
        if deadline is None:
            return seconds
        left = deadline - time.monotonic()
        if left <= 0:
            raise self._overdue(method)
        return min(seconds, left)

    def _overdue(self, method):
        return MCPTimeout(self.say("mcp.stdio_timeout", seconds=self.timeout, method=method))

    def request(self, method, params=None, deadline=None):
        """One request on the live session; its result object, or MCPError. `deadline`
        (time.monotonic()): when all of it, a new session's handshake included, is over (default:
        the timeout from now)."""
        deadline = time.monotonic() + self.timeout if deadline is None else deadline
        conn = self._live(deadline)
        if self.era == "modern":
            params = dict(params or {}, _meta={**((params or {}).get("_meta") or {}), **self._envelope()})
        try:
            result = conn.request(method, params, self._left(self.timeout, deadline, method), cancel=self.era == "legacy")
        except MCPTimeout:
            raise self._overdue(method) from None        # said with the whole timeout, not what was left of it
        kind = result.get("resultType", "complete")
        if kind != "complete":
            raise MCPError(self.say("mcp.result_type", kind=kind))
        return result

    def list_tools(self, max_pages=100):
        """Every tool the server offers, following `nextCursor`."""
        found, cursor = [], None
        for _ in range(max_pages):
            result = self.request("tools/list", {"cursor": cursor} if cursor else None)
            page, cursor = result.get("tools"), result.get("nextCursor")
            if not isinstance(page, list):
                raise MCPError(self.say("mcp.no_tools_list"))
            found += [t for t in page if isinstance(t, dict) and isinstance(t.get("name"), str)]
            if not cursor:
                return found
            if not isinstance(cursor, str):
                raise MCPError(self.say("mcp.bad_cursor", cursor=cursor))
        raise MCPError(self.say("mcp.endless", pages=max_pages))

    def call_tool(self, name, arguments):
        """The tool's result as the server sent it (mcp/results.py): its JSON object when it has structured content
        (or a text block that is a JSON object), else a results.TextResult of its content blocks; ToolFailed, with
        the server's text, for an `isError` result; MCPError for a failure of the protocol."""
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError") is True:
            raise ToolFailed(results.error_text(result) or self.say("mcp.failed_silently"))
        payload = results.structured(result)
        return payload if payload is not None else results.text_result(result, self.say)

    def close(self):
        """End the session and the server process; a later request would start a new one."""
        with self.lock:
            conn, self.conn = self.conn, None
        if conn is not None:
            conn.close(self.close_grace)


if __name__ == "__main__":            # the contract's `python mcp_tools.py`: the demo's server, as its own program
    os.execv(sys.executable, [sys.executable, "-m", "handloop.demo.weather_server", *sys.argv[1:]])

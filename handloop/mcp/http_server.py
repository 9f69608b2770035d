"""MCP over Streamable HTTP, the server side: a protocol engine per session (mcp/server.py) served at `/mcp`
(default host 127.0.0.1; port 0 picks a free port; the first line on stderr names the URL); what the tools are
is the caller's (`python -m handloop.demo.weather_server --http [HOST:]PORT` serves the demo's weather tools).

HTTP: POST carries one JSON-RPC message; a request is answered with one JSON body, or a
`text/event-stream` holding that one reply when the request accepts only SSE (or the server
prefers it); a notification or a reply gets 202. `initialize` opens a session, named by the
`Mcp-Session-Id` header of its answer and required on every later legacy request (404 once the
session is unknown or ended); DELETE ends it. Requests of the stateless 2026-07-28 revision need
no session. GET is 405: the server never speaks first.

Invariants: a request whose `Origin` is not a local origin is refused with 403 (the
specification's DNS-rebinding rule), and, when the server is bound to a local address, one whose
`Host` is not a local name with 421 (as the official SDK does); when AGENT_MCP_TOKEN is set every request must carry it as
a bearer token (401, compared in constant time); bodies over MAX_BODY get 413, a bad or
conflicting Content-Length 400, too many sessions 503, too many connections at once 503 (sent
whole, the request read and dropped, so the client reads it rather than a reset); every malformed request gets its HTTP status or JSON-RPC
error and the server keeps serving; the token never appears in a reply or a log line. SIGTERM or
SIGINT stops it cleanly (exit 0). Standard library only, beside mcp/server.py and mcp_tools (the wire).
"""
import hmac
import http.server
import re
import secrets
import signal
import socket
import sys
import threading
import time
import urllib.parse
from typing import cast

from . import server as mcp_server
from ..mcp_tools import (INTERNAL_ERROR, INVALID_REQUEST, LEGACY_VERSIONS, META_VERSION, MODERN_VERSION, PARSE_ERROR,
                       encode, error_reply, strict_loads)

PATH = "/mcp"
MAX_BODY = mcp_server.SERVER_MAX_LINE   # bytes in one POST body
DISCARD_MAX = 8 * MAX_BODY              # a refused body up to this size is read and dropped (see _discard)
MAX_SESSIONS = 64                       # open sessions at once; idle ones past SESSION_IDLE make room
SESSION_IDLE = 1800.0                   # seconds a session may sit unused before it may be dropped
MAX_CONNECTIONS = 32                    # connections served at once
MAX_REFUSING = 64                       # connections being refused (503) at once; beyond, closed at once
REFUSE_SECONDS = 2.0                    # how long a refused connection's request may take to be read and dropped
IDLE_TIMEOUT = 30.0                     # seconds a kept-alive connection may sit silent
VERSIONS = (MODERN_VERSION, *LEGACY_VERSIONS)
LOCAL = re.compile(r"localhost|(.+\.)?localhost|127(\.\d{1,3}){3}|::1", re.I)
DIGITS = re.compile(r"[0-9]+")          # ASCII digits only: str.isdigit takes '²', int() does not


class Sessions:
    """Session id → the protocol engine of that session (mcp_server.Server), bounded in number."""

    def __init__(self, make, limit=MAX_SESSIONS, idle=SESSION_IDLE):
        self.make, self.limit, self.idle = make, limit, idle
        self.lock, self.open = threading.Lock(), {}

    def new(self):
        """(id, engine) of a new session, or None when full even after dropping idle ones."""
        with self.lock:
            now = time.monotonic()
            for sid in [s for s, (_, used) in self.open.items() if now - used > self.idle]:
                del self.open[sid]
            if len(self.open) >= self.limit:
                return None
            sid = secrets.token_hex(16)
            self.open[sid] = (self.make(), now)
            return sid, self.open[sid][0]

    def get(self, sid):
        with self.lock:
            found = self.open.get(sid)
            if found is not None:
                self.open[sid] = (found[0], time.monotonic())
            return found[0] if found else None

    def end(self, sid):
        with self.lock:
            return self.open.pop(sid, None) is not None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hotel-agent-mcp/1.0"
    timeout = IDLE_TIMEOUT
    wbufsize, disable_nagle_algorithm = 1 << 16, True     # an answer leaves in one write, at once
    server: "MCPHTTPServer"                               # the server that made this handler (its sessions, token)

    def log_message(self, format, *args):       # quiet: one line per request would drown stderr
        pass

    # ---- the methods
    def do_POST(self):
        if not self._admitted():
            return
        length = self._length()
        if length is None:
            return
        body = self.rfile.read(length)
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if kind != "application/json":
            return self._fail(415, INVALID_REQUEST, "Unsupported Media Type: Content-Type must be application/json")
        json_ok, sse_ok = _accepts(self.headers.get("Accept"))
        if not (json_ok or sse_ok):
            return self._fail(406, INVALID_REQUEST, "Not Acceptable: accept application/json or text/event-stream")
        try:
            message = strict_loads(body)
        except ValueError:
            return self._fail(400, PARSE_ERROR, "Parse error: the body is not valid UTF-8 JSON")
        except RecursionError:
            return self._fail(400, INVALID_REQUEST, "Invalid Request: JSON nested too deeply")
        if not isinstance(message, dict):
            return self._fail(400, INVALID_REQUEST, "Invalid Request: expected one JSON object (no batches)")
        version = self.headers.get("MCP-Protocol-Version")
        if version is not None and version not in VERSIONS:
            return self._fail(400, INVALID_REQUEST, f"Bad Request: unsupported MCP-Protocol-Version {version[:40]}")
        engine, sid = self._engine(message)
        if engine is None:
            return
        answer = engine.dispatch(message)
        if answer is None:
            return self._send(202, b"")
        if sid is not None and "error" in answer:      # an initialize that failed opens no session
            self.server.sessions.end(sid)
            sid = None
        try:
            data = encode(answer)
        except ValueError:                               # a NaN in a result: a fault of ours, still answered
            data = encode(error_reply(answer.get("id"), INTERNAL_ERROR, "Internal error: result is not JSON"))
        headers = {"Mcp-Session-Id": sid} if sid else {}
        if sse_ok and (self.server.prefer_sse or not json_ok):
            return self._send(200, b"event: message\ndata: " + data.rstrip(b"\n") + b"\n\n", "text/event-stream",
                              {"Cache-Control": "no-cache", **headers})
        self._send(200, data, "application/json", headers)

    def do_DELETE(self):
        if not self._admitted():
            return
        sid = self.headers.get("Mcp-Session-Id")
        if not sid:
            return self._fail(400, INVALID_REQUEST, "Bad Request: Mcp-Session-Id header required")
        if not self.server.sessions.end(sid):
            return self._fail(404, INVALID_REQUEST, "Session not found")
        self._send(200, b"")

    def do_GET(self):
        if self._admitted():
            self._send(405, b"", headers={"Allow": "POST, DELETE"})

    do_PUT = do_PATCH = do_HEAD = do_OPTIONS = do_GET

    # ---- the gate every request passes
    def _admitted(self):
        """Path, Host, Origin, token, in that order; False when a refusal was sent."""
        if urllib.parse.urlsplit(self.path).path != PATH:
            self._fail(404, INVALID_REQUEST, f"Not Found: the MCP endpoint is {PATH}")
            return False
        host = self.headers.get("Host")
        if self.server.local and host is not None and not _local_host(host):
            self._fail(421, INVALID_REQUEST, "Misdirected Request: Host is not a local name")
            return False
        origin = self.headers.get("Origin")
        if origin is not None and not _local_origin(origin):
            self._fail(403, INVALID_REQUEST, "Forbidden: Origin is not a local origin")
            return False
        token = self.server.token
        if token:
            given = self.headers.get("Authorization") or ""
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode("utf-8", "replace"),
                                                                     token.encode("utf-8")):
                self._fail(401, INVALID_REQUEST, "Unauthorized: a valid bearer token is required",
                           {"WWW-Authenticate": 'Bearer realm="mcp"'})
                return False
        return True

    def _length(self):
        """The body's declared length, or None when a refusal was sent (the connection then closes)."""
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            self._fail(411, INVALID_REQUEST, "Length Required: send a Content-Length, not a chunked body")
            return None
        given = self.headers.get_all("Content-Length") or []
        if not given:
            self.close_connection = True
            self._fail(411, INVALID_REQUEST, "Length Required: a valid Content-Length")
            return None
        values = {part.strip() for raw in given for part in raw.split(",")}    # RFC 9112 6.3: one value, or 400
        raw = values.pop() if len(values) == 1 else ""
        if not DIGITS.fullmatch(raw):
            self.close_connection = True
            self._fail(400, INVALID_REQUEST, "Bad Request: a bad or conflicting Content-Length")
            return None
        if int(raw) > MAX_BODY:
            self.close_connection = True
            self._fail(413, INVALID_REQUEST, f"Payload Too Large: at most {MAX_BODY} bytes")
            self._discard(int(raw))
            return None
        return int(raw)

    def _engine(self, message):
        """(engine, new session id or None) for this message; (None, None) when a refusal was sent."""
        sessions, sid = self.server.sessions, self.headers.get("Mcp-Session-Id")
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and META_VERSION in meta:           # stateless revision: no session
            if self.headers.get("Mcp-Method") not in (None, message.get("method")):
                self._fail(400, INVALID_REQUEST, "Bad Request: Mcp-Method does not match the body's method")
                return None, None
            return self.server.stateless, None
        if sid is not None:
            engine = sessions.get(sid)
            if engine is None:
                self._fail(404, INVALID_REQUEST, "Session not found: initialize a new session")
            return engine, None
        if message.get("method") == "initialize" and "id" in message:
            opened = sessions.new()
            if opened is None:
                self._fail(503, INVALID_REQUEST, "Service Unavailable: too many sessions", {"Retry-After": "5"})
                return None, None
            return opened[1], opened[0]
        self._fail(400, INVALID_REQUEST, "Bad Request: Mcp-Session-Id header required (send initialize first)")
        return None, None

    # ---- answers
    def _discard(self, length):
        """Read and drop a refused body, when it is not much bigger than the limit: closing with
        unread bytes makes the kernel reset the connection, and the client may then never read the
        refusal it was sent. A bigger body is not read: the connection closes as it is."""
        if length > DISCARD_MAX:
            return
        try:
            while length > 0:
                chunk = self.rfile.read(min(length, 65536))
                if not chunk:
                    return
                length -= len(chunk)
        except OSError:
            pass

    def _fail(self, status, code, text, headers=None):
        self._send(status, encode(error_reply(None, code, text)), "application/json", headers)

    def _send(self, status, data, kind=None, headers=None):
        self.send_response(status)
        if kind:
            self.send_header("Content-Type", kind)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if data and self.command != "HEAD":
            self.wfile.write(data)


def _accepts(header):
    """(JSON accepted, SSE accepted) by an Accept header; a missing one accepts anything."""
    if not header:
        return True, False
    kinds = {part.split(";")[0].strip().lower() for part in header.split(",")}
    return bool(kinds & {"application/json", "application/*", "*/*"}), "text/event-stream" in kinds


def _local_origin(origin):
    try:
        host = urllib.parse.urlsplit(origin.strip()).hostname
    except ValueError:
        return False
    return bool(host) and LOCAL.fullmatch(host) is not None


def _local_host(host):
    """Whether a Host header (name or address, with or without a port) names this machine."""
    return _local_origin("//" + host.strip()) if host.strip() else False


class MCPHTTPServer(http.server.ThreadingHTTPServer):
    """The listening server: a thread per connection (at most MAX_CONNECTIONS), its sessions, the
    shared engine of stateless requests, the token (or None)."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128                # connections waiting to be accepted (socketserver's default: 5)

    def __init__(self, address, engine, token=None, prefer_sse=False, max_sessions=MAX_SESSIONS):
        """`engine()`: a new protocol engine (mcp/server.Server), one per session and one for stateless requests."""
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, Handler)
        self.token, self.prefer_sse = token, prefer_sse
        self.sessions = Sessions(engine, max_sessions)
        self.stateless = engine()
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.refusing = threading.BoundedSemaphore(MAX_REFUSING)
        self.local = LOCAL.fullmatch(address[0]) is not None      # bound to this machine only: Host is checked

    @property
    def url(self):
        host, port = self.server_address[:2]
        name = cast(str, host)                  # an IP address (bytes only for an AF_UNIX socket)
        return f"http://{f'[{name}]' if ':' in name else name}:{port}{PATH}"

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            if self.refusing.acquire(blocking=False):
                threading.Thread(target=self._refuse, args=(request,), daemon=True, name="mcp-refuse").start()
            else:                           # flooded beyond that: closed as it is
                self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def _refuse(self, request):
        """503 for a connection over the limit: sent, then the request read and dropped until the client
        closes (or REFUSE_SECONDS pass), so that closing does not reset the connection before the
        client has read the answer."""
        try:
            request.settimeout(REFUSE_SECONDS)
            request.sendall(BUSY)
            request.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + REFUSE_SECONDS
            while time.monotonic() < deadline and request.recv(65536):
                pass
        except OSError:
            pass
        finally:
            request.close()
            self.refusing.release()

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request, client_address):   # a dropped client: nothing to tell anyone
        pass


BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
        b"Connection: close\r\nContent-Length: %d\r\n\r\n%s")
_BUSY_BODY = encode(error_reply(None, INVALID_REQUEST, "Service Unavailable: too many connections")).rstrip(b"\n")
BUSY = BUSY % (len(_BUSY_BODY), _BUSY_BODY)


def parse_address(text):
    """`[HOST:]PORT` (IPv6 hosts in brackets) → (host, port); ValueError when it is not one."""
    match = re.fullmatch(r"(?:(\[[0-9a-fA-F:.]+\]|[^:\[\]]+):)?(\d{1,5})", text or "")
    if not match or int(match.group(2)) > 65535:
        raise ValueError(f"--http 需要 [HOST:]PORT（如 8000 或 127.0.0.1:0），不是 {text!r}")
    return (match.group(1) or "127.0.0.1").strip("[]"), int(match.group(2))


def main(argv, engine, token=None, banner="ready"):
    """`[HOST:]PORT` (argv[0]): serve `engine()`s until SIGTERM or SIGINT; 0 then, 2 for bad usage. `token`: the
    bearer token every request must carry (None: none); `banner`: the second stderr line's words."""
    try:
        host, port = parse_address(argv[0] if argv else "")
        server = MCPHTTPServer((host, port), engine, token)
    except (ValueError, OSError) as exc:
        print(f"mcp server: {exc}", file=sys.stderr)
        return 2
    print(f"MCP server at {server.url}", file=sys.stderr, flush=True)
    print(f"mcp server: {banner} (auth={'bearer' if server.token else 'none'}, protocols {', '.join(VERSIONS)})",
          file=sys.stderr, flush=True)

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
    return 0

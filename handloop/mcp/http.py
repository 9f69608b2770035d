"""MCP over Streamable HTTP, the client side: the same session and tool calls as mcp_tools.Client,
carried as HTTP POSTs to one endpoint (MCP spec 2025-03-26 / 2025-06-18 "Streamable HTTP").

Wire: every JSON-RPC message is one POST with `Content-Type: application/json` and
`Accept: application/json, text/event-stream`; a request's reply is one JSON body or a
`text/event-stream` whose events may carry server notifications (skipped) and server requests
(answered by a POST, as over stdio) before the reply. The `Mcp-Session-Id` the server gives at
`initialize` goes on every later request and the session ends with DELETE; `MCP-Protocol-Version`
follows the negotiated version. The 2026-07-28 revision is stateless: no session, and each POST
also names its method (`Mcp-Method`) and tool (`Mcp-Name`) in headers.

Invariants: every HTTP exchange has a deadline (the request's timeout covers connect, send and
the whole reply, SSE included: at the deadline one watchdog thread shuts the connection, however
slowly its bytes come); nothing here raises anything but MCPError (its subclasses
MCPTimeout, MCPAuthError, SessionExpired); a 401/403 is an MCPAuthError naming the server and is
remembered, so the server is never asked again with the same credentials; a 404 on a live session
(expired) ends it and the request is tried once on a new session; a dropped kept-alive connection
is retried once on a fresh connection, nothing else is retried. The token is only ever sent in the
Authorization header, never put in a message, the URL we show, or any file (a server's words that quote it
show *** instead); a refusal names the variable the token comes from (`token_env`), not its value. A URL
with a user name or password is refused, shown with them as ***. Standard library only.
"""
import base64
import http.client
import json
import re
import threading
import time
import urllib.parse

from .. import mcp_tools
from .. import texts
from ..values import redacted_url, scrubbed
from .deadlines import Watch, socket_of
from ..mcp_tools import META_VERSION, MCPAuthError, MCPError, MCPTimeout, encode, valid_id

MAX_REPLY = mcp_tools.CLIENT_MAX_LINE       # bytes of one reply body or one SSE event
SAFE_HEADER = re.compile(r"[\x21-\x7e]+")   # a session id, a token: visible ASCII only
ZH = texts.ZH_TEXTS                          # what is said when the caller names no language


class SessionExpired(MCPError):
    """The server answered 404 to a request on our session: it no longer knows it."""


class Target:
    """A parsed endpoint URL: scheme, host, port and the path (with query) to POST to."""

    def __init__(self, url, say=ZH):
        if not isinstance(url, str) or not url.strip():
            raise MCPError(say("mcp.bad_url", url=redacted_url(url), why=say("mcp.url_host")))
        parts = urllib.parse.urlsplit(url.strip())
        why = None
        if parts.scheme not in ("http", "https"):
            why = say("mcp.url_scheme")
        elif parts.username is not None or parts.password is not None:
            why = say("mcp.url_userinfo")
        elif not parts.hostname:
            why = say("mcp.url_host")
        else:
            try:
                self.port = parts.port or (443 if parts.scheme == "https" else 80)
            except ValueError:
                why = say("mcp.url_port")
        if why:
            raise MCPError(say("mcp.bad_url", url=redacted_url(url.strip()), why=why))
        self.url, self.scheme, self.host = url.strip(), parts.scheme, parts.hostname or ""     # never empty here
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    def connection(self, timeout):
        kind = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return kind(self.host, self.port, timeout=timeout)


def check_token(token, say=ZH, env="AGENT_MCP_TOKEN"):
    """The token, or ValueError when it cannot go into a header as it is (naming `env`, the variable it was
    read from; None: the caller's own)."""
    if token is not None and not SAFE_HEADER.fullmatch(token):
        raise ValueError(say("mcp.bad_token", env=env or say("mcp.the_token")))
    return token


def header_value(text):
    """A header value as the 2026-07-28 transport writes one: verbatim if plain, else base64-wrapped."""
    if re.fullmatch(r"[\x20-\x7e]*", text) and text == text.strip() and not text.startswith("=?base64?"):
        return text
    return "=?base64?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="


class _Session:
    """One MCP session over HTTP: what mcp_tools.Client needs of a connection (request, notify,
    closed, death, close), with a small pool of kept-alive HTTP connections under it."""

    def __init__(self, target, token, notify_timeout, say=ZH, token_env=None):
        self.target, self.token, self.notify_timeout, self.say = target, token, notify_timeout, say
        self.token_env = token_env
        self.session_id = self.version = self.refused = None
        self.closed = self.expired = False
        self.lock, self.idle, self.next_id = threading.Lock(), [], 1

    # ---- what the Client calls
    def request(self, method, params, timeout, cancel=False):
        if self.refused is not None:
            raise self.refused
        if self.closed:
            raise MCPError(self.death())
        with self.lock:
            rid, self.next_id = self.next_id, self.next_id + 1
        message = {"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params is not None else {})}
        try:
            return self._result(self._exchange(message, time.monotonic() + timeout, timeout))
        except MCPTimeout:
            if cancel and self.session_id:
                self.notify("notifications/cancelled", {"requestId": rid, "reason": "timeout"})
            raise

    def notify(self, method, params=None):
        """Send a notification (the server answers 202); a failure is let be, as over stdio."""
        message = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
        try:
            self._exchange(message, time.monotonic() + self.notify_timeout, self.notify_timeout)
        except MCPError:
            pass

    def death(self):
        return self.say("mcp.expired" if self.expired else "closed", url=self.target.url)

    def close(self, grace=2.0):
        """End the session: DELETE it when the server gave one (a 405 is fine). Never raises."""
        with self.lock:
            was_closed, self.closed = self.closed, True
        if not was_closed and self.session_id and not self.expired and self.refused is None:
            try:
                with Watch(time.monotonic() + grace) as watch:
                    conn, response = self._send("DELETE", None, self._headers(None), time.monotonic() + grace,
                                                watch=watch)
                    response.read(64 << 10)
                    conn.close()
            except (MCPError, OSError, http.client.HTTPException):
                pass
        with self.lock:
            idle, self.idle = self.idle, []
        for conn in idle:
            conn.close()

    # ---- one message, one POST
    def _headers(self, message):
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "User-Agent": f"{mcp_tools.CLIENT_INFO['name']}/{mcp_tools.CLIENT_INFO['version']}"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        params = (message or {}).get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and isinstance(meta.get(META_VERSION), str):   # stateless revision
            headers["MCP-Protocol-Version"] = meta[META_VERSION]
            headers["Mcp-Method"] = message["method"]
            if message["method"] == "tools/call" and isinstance(params, dict) and isinstance(params.get("name"), str):
                headers["Mcp-Name"] = header_value(params["name"])
        elif self.version:
            headers["MCP-Protocol-Version"] = self.version
        return headers

    def _exchange(self, message, deadline, timeout):
        """POST one message; for a request its reply (a JSON-RPC object), for anything else None."""
        try:
            body = encode(message)
        except ValueError as exc:
            raise MCPError(self.say("mcp.unencodable", why=exc)) from None
        method, rid = message.get("method", "?"), message.get("id")
        with Watch(deadline) as watch:
            try:
                conn, response = self._send("POST", body, self._headers(message), deadline, method, timeout, watch)
                keep = False
                try:
                    answer, keep = self._answer(response, conn, method, rid, deadline, timeout)
                    return answer
                finally:
                    self._release(conn, keep and not response.will_close and not watch.fired)
            except MCPError:
                if watch.fired:                     # cut at the deadline: whatever the read made of it
                    raise MCPTimeout(self.say("mcp.timeout", url=self.target.url, seconds=timeout or 0,
                                              method=method)) from None
                raise

    def _answer(self, response, conn, method, rid, deadline, timeout):
        status = response.status
        kind = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if status in (401, 403):
            self._drain(response, deadline, timeout, method, limit=64 << 10)
            self.refused = MCPAuthError(self.say("mcp.auth", url=self.target.url, status=status,
                                                 hint=self._refusal(status)), code=status)
            raise self.refused
        if status == 404 and self.session_id and rid is not None:
            self.expired = self.closed = True
            raise SessionExpired(self.say("mcp.expired", url=self.target.url), code=404)
        if 300 <= status < 400:
            location = self._shown(redacted_url(response.getheader("Location") or "?"))
            raise MCPError(self.say("mcp.redirect", url=self.target.url, location=location))
        if rid is None:                             # a notification or a reply of ours: 202, nothing to read
            self._drain(response, deadline, timeout, method, limit=64 << 10)
            return None, True
        if status == 200 and kind == "text/event-stream":
            return self._events(response, method, rid, deadline, timeout), False
        body = self._drain(response, deadline, timeout, method)
        reply = _json(body) if kind == "application/json" else None
        if isinstance(reply, dict) and reply.get("jsonrpc") == "2.0" and "method" not in reply and \
                (reply.get("id") == rid or reply.get("id") is None and "error" in reply):
            if method == "initialize" and status == 200:
                self._begin(response, reply)
            return reply, True
        if status in (200, 202, 204) and (not body.strip() or kind == "application/json"):
            raise MCPError(self.say("mcp.no_reply", url=self.target.url, method=method, status=status))
        if status != 200:
            detail = "" if kind == "text/html" or not body.strip() else \
                "：" + self._shown(body[:160].decode("utf-8", "replace"))
            raise MCPError(self.say("mcp.status", url=self.target.url, status=status, reason=response.reason, detail=detail),
                           code=status)
        raise MCPError(self.say("mcp.not_mcp", url=self.target.url, what=kind or "?"))

    def _refusal(self, status):
        """Why a 401/403 came, naming where the token comes from (never the token)."""
        if status == 403:
            return self.say("mcp.auth_forbidden")
        if self.token:
            return self.say("mcp.auth_wrong", env=self.token_env) if self.token_env else self.say("mcp.auth_given")
        return self.say("mcp.auth_missing", env=self.token_env) if self.token_env else self.say("mcp.auth_undeclared")

    def _shown(self, text):
        """A server's words as we show them: our token in them as ***."""
        return scrubbed(text, (self.token,) if self.token else ())

    def _begin(self, response, reply):
        """A successful initialize: the session id (if any) and the version for later headers."""
        sid = response.getheader("Mcp-Session-Id")
        if sid is not None and not SAFE_HEADER.fullmatch(sid):
            raise MCPError(self.say("mcp.not_mcp", url=self.target.url, what="Mcp-Session-Id"))
        result = reply.get("result") if isinstance(reply.get("result"), dict) else {}
        self.session_id = sid
        self.version = result.get("protocolVersion") if isinstance(result.get("protocolVersion"), str) else None

    def _events(self, response, method, rid, deadline, timeout):
        """Read an SSE stream until the reply to `rid`; server requests on the way are answered."""
        data, event, size = [], "message", 0
        while True:
            line = self._read(response.readline, MAX_REPLY + 1, response, deadline, timeout, method)
            if not line:
                raise MCPError(self.say("mcp.dropped", url=self.target.url, why=self.say("mcp.ended_early")))
            if len(line) > MAX_REPLY:
                raise MCPError(self.say("mcp.too_big", url=self.target.url, limit=MAX_REPLY))
            line = line.rstrip(b"\n").rstrip(b"\r")
            if line:
                field, _, value = line.partition(b":")
                value = value[1:] if value.startswith(b" ") else value
                if field == b"data":
                    data.append(value)
                    size += len(value)
                    if size > MAX_REPLY:
                        raise MCPError(self.say("mcp.too_big", url=self.target.url, limit=MAX_REPLY))
                elif field == b"event":
                    event = value.decode("utf-8", "replace")
                continue
            message = _json(b"\n".join(data)) if data and event == "message" else None
            data, event, size = [], "message", 0
            if not isinstance(message, dict):
                continue
            if "method" in message:                 # the server asks (answered) or tells (skipped)
                if "id" in message and valid_id(message["id"]):
                    self._respond(message, deadline, timeout)
                continue
            if message.get("id") == rid:
                if method == "initialize":
                    self._begin(response, message)
                return message

    def _respond(self, request, deadline, timeout):
        """A server request met in a stream: ping is answered, anything else is not supported."""
        answer = mcp_tools.reply(request["id"], {}) if request.get("method") == "ping" else mcp_tools.error_reply(
            request["id"], mcp_tools.METHOD_NOT_FOUND, f"Method not found: {request.get('method')}")
        try:
            self._exchange(answer, deadline, timeout)
        except MCPAuthError:
            raise
        except MCPError:
            pass

    def _result(self, reply):
        if "error" in reply:
            error = reply["error"] if isinstance(reply["error"], dict) else {}
            code, text = error.get("code"), self._shown(str(error.get("message") or "?")[:300])
            raise MCPError(self.say("mcp.error_reply", code=code, text=text), code=code, data=error.get("data"))
        if not isinstance(reply.get("result"), dict):
            raise MCPError(self.say("mcp.no_result"))
        return reply["result"]

    # ---- HTTP under it
    def _send(self, verb, body, headers, deadline, method="DELETE", timeout=None, watch=None):
        """(connection, response) once the status line is in; a kept-alive connection the server had
        closed is retried once on a new one. `watch` (a deadlines.Watch) is told of each connection and response."""
        for attempt in (0, 1):
            conn, reused = self._take()
            try:
                if watch is not None:
                    watch.watch(conn)
                self._arm(conn, deadline, timeout, method)
                conn.request(verb, self.target.path, body=body, headers=headers)
                if watch is not None:
                    watch.watch(conn)               # connected now: its socket
                self._arm(conn, deadline, timeout, method)
                response = conn.getresponse()
                if watch is not None:
                    watch.watch(response)
                return conn, response
            except MCPError:
                conn.close()
                raise
            except TimeoutError:
                conn.close()
                raise MCPTimeout(self.say("mcp.timeout", url=self.target.url, seconds=timeout or 0, method=method)) from None
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                conn.close()
                if reused and attempt == 0:
                    continue
                raise MCPError(self.say("mcp.dropped", url=self.target.url, why=_why(exc))) from None
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                raise MCPError(self.say("mcp.unreachable", url=self.target.url, why=_why(exc))) from None

    def _read(self, read, size, conn, deadline, timeout, method):
        try:
            self._arm(conn, deadline, timeout, method)
            return read(size)
        except TimeoutError:
            raise MCPTimeout(self.say("mcp.timeout", url=self.target.url, seconds=timeout or 0, method=method)) from None
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise MCPError(self.say("mcp.dropped", url=self.target.url, why=_why(exc))) from None

    def _drain(self, response, deadline, timeout, method, limit=MAX_REPLY):
        """The whole body (at most `limit` bytes, else MCPError), read under the deadline."""
        chunks, size = list[bytes](), 0
        while True:
            chunk = self._read(response.read, 1 << 16, response, deadline, timeout, method)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise MCPError(self.say("mcp.too_big", url=self.target.url, limit=limit))

    def _arm(self, conn, deadline, timeout, method):
        """Give the socket what is left of the deadline; MCPTimeout when nothing is."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise MCPTimeout(self.say("mcp.timeout", url=self.target.url, seconds=timeout or 0, method=method))
        sock = socket_of(conn)
        if isinstance(conn, http.client.HTTPConnection):
            conn.timeout = left
        if sock is not None:
            sock.settimeout(left)

    def _take(self):
        with self.lock:
            if self.idle:
                return self.idle.pop(), True
        return self.target.connection(self.notify_timeout), False

    def _release(self, conn, keep):
        with self.lock:
            if keep and not self.closed and len(self.idle) < 4:
                self.idle.append(conn)
                return
        conn.close()


def _json(data):
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def _why(exc):
    return (getattr(exc, "strerror", None) or str(exc) or type(exc).__name__)[:200]


class HTTPClient(mcp_tools.Client):
    """A session with one Streamable HTTP MCP server, for one run: mcp_tools.Client's handshake
    (both eras), tools/list and tools/call over _Session. Thread-safe. `token`: sent as a bearer
    token; `token_env`: the environment variable it was read from (None: the caller's own), which a refusal
    names. A request that meets an expired session is tried once more on a new session. MCPError for a URL
    or a token that cannot be used."""

    def __init__(self, url, token=None, timeout=8.0, mode="auto", probe_timeout=3.0, max_restarts=3, close_grace=2.0,
                 say=ZH, token_env=None):
        super().__init__(command=[url], env={}, timeout=timeout, mode=mode, probe_timeout=probe_timeout,
                         max_restarts=max_restarts, close_grace=close_grace, say=say)
        self.target = Target(url, say)
        try:
            self.token = check_token(token, say, token_env)
        except ValueError as exc:
            raise MCPError(str(exc)) from None
        self.token_env, self.url, self.refused = token_env, self.target.url, None

    def _connect(self):
        return _Session(self.target, self.token, self.timeout, self.say, self.token_env)

    @property
    def where(self):
        return self.url

    def _live(self, deadline=None):
        if self.refused is not None:                    # the server said no: it is not asked again
            raise self.refused
        try:
            return super()._live(deadline)
        except MCPAuthError as exc:
            self.refused = exc
            raise

    def _overdue(self, method):
        return MCPTimeout(self.say("mcp.timeout", url=self.url, seconds=self.timeout, method=method))

    def request(self, method, params=None, deadline=None):
        deadline = time.monotonic() + self.timeout if deadline is None else deadline
        try:
            try:
                return super().request(method, params, deadline)
            except SessionExpired:
                return super().request(method, params, deadline)  # _live opens a new session (a counted restart)
        except MCPAuthError as exc:
            self.refused = exc
            raise

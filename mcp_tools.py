"""MCP over stdio, written by hand. Imported, it is the client `toolset.py` talks through; run as
a script (`python mcp_tools.py`), it is a weather server offering `search_location(city)` and
`get_weather(latitude, longitude, date)`.

Wire: one JSON-RPC 2.0 message per line, UTF-8. Both protocol eras: the `initialize` handshake
(2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05) and the stateless 2026-07-28 revision
(`server/discover`, the per-request `_meta` envelope, `resultType`, `ttlMs`, `cacheScope`).

Server invariants: nothing but protocol messages on its stdout (anything else printed goes to
stderr); exactly one reply per request and none per notification; hostile input (invalid JSON,
wrong types, huge lines, early or unknown requests) gets its JSON-RPC error and never stops it;
requests are answered one at a time, in order; it exits on stdin EOF. Bad argument values and
tool failures are `isError` results the model can act on; protocol misuse is a JSON-RPC error.
Data: offline and deterministic by default; Open-Meteo over HTTP with AGENT_MCP_WEATHER=open-meteo.

Client invariants: one server process at a time per Client, started on first need, restarted
(a bounded number of times) after it dies; every request has a timeout and fails at once when
the server dies; stdout garbage and unsolicited messages are skipped; stderr is always drained;
close() always ends the process (stdin EOF, wait, SIGTERM, SIGKILL). The client returns what
the server said (a JSON object) or raises MCPError; what may reach the model is toolset's call.

This module never imports tools.py, nor tools.py it; it needs only the standard library,
config (for the server's environment settings) and calls (the one JSON Schema validator).
"""
import collections
import datetime
import json
import math
import os
import re
import subprocess
import sys
import threading
import traceback

import config
from calls import validate

MODERN_VERSION = "2026-07-28"
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")    # newest first
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
UNSUPPORTED_VERSION = -32022

SERVER_MAX_LINE = 1 << 20           # bytes in one message the server reads
CLIENT_MAX_LINE = 16 << 20          # bytes in one message the client reads
CLIENT_INFO = {"name": "hotel-agent", "version": "1.0"}
SERVER_INFO = {"name": "hotel-agent-weather", "version": "1.0"}
TOO_LONG = object()


class MCPError(Exception):
    """A protocol-level failure: an error reply, a timeout, a dead server, a malformed message."""

    def __init__(self, message, code=None, data=None):
        super().__init__(message)
        self.message, self.code, self.data = message, code, data


class MCPTimeout(MCPError):
    """The server did not answer in time."""


class ToolFailed(MCPError):
    """The tool ran and reported a failure (an `isError` result); the text says why."""


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


# ======================================================================= client
def default_command():
    """This Python running this file: the built-in server."""
    return [sys.executable, os.path.abspath(__file__)]


def child_environment(env=None):
    """The server's environment: ours, minus the model service's credentials."""
    env = os.environ if env is None else env
    return {key: value for key, value in env.items() if not key.startswith("OPENAI_")}


class _Slot:
    """A request waiting for its reply."""

    def __init__(self):
        self.event, self.reply = threading.Event(), None


class _Connection:
    """One server process: its pipes, its two reader threads and the requests awaiting replies."""

    def __init__(self, command, env):
        try:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=env, start_new_session=os.name == "posix")
        except (OSError, ValueError) as exc:
            raise MCPError(f"无法启动 MCP 服务（{' '.join(command)}）：{exc}") from None
        self.lock, self.write_lock = threading.Lock(), threading.Lock()
        self.pending, self.next_id, self.closed = {}, 1, False
        self.stderr, self.garbage = collections.deque(maxlen=20), 0
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
            raise MCPTimeout(f"MCP 服务 {timeout:g} 秒内没有回答 {method}")
        return self._result(slot.reply)

    def notify(self, method, params=None):
        self.send_quietly({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})})

    def send(self, message):
        try:
            data = encode(message)
        except ValueError as exc:
            raise MCPError(f"无法把请求编码成 JSON：{exc}") from None
        with self.write_lock:
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (OSError, ValueError):          # broken pipe, or closed by close()
                raise MCPError(self.death()) from None

    def _result(self, reply):
        if reply is None:
            raise MCPError(self.death())
        if "error" in reply:
            error = reply["error"] if isinstance(reply["error"], dict) else {}
            code, text = error.get("code"), str(error.get("message") or "（没有说明）")[:300]
            raise MCPError(f"MCP 服务返回错误 {code}：{text}", code=code, data=error.get("data"))
        if not isinstance(reply.get("result"), dict):
            raise MCPError("MCP 服务的回复格式不对：没有 result 对象")
        return reply["result"]

    def _forget(self, rid):
        with self.lock:
            self.pending.pop(rid, None)

    def _read(self):
        while True:
            line = read_line(self.proc.stdout, CLIENT_MAX_LINE)
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
            self.stderr.append(f"[stdout 上的非协议内容已忽略] {str(line)[:120] if line is not TOO_LONG else '(超长行)'}")
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
        for raw in iter(lambda: self.proc.stderr.readline(4096), b""):
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
        why = f"已退出（退出码 {code}）" if code is not None else "已断开"
        tail = " | ".join(list(self.stderr)[-3:])
        return f"MCP 服务{why}" + (f"；最后的 stderr：{tail[-300:]}" if tail else "")

    def close(self, grace=2.0):
        """End the process: stdin EOF and wait, then SIGTERM, then SIGKILL. Never raises."""
        with self.lock:
            self.closed = True
        if self.write_lock.acquire(timeout=grace):   # a write stuck on a full pipe: skip the polite EOF
            try:
                self.proc.stdin.close()
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
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except (OSError, ValueError):
                pass


class Client:
    """A session with one stdio MCP server, for one run. Thread-safe.

    `mode`: "auto" probes `server/discover` (2026-07-28) and falls back to `initialize` on any
    error or silence; "legacy" only uses `initialize`; "modern" requires 2026-07-28.
    """

    def __init__(self, command=None, env=None, timeout=8.0, mode="auto", probe_timeout=3.0, max_restarts=3,
                 close_grace=2.0):
        if mode not in ("auto", "legacy", "modern"):
            raise ValueError(f"mode must be auto, legacy or modern, not {mode!r}")
        self.command = list(command or default_command())
        self.env = child_environment() if env is None else env
        self.timeout, self.mode, self.probe_timeout = timeout, mode, min(probe_timeout, timeout)
        self.max_restarts, self.starts, self.close_grace = max_restarts, 0, close_grace
        self.conn, self.last_death = None, ""
        self.era = self.version = None
        self.server_info = {}
        self.lock = threading.Lock()

    def start(self):
        """Connect now (spawn and handshake) unless connected; returns self."""
        self._live()
        return self

    def _live(self):
        """The live connection, (re)started as needed."""
        with self.lock:
            if self.conn is not None and not self.conn.closed:
                return self.conn
            if self.conn is not None:
                self.last_death = self.conn.death()
                self.conn.close(grace=min(0.5, self.close_grace))
                self.conn = None
            if self.starts > self.max_restarts:
                raise MCPError(f"MCP 服务已重启 {self.max_restarts} 次，不再重试；{self.last_death}")
            self.starts += 1
            conn = _Connection(self.command, self.env)
            try:
                self._handshake(conn)
            except MCPError:
                conn.close(grace=min(0.5, self.close_grace))
                raise
            self.conn = conn
            return conn

    def _handshake(self, conn):
        if self.mode != "legacy":
            try:
                result = conn.request("server/discover", {"_meta": self._envelope()},
                                      self.probe_timeout if self.mode == "auto" else self.timeout)
                versions = result.get("supportedVersions")
                if isinstance(versions, list) and MODERN_VERSION in versions:
                    self.era, self.version = "modern", MODERN_VERSION
                    self.server_info = (result.get("_meta") or {}).get(META_SERVER_INFO) or {}
                    return
                problem = f"server/discover 只支持 {versions!r}"
            except MCPError as exc:
                if conn.closed:
                    raise
                problem = str(exc)
            if self.mode == "modern":
                raise MCPError(f"MCP 服务不支持协议 {MODERN_VERSION}：{problem}")
        self._initialize(conn)

    def _initialize(self, conn):
        result = conn.request("initialize", {"protocolVersion": LEGACY_VERSIONS[0], "capabilities": {},
                                             "clientInfo": CLIENT_INFO}, self.timeout)
        version = result.get("protocolVersion")
        if version not in LEGACY_VERSIONS:
            raise MCPError(f"MCP 服务提出的协议版本 {version!r} 不受支持（支持：{', '.join(LEGACY_VERSIONS)}）")
        conn.notify("notifications/initialized")
        self.era, self.version = "legacy", version
        self.server_info = result.get("serverInfo") if isinstance(result.get("serverInfo"), dict) else {}

    def _envelope(self):
        return {META_VERSION: MODERN_VERSION, META_CAPABILITIES: {}, META_CLIENT_INFO: CLIENT_INFO}

    def request(self, method, params=None):
        """One request on the live session; its result object, or MCPError."""
        conn = self._live()
        if self.era == "modern":
            params = dict(params or {}, _meta={**((params or {}).get("_meta") or {}), **self._envelope()})
        result = conn.request(method, params, self.timeout, cancel=self.era == "legacy")
        kind = result.get("resultType", "complete")
        if kind != "complete":
            raise MCPError(f"MCP 服务的结果类型 {kind!r} 需要额外交互，本客户端不支持")
        return result

    def list_tools(self, max_pages=100):
        """Every tool the server offers, following `nextCursor`."""
        found, cursor = [], None
        for _ in range(max_pages):
            result = self.request("tools/list", {"cursor": cursor} if cursor else None)
            page, cursor = result.get("tools"), result.get("nextCursor")
            if not isinstance(page, list):
                raise MCPError("tools/list 的结果里没有 tools 列表")
            found += [t for t in page if isinstance(t, dict) and isinstance(t.get("name"), str)]
            if not cursor:
                return found
            if not isinstance(cursor, str):
                raise MCPError(f"tools/list 的 nextCursor 不是字符串：{cursor!r}")
        raise MCPError(f"tools/list 翻了 {max_pages} 页还没有结束")

    def call_tool(self, name, arguments):
        """The tool's result as a JSON object; ToolFailed for an `isError` result, MCPError otherwise."""
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError") is True:
            raise ToolFailed(result_text(result) or "工具报告失败，但没有说明原因")
        return result_payload(result)

    def close(self):
        """End the session and the server process; a later request would start a new one."""
        with self.lock:
            conn, self.conn = self.conn, None
        if conn is not None:
            conn.close(self.close_grace)


def result_text(result):
    content = result.get("content") if isinstance(result.get("content"), list) else []
    texts = [item["text"] for item in content if isinstance(item, dict) and isinstance(item.get("text"), str)]
    return " ".join(texts)[:500]


def result_payload(result):
    """A tool result's JSON object: `structuredContent`, else the first text item that is one."""
    if isinstance(result.get("structuredContent"), dict):
        return result["structuredContent"]
    content = result.get("content") if isinstance(result.get("content"), list) else []
    for item in content:
        if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str):
            try:
                value = json.loads(item["text"])
            except (ValueError, RecursionError):
                continue
            if isinstance(value, dict):
                return value
    raise MCPError("MCP 工具的结果里没有 JSON 对象")


# ======================================================================= server
FORECAST_START = datetime.date(2026, 9, 28)
# the offline gazetteer: the Chinese cities' forecasts are the local demo's (tools.py), day by day
PLACES = [
    {"name": "西安", "aliases": ("西安", "西安市", "xi'an", "xi’an", "xian", "xi an"), "latitude": 34.2583,
     "longitude": 108.9286, "timezone": "Asia/Shanghai", "country": "中国",
     "days": [("clear", 25, 15), ("cloudy", 23, 14), ("clear", 24, 15), ("rain", 19, 14),
              ("clear", 22, 13), ("cloudy", 21, 12), ("rain", 18, 12), ("clear", 22, 11)]},
    {"name": "北京", "aliases": ("北京", "北京市", "beijing", "peking"), "latitude": 39.9075,
     "longitude": 116.3972, "timezone": "Asia/Shanghai", "country": "中国",
     "days": [("clear", 23, 12), ("clear", 24, 12), ("cloudy", 22, 11), ("clear", 23, 11),
              ("rain", 17, 10), ("clear", 20, 9), ("clear", 21, 9), ("cloudy", 19, 8)]},
    {"name": "上海", "aliases": ("上海", "上海市", "shanghai"), "latitude": 31.2222,
     "longitude": 121.4581, "timezone": "Asia/Shanghai", "country": "中国",
     "days": [("rain", 24, 20), ("cloudy", 26, 21), ("rain", 23, 19), ("clear", 27, 20),
              ("clear", 27, 21), ("rain", 22, 19), ("cloudy", 24, 19), ("clear", 25, 18)]},
    {"name": "Paris", "aliases": ("paris", "巴黎"), "latitude": 48.8534, "longitude": 2.3488,
     "timezone": "Europe/Paris", "country": "France",
     "days": [("cloudy", 19, 11), ("rain", 16, 10), ("rain", 15, 9), ("cloudy", 17, 9),
              ("clear", 19, 8), ("clear", 20, 9), ("cloudy", 18, 10), ("rain", 15, 9)]},
    {"name": "New York", "aliases": ("new york", "new york city", "nyc", "纽约"), "latitude": 40.7143,
     "longitude": -74.006, "timezone": "America/New_York", "country": "United States",
     "days": [("clear", 22, 14), ("clear", 23, 15), ("cloudy", 21, 14), ("rain", 18, 13),
              ("clear", 20, 12), ("cloudy", 19, 11), ("clear", 21, 12), ("rain", 17, 11)]},
]
DATE = r"^\d{4}-\d{2}-\d{2}$"


def tool_specs(live):
    """The tools as `tools/list` describes them."""
    hints = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": live}
    return [
        {"name": "search_location", "title": "查城市坐标",
         "description": "按城市名（中文或英文）查坐标。返回 name、latitude、longitude、timezone、country。",
         "inputSchema": {"type": "object", "additionalProperties": False, "required": ["city"],
                         "properties": {"city": {"type": "string", "minLength": 1, "maxLength": 100,
                                                 "description": "城市名，如 西安 或 Xi'an"}}},
         "annotations": dict(hints, title="查城市坐标")},
        {"name": "get_weather", "title": "查天气预报",
         "description": "按坐标（来自 search_location）查某天的天气预报。返回 date、condition"
                        "（rain、clear、cloudy、fog、snow）、high、low（摄氏度）。",
         "inputSchema": {"type": "object", "additionalProperties": False, "required": ["latitude", "longitude", "date"],
                         "properties": {"latitude": {"type": "number", "minimum": -90, "maximum": 90},
                                        "longitude": {"type": "number", "minimum": -180, "maximum": 180},
                                        "date": {"type": "string", "pattern": DATE, "description": "YYYY-MM-DD"}}},
         "annotations": dict(hints, title="查天气预报")},
    ]


def _coordinates(latitude, longitude):
    """True when these are usable coordinates."""
    return not validate({"type": "number", "minimum": -90, "maximum": 90}, latitude) and \
        not validate({"type": "number", "minimum": -180, "maximum": 180}, longitude)


def parse_date(text):
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise ToolFailed(f"日期 {text} 不存在，请用 YYYY-MM-DD 格式的真实日期") from None


class OfflineWeather:
    """Deterministic demo data: the gazetteer above, eight days of forecasts per place."""

    name, live = "offline", False

    def search_location(self, city):
        wanted = " ".join(city.strip().lower().split())
        for place in PLACES:
            if wanted in place["aliases"]:
                return {key: place[key] for key in ("name", "latitude", "longitude", "timezone", "country")}
        names = "、".join(p["name"] for p in PLACES)
        raise ToolFailed(f"离线演示数据里没有城市 {city}；有：{names}")

    def get_weather(self, latitude, longitude, date):
        day = parse_date(date)
        near = [p for p in PLACES if abs(p["latitude"] - latitude) <= 0.1 and abs(p["longitude"] - longitude) <= 0.1]
        if not near:
            raise ToolFailed(f"离线演示数据没有坐标 ({latitude}, {longitude}) 附近的天气；请用 search_location 查到的坐标")
        offset = (day - FORECAST_START).days
        if not 0 <= offset < len(near[0]["days"]):
            last = FORECAST_START + datetime.timedelta(days=len(near[0]["days"]) - 1)
            raise ToolFailed(f"离线演示数据只有 {FORECAST_START} 至 {last} 的天气预报")
        condition, high, low = near[0]["days"][offset]
        return {"date": date, "condition": condition, "high": high, "low": low,
                "latitude": latitude, "longitude": longitude, "source": "offline-demo"}


def condition_for(code):
    """A WMO weather code (Open-Meteo's `weather_code`) as rain, clear, cloudy, fog or snow."""
    for codes, condition in (((0, 1), "clear"), ((2, 3), "cloudy"), ((45, 48), "fog"),
                             (tuple(range(51, 68)) + (80, 81, 82, 95, 96, 99), "rain"),
                             (tuple(range(71, 78)) + (85, 86), "snow")):
        if code in codes:
            return condition
    return "unknown"


class OpenMeteo:
    """Open-Meteo's public geocoding and forecast APIs, over HTTP with urllib. No country bias:
    the geocoder's first match wins, whatever its country (the result says which)."""

    name, live, max_body = "open-meteo", True, 2 << 20

    def __init__(self, geocoding_url, forecast_url, timeout=6.0):
        self.geocoding_url, self.forecast_url, self.timeout = geocoding_url, forecast_url, timeout

    def search_location(self, city):
        data = self._get(self.geocoding_url, {"name": city.strip(), "count": 1, "language": "zh", "format": "json"})
        results = data.get("results")
        top = results[0] if isinstance(results, list) and results and isinstance(results[0], dict) else None
        if top is None:
            raise ToolFailed(f"找不到城市 {city}；可以换个写法（中文或英文）再试")
        lat, lon = top.get("latitude"), top.get("longitude")
        if not _coordinates(lat, lon):
            raise ToolFailed("地理编码服务的结果里没有有效坐标")
        return {"name": top.get("name") or city, "latitude": lat, "longitude": lon,
                "timezone": top.get("timezone"), "country": top.get("country"), "source": "open-meteo"}

    def get_weather(self, latitude, longitude, date):
        parse_date(date)
        data = self._get(self.forecast_url, {"latitude": latitude, "longitude": longitude, "timezone": "auto",
                                             "daily": "weather_code,temperature_2m_max,temperature_2m_min",
                                             "start_date": date, "end_date": date})
        try:
            daily = data["daily"]
            index = daily["time"].index(date)
            code, high, low = (daily[k][index] for k in ("weather_code", "temperature_2m_max", "temperature_2m_min"))
        except (KeyError, ValueError, IndexError, TypeError, AttributeError):
            code = None
        if not isinstance(code, (int, float)) or isinstance(code, bool):
            raise ToolFailed(f"天气服务没有 {date} 的预报")
        return {"date": date, "condition": condition_for(int(code)), "high": high, "low": low,
                "weather_code": int(code), "source": "open-meteo"}

    def _get(self, url, query):
        import http.client                 # only the live source needs HTTP: keeps the server's start quick
        import urllib.error
        import urllib.parse
        import urllib.request
        full = url + ("&" if "?" in url else "?") + urllib.parse.urlencode(query)
        request = urllib.request.Request(full, headers={"Accept": "application/json", "User-Agent": "hotel-agent-mcp/1.0"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read(self.max_body + 1)
        except urllib.error.HTTPError as exc:
            raise ToolFailed(f"天气服务返回 HTTP {exc.code}：{_reason(exc)}") from None
        except (OSError, http.client.HTTPException) as exc:
            raise ToolFailed(f"天气服务不可达：{getattr(exc, 'reason', exc)}") from None
        try:
            data = strict_loads(body) if len(body) <= self.max_body else None
        except (ValueError, RecursionError):
            data = None
        if not isinstance(data, dict):
            raise ToolFailed("天气服务的回复不是 JSON 对象（或太大）")
        return data


def _reason(http_error):
    """Open-Meteo explains its errors as {"error": true, "reason": ...}."""
    try:
        body = json.loads(http_error.read(64 << 10))
        return str(body.get("reason") or body)[:200]
    except (ValueError, AttributeError, OSError):
        return str(http_error.reason)[:200]


def make_source(settings):
    if settings["mcp_weather"] == "offline":
        return OfflineWeather()
    if settings["mcp_weather"] == "open-meteo":
        return OpenMeteo(settings["mcp_geocoding_url"], settings["mcp_forecast_url"])
    raise ValueError(f"AGENT_MCP_WEATHER 只能是 offline 或 open-meteo，不是 {settings['mcp_weather']!r}")


def reply(rid, result):
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def error_reply(rid, code, message, data=None):
    error = {"code": code, "message": message, **({"data": data} if data is not None else {})}
    return {"jsonrpc": "2.0", "id": rid, "error": error}


def tool_result(value):
    return {"content": [{"type": "text", "text": json.dumps(value, ensure_ascii=False)}],
            "structuredContent": value, "isError": False}


def tool_error(text):
    return {"content": [{"type": "text", "text": text}], "isError": True}


class Server:
    """The protocol engine: one message in, at most one reply out. Knows nothing of pipes."""

    CAPABILITIES = {"tools": {"listChanged": False}}
    INSTRUCTIONS = "先用 search_location 查城市坐标，再用这些坐标调用 get_weather。"
    LIST_TTL_MS = 60_000

    def __init__(self, source, page_size=50):
        self.source, self.page_size = source, max(1, page_size)
        self.tools = tool_specs(source.live)
        self.initialized = False

    def handle(self, line):
        """The reply to one line (bytes), or None when nothing may be said (notifications)."""
        if line is TOO_LONG:
            return error_reply(None, INVALID_REQUEST, f"Invalid Request: message longer than {SERVER_MAX_LINE} bytes")
        try:
            message = strict_loads(line)
        except ValueError:
            return error_reply(None, PARSE_ERROR, "Parse error: the line is not valid UTF-8 JSON")
        except RecursionError:
            return error_reply(None, INVALID_REQUEST, "Invalid Request: JSON nested too deeply")
        return self.dispatch(message)

    def dispatch(self, message):
        if not isinstance(message, dict):
            return error_reply(None, INVALID_REQUEST, "Invalid Request: expected one JSON object (no batches)")
        rid = message.get("id")
        if "method" not in message:
            if "id" in message and ("result" in message or "error" in message):
                return None                                # a reply to nothing we asked: ignore
            return error_reply(rid if valid_id(rid) else None, INVALID_REQUEST, "Invalid Request: no method")
        if "id" not in message:                            # a notification: never answered
            return None
        if not valid_id(rid):
            return error_reply(None, INVALID_REQUEST, "Invalid Request: id must be a string or a number")
        if message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
            return error_reply(rid, INVALID_REQUEST, 'Invalid Request: needs "jsonrpc": "2.0" and a string "method"')
        params = {} if message.get("params") is None else message["params"]
        if not isinstance(params, dict):
            return error_reply(rid, INVALID_PARAMS, "Invalid params: params must be an object")
        return self._answer(rid, message["method"], params)

    def _answer(self, rid, method, params):
        try:
            return reply(rid, self.route(method, params))
        except MCPError as exc:
            return error_reply(rid, exc.code, exc.message, exc.data)
        except Exception as exc:                           # a fault of ours: report it, keep serving
            traceback.print_exc(file=sys.stderr)
            return error_reply(rid, INTERNAL_ERROR, f"Internal error: {type(exc).__name__}")

    def route(self, method, params):
        meta = params.get("_meta")
        if isinstance(meta, dict) and META_VERSION in meta:
            return self.modern(method, params, meta)
        if method == "initialize":
            return self.initialize(params)
        if method == "ping":
            return {}
        if method == "server/discover":
            raise MCPError(f"Invalid params: server/discover needs params._meta[{META_VERSION!r}]", INVALID_PARAMS)
        if method not in ("tools/list", "tools/call"):
            raise MCPError(f"Method not found: {method}", METHOD_NOT_FOUND)
        if not self.initialized:
            raise MCPError("Invalid Request: not initialized; send initialize first, or use the 2026-07-28 "
                           "_meta envelope", INVALID_REQUEST)
        return self.list_tools(params) if method == "tools/list" else self.call_tool(params)

    def initialize(self, params):
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise MCPError("Invalid params: initialize needs params.protocolVersion (a string)", INVALID_PARAMS)
        if self.initialized:
            raise MCPError("Invalid Request: already initialized", INVALID_REQUEST)
        self.initialized = True
        return {"protocolVersion": requested if requested in LEGACY_VERSIONS else LEGACY_VERSIONS[0],
                "capabilities": self.CAPABILITIES, "serverInfo": SERVER_INFO, "instructions": self.INSTRUCTIONS}

    def modern(self, method, params, meta):
        """A 2026-07-28 request: stateless, its envelope says who asks and at which version."""
        version = meta[META_VERSION]
        if not isinstance(version, str):
            raise MCPError(f"Invalid params: _meta[{META_VERSION!r}] must be a string", INVALID_PARAMS)
        if version != MODERN_VERSION:
            raise MCPError(f"Unsupported protocol version: {version}", UNSUPPORTED_VERSION,
                           {"supported": [MODERN_VERSION, *LEGACY_VERSIONS], "requested": version})
        if not isinstance(meta.get(META_CAPABILITIES), dict):
            raise MCPError(f"Invalid params: _meta[{META_CAPABILITIES!r}] must be an object", INVALID_PARAMS)
        handlers = {"server/discover": self.discover, "tools/list": self.list_tools,
                    "tools/call": self.call_tool, "ping": lambda p: {}}
        if method not in handlers:
            raise MCPError(f"Method not found: {method}", METHOD_NOT_FOUND)
        result = dict(handlers[method](params), resultType="complete")
        if method in ("server/discover", "tools/list"):
            result.update(ttlMs=self.LIST_TTL_MS, cacheScope="public")
        return result

    def discover(self, params):
        return {"supportedVersions": [MODERN_VERSION, *LEGACY_VERSIONS], "capabilities": self.CAPABILITIES,
                "instructions": self.INSTRUCTIONS, "_meta": {META_SERVER_INFO: SERVER_INFO}}

    def list_tools(self, params):
        cursor, start = params.get("cursor"), 0
        if cursor is not None:
            match = re.fullmatch(r"page-(\d{1,6})", cursor) if isinstance(cursor, str) else None
            start = int(match.group(1)) if match else -1
            if not 0 < start < len(self.tools):
                raise MCPError("Invalid params: unknown cursor", INVALID_PARAMS)
        end = start + self.page_size
        result = {"tools": self.tools[start:end]}
        if end < len(self.tools):
            result["nextCursor"] = f"page-{end}"
        return result

    def call_tool(self, params):
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str):
            raise MCPError("Invalid params: tools/call needs params.name (a string)", INVALID_PARAMS)
        spec = next((t for t in self.tools if t["name"] == name), None)
        if spec is None:
            raise MCPError(f"Invalid params: unknown tool {name}", INVALID_PARAMS)
        arguments = {} if arguments is None else arguments
        if not isinstance(arguments, dict):
            raise MCPError("Invalid params: params.arguments must be an object", INVALID_PARAMS)
        problems = validate(spec["inputSchema"], arguments, path="参数")
        if problems:
            return tool_error(f"{name} 的参数不对：" + "；".join(problems))
        try:
            return tool_result(getattr(self.source, name)(**arguments))
        except ToolFailed as exc:
            return tool_error(exc.message)


def serve(stdin, stdout, server):
    """Answer lines from `stdin` until EOF; replies go to `stdout`, each flushed at once."""
    while True:
        line = read_line(stdin, SERVER_MAX_LINE)
        if line is None:
            return 0
        if line is not TOO_LONG and not line.strip():
            continue
        answer = server.handle(line)
        if answer is None:
            continue
        try:
            data = encode(answer)
        except ValueError:                                 # a NaN in a result: a fault of ours, still answered
            data = encode(error_reply(answer.get("id"), INTERNAL_ERROR, "Internal error: result is not JSON"))
        stdout.write(data)
        stdout.flush()


def main():
    out, sys.stdout = sys.stdout.buffer, sys.stderr         # a stray print() can never corrupt the protocol
    try:
        settings = config.settings()
        source = make_source(settings)
    except ValueError as exc:
        print(f"mcp_tools: 配置错误：{exc}", file=sys.stderr)
        return 2
    print(f"mcp_tools: weather server ready (source={source.name}, protocols {MODERN_VERSION}, "
          f"{', '.join(LEGACY_VERSIONS)})", file=sys.stderr, flush=True)
    try:
        return serve(sys.stdin.buffer, out, Server(source, settings["mcp_page_size"]))
    except (BrokenPipeError, KeyboardInterrupt):
        return 0


if __name__ == "__main__":
    sys.exit(main())

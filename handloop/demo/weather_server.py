"""The MCP weather server (started as `python -m handloop.mcp_tools`, or `python demo/weather_server.py`): it offers
`search_location(city)` and `get_weather(latitude, longitude, date)` over the wire protocol of
mcp_tools.py.

Server invariants: nothing but protocol messages on its stdout (anything else printed goes to
stderr); exactly one reply per request and none per notification; hostile input (invalid JSON,
wrong types, huge lines, early or unknown requests) gets its JSON-RPC error and never stops it;
requests are answered one at a time, in order; it exits on stdin EOF. Bad argument values and
tool failures are `isError` results the model can act on; protocol misuse is a JSON-RPC error.
Data: offline and deterministic by default; Open-Meteo over HTTP with AGENT_MCP_WEATHER=open-meteo.

It needs only the standard library, mcp_tools (the wire), config (its environment settings)
and calls (the one JSON Schema validator).
"""
import datetime
import json
import re
import sys
import traceback

from .. import config
from ..values import validate
from ..mcp_tools import (INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, LEGACY_VERSIONS, MCPError, META_CAPABILITIES,
                       META_SERVER_INFO, META_VERSION, METHOD_NOT_FOUND, MODERN_VERSION,
                       PARSE_ERROR, TOO_LONG, ToolFailed, UNSUPPORTED_VERSION, encode, error_reply,
                       read_line, reply, strict_loads, valid_id)

SERVER_MAX_LINE = 1 << 20           # bytes in one message the server reads
SERVER_INFO = {"name": "hotel-agent-weather", "version": "1.0"}
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


def main(argv=None):
    """Serve over stdio; `--http [HOST:]PORT` serves over Streamable HTTP instead (mcp_http_server)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--http"]:
        from ..mcp import http_server as mcp_http_server
        return mcp_http_server.main(argv[1:])
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

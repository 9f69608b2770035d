"""The Xi'an demo's MCP weather server (`python -m handloop.demo.weather_server [--http [HOST:]PORT]`): it offers
`search_location(city)` and `get_weather(latitude, longitude, date)`, served by the protocol engine of
mcp/server.py over stdio (mcp/http_server.py over Streamable HTTP).

Invariants: nothing but protocol messages on its stdout (anything else printed goes to stderr); it
exits on stdin EOF (over HTTP: on SIGTERM or SIGINT, exit 0); a bad setting is one line and exit 2.
Data: offline and deterministic by default; Open-Meteo over HTTP with AGENT_MCP_WEATHER=open-meteo.
"""
import datetime
import json
import sys
from typing import Any

from .. import config
from ..values import validate
from ..mcp import http_server as mcp_http_server
from ..mcp import server as mcp_server
from ..mcp_tools import LEGACY_VERSIONS, MODERN_VERSION, ToolFailed, strict_loads

SERVER_INFO = {"name": "hotel-agent-weather", "version": "1.0"}
FORECAST_START = datetime.date(2026, 9, 28)
# the offline gazetteer: the Chinese cities' forecasts are the local demo's (tools.py), day by day
PLACES: list[dict[str, Any]] = [
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


INSTRUCTIONS = "先用 search_location 查城市坐标，再用这些坐标调用 get_weather。"


def engine(source, page_size=50):
    """A protocol engine (one session's) serving these two tools over `source`."""
    return mcp_server.Server(source, tool_specs(source.live), SERVER_INFO, INSTRUCTIONS, page_size)


def main(argv=None):
    """Serve over stdio; `--http [HOST:]PORT` serves over Streamable HTTP instead."""
    argv = sys.argv[1:] if argv is None else argv
    out, sys.stdout = sys.stdout.buffer, sys.stderr         # a stray print() can never corrupt the protocol
    try:
        settings = config.settings()
        source = make_source(settings)
    except ValueError as exc:
        print(f"weather_server: 配置错误：{exc}", file=sys.stderr)
        return 2
    if argv[:1] == ["--http"]:
        return mcp_http_server.main(argv[1:], lambda: engine(source, settings["mcp_page_size"]), settings["mcp_token"],
                                    f"weather server ready over Streamable HTTP (source={source.name})")
    print(f"weather_server: weather server ready (source={source.name}, protocols {MODERN_VERSION}, "
          f"{', '.join(LEGACY_VERSIONS)})", file=sys.stderr, flush=True)
    try:
        return mcp_server.serve(sys.stdin.buffer, out, engine(source, settings["mcp_page_size"]))
    except (BrokenPipeError, KeyboardInterrupt):
        return 0


if __name__ == "__main__":
    sys.exit(main())

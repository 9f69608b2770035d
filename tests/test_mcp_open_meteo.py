"""The server's live source (AGENT_MCP_WEATHER=open-meteo), tested against a local fake of
Open-Meteo's geocoding and forecast APIs: no network is needed or used."""
import http.server
import json
import threading
import urllib.parse

import pytest

from handloop import mcp_tools
from mcp_util import SERVER_COMMAND, server_env

GEO = {"results": [{"id": 1, "name": "西安市", "latitude": 34.25833, "longitude": 108.92861, "country": "中国",
                    "country_code": "CN", "timezone": "Asia/Shanghai", "population": 12_000_000}]}


def forecast(code, date="2026-10-01"):
    return {"latitude": 34.25, "longitude": 108.92, "daily_units": {"temperature_2m_max": "°C"},
            "daily": {"time": [date], "weather_code": [code], "temperature_2m_max": [19.4],
                      "temperature_2m_min": [13.1]}}


class FakeOpenMeteo:
    """A loopback HTTP server answering /v1/search and /v1/forecast as told, recording queries."""

    def __init__(self):
        self.answers, self.queries = {}, []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                url = urllib.parse.urlsplit(self.path)
                fake.queries.append((url.path, urllib.parse.parse_qs(url.query)))
                status, body = fake.answers.get(url.path, (404, b'{"error": true, "reason": "no such path"}'))
                data = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def fake():
    f = FakeOpenMeteo()
    yield f
    f.close()


@pytest.fixture(scope="module")
def live(fake):
    env = server_env(AGENT_MCP_WEATHER="open-meteo", AGENT_MCP_GEOCODING_URL=f"{fake.url}/v1/search",
                     AGENT_MCP_FORECAST_URL=f"{fake.url}/v1/forecast")
    client = mcp_tools.Client(SERVER_COMMAND, env=env, timeout=10).start()
    yield client
    client.close()


def last_query(fake, path):
    return [q for p, q in fake.queries if p == path][-1]


def test_search_location_asks_the_geocoder_without_a_country_bias(fake, live):
    fake.answers["/v1/search"] = (200, GEO)
    place = live.call_tool("search_location", {"city": "西安"})
    assert place == {"name": "西安市", "latitude": 34.25833, "longitude": 108.92861, "timezone": "Asia/Shanghai",
                     "country": "中国", "source": "open-meteo"}
    query = last_query(fake, "/v1/search")
    assert query["name"] == ["西安"] and query["count"] == ["1"] and query["format"] == ["json"]
    assert not {"countryCode", "country", "country_code"} & set(query)


def test_the_first_match_wins_whatever_its_country(fake, live):
    fake.answers["/v1/search"] = (200, {"results": [{"name": "Paris", "latitude": 48.85, "longitude": 2.35,
                                                     "country": "France", "timezone": "Europe/Paris"},
                                                    {"name": "Paris", "latitude": 33.66, "longitude": -95.55,
                                                     "country": "United States", "timezone": "America/Chicago"}]})
    assert live.call_tool("search_location", {"city": "Paris"})["country"] == "France"


@pytest.mark.parametrize("code, condition", [(0, "clear"), (2, "cloudy"), (45, "fog"), (53, "rain"), (61, "rain"),
                                             (82, "rain"), (95, "rain"), (73, "snow")])
def test_get_weather_maps_the_weather_code(fake, live, code, condition):
    fake.answers["/v1/forecast"] = (200, forecast(code))
    weather = live.call_tool("get_weather", {"latitude": 34.25833, "longitude": 108.92861, "date": "2026-10-01"})
    assert (weather["date"], weather["condition"], weather["high"], weather["low"]) == ("2026-10-01", condition, 19.4, 13.1)
    query = last_query(fake, "/v1/forecast")
    assert query["start_date"] == query["end_date"] == ["2026-10-01"] and query["latitude"] == ["34.25833"]
    assert "weather_code" in query["daily"][0] and query["timezone"] == ["auto"]


@pytest.mark.parametrize("path, answer, words", [
    ("/v1/forecast", (400, {"error": True, "reason": "Parameter 'start_date' is out of allowed range"}), "out of allowed range"),
    ("/v1/forecast", (500, b"<html>oops</html>"), "HTTP 500"),
    ("/v1/forecast", (200, b"not json at all"), "不是 JSON"),
    ("/v1/forecast", (200, {"daily": {"time": ["2026-09-30"], "weather_code": [1]}}), "没有 2026-10-01 的预报"),
    ("/v1/forecast", (200, forecast(None)), "没有 2026-10-01 的预报"),
    ("/v1/search", (200, {"generationtime_ms": 0.1}), "找不到城市"),
    ("/v1/search", (200, {"results": [{"name": "X", "latitude": "north", "longitude": 1}]}), "没有有效坐标"),
])
def test_upstream_failures_are_tool_errors_the_model_can_read(fake, live, path, answer, words):
    fake.answers[path] = answer
    name, args = (("get_weather", {"latitude": 34.2, "longitude": 108.9, "date": "2026-10-01"})
                  if path == "/v1/forecast" else ("search_location", {"city": "西安"}))
    with pytest.raises(mcp_tools.ToolFailed, match=words):
        live.call_tool(name, args)


def test_an_unreachable_service_is_a_tool_error_and_the_server_says_it_is_open_world(fake):
    env = server_env(AGENT_MCP_WEATHER="open-meteo", AGENT_MCP_GEOCODING_URL="http://127.0.0.1:9/v1/search")
    client = mcp_tools.Client(SERVER_COMMAND, env=env, timeout=10)
    try:
        assert all(t["annotations"]["openWorldHint"] for t in client.list_tools())
        with pytest.raises(mcp_tools.ToolFailed, match="不可达"):
            client.call_tool("search_location", {"city": "西安"})
    finally:
        client.close()


def test_an_unknown_source_stops_the_server_with_a_clear_message():
    client = mcp_tools.Client(SERVER_COMMAND, env=server_env(AGENT_MCP_WEATHER="sunny-always"))
    with pytest.raises(mcp_tools.MCPError, match="AGENT_MCP_WEATHER"):
        client.start()

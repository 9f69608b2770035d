"""A weather server written with the official MCP SDK (test-only; the project never imports `mcp`):
the other side of the interop tests and of `--mcp-server` pointed at a foreign server."""
from mcp.server.mcpserver import MCPServer

app = MCPServer("sdk-weather")


@app.tool()
def search_location(city: str) -> dict:
    """Coordinates of a city."""
    if city not in ("西安", "Xi'an"):
        raise ValueError(f"unknown city {city}")
    return {"name": "西安", "latitude": 34.2583, "longitude": 108.9286, "timezone": "Asia/Shanghai",
            "population": 12_000_000, "note": "this field is not on the allow-list"}


@app.tool()
def get_weather(latitude: float, longitude: float, date: str) -> dict:
    """The forecast at these coordinates on this day."""
    return {"date": date, "condition": "rain" if date == "2026-10-01" else "clear", "high": 19, "low": 14,
            "humidity": 80}


if __name__ == "__main__":
    app.run()

"""A weather server written with the official MCP SDK (test-only; the project never imports `mcp`):
the other side of the interop tests and of `--mcp-server` pointed at a foreign server. Beside its structured weather
tools, an on-call desk's tools that answer as most published servers do, in content blocks with no structured
content: one text block (`incident_note`), two (`incident_log`), text and an image (`incident_chart`), and an
`isError` result with the server's words (`incident_close` of an unknown incident)."""
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ImageContent, TextContent

app = MCPServer("sdk-weather")
INCIDENTS = {"INC-4": ("open", "u-3"), "INC-7": ("closed", "u-5")}
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


@app.tool()
def search_location(city: str) -> dict:
    """Coordinates of a city."""
    if city not in ("西安", "Xi'an"):
        raise ToolError(f"unknown city {city}")
    return {"name": "西安", "latitude": 34.2583, "longitude": 108.9286, "timezone": "Asia/Shanghai",
            "population": 12_000_000, "note": "this field is not on the allow-list"}


@app.tool()
def get_weather(latitude: float, longitude: float, date: str) -> dict:
    """The forecast at these coordinates on this day."""
    return {"date": date, "condition": "rain" if date == "2026-10-01" else "clear", "high": 19, "low": 14,
            "humidity": 80}


@app.tool(structured_output=False)
def incident_note(incident_id: str) -> str:
    """One line about an incident, as plain text."""
    state, owner = INCIDENTS.get(incident_id, ("unknown", "nobody"))
    return f"{incident_id} is {state}; on call: {owner}"


@app.tool(structured_output=False)
def incident_log(incident_id: str) -> list[TextContent]:
    """An incident's log, one text block per entry."""
    return [TextContent(type="text", text=f"{incident_id} 09:00 paged u-3"),
            TextContent(type="text", text=f"{incident_id} 09:05 acknowledged")]


@app.tool(structured_output=False)
def incident_chart(incident_id: str) -> list[TextContent | ImageContent]:
    """An incident's error rate, as a caption and a chart."""
    return [TextContent(type="text", text=f"error rate of {incident_id}"),
            ImageContent(type="image", data=PNG, mimeType="image/png")]


@app.tool(structured_output=False)
def incident_close(incident_id: str) -> str:
    """Close an incident (a write)."""
    if incident_id not in INCIDENTS:
        raise ToolError(f"no incident {incident_id}; open incidents: INC-4")
    return f"{incident_id} closed"


if __name__ == "__main__":
    app.run()

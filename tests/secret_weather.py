"""An agent of two MCP servers over Streamable HTTP, each with its own token, for the secrets tests (issue 36):
`geo` (search_location, at GEO_URL, its token in GEO_TOKEN) and `sky` (get_weather, at SKY_URL, its token in
SKY_TOKEN; with SKY_ENV_FILE set, a process of tests/secret_stdio_server.py instead). SECRET_LANG picks its language: "en" (default) or "zh". Its offline model looks the city up, asks
for the weather there and answers; it has no write, so the run is done on its answer."""
import json
import os
import sys

from handloop import Agent, MCPServer

LANG = os.environ.get("SECRET_LANG") or "en"
NOWHERE = "http://127.0.0.1:9/mcp"                 # a URL the tests always give; this one only lets the file load

GEO = MCPServer("geo", url=os.environ.get("GEO_URL") or NOWHERE, token_env="GEO_TOKEN",
                tools={"search_location": ("name", "latitude", "longitude")})
SKY = MCPServer("sky", url=os.environ.get("SKY_URL") or NOWHERE, token_env="SKY_TOKEN",
                tools={"get_weather": ("date", "condition")})
if os.environ.get("SKY_ENV_FILE"):                 # sky as a process instead, writing the environment it was given there
    SKY = MCPServer("sky", command=[sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                 "secret_stdio_server.py"), os.environ["SKY_ENV_FILE"]],
                    tools={"get_weather": ("date", "condition")})


def respond(request):
    """Look Xi'an up, then its weather on 2026-10-01, then say what it is."""
    results = {}
    names = {}
    for m in request.get("messages") or []:
        names.update({c["id"]: c["function"]["name"] for c in m.get("tool_calls") or []})
        if m["role"] == "tool" and '"error"' not in m["content"]:
            results[names.get(m["tool_call_id"])] = json.loads(m["content"])
    if "search_location" not in results:
        return _call("g1", "search_location", {"city": "Xi'an"})
    if "get_weather" not in results:
        place = results["search_location"]
        return _call("s1", "get_weather", {"latitude": place["latitude"], "longitude": place["longitude"],
                                           "date": "2026-10-01"})
    said = {"en": "The weather in Xi'an on 2026-10-01: {}.", "zh": "西安 2026-10-01 的天气：{}。"}[LANG]
    return {"content": said.format(results["get_weather"]["condition"])}


def _call(call_id, name, args):
    return {"content": None, "tool_calls": [{"id": call_id, "type": "function",
                                             "function": {"name": name, "arguments": json.dumps(args)}}]}


AGENT = Agent(
    name="two-servers", language=LANG, planning=False, tools=[], mcp=[GEO, SKY], offline=respond,
    instructions={"en": "You tell the weather, using only the tools.", "zh": "你只用工具查天气。"}[LANG],
    goal={"en": "What is the weather in Xi'an on 2026-10-01?", "zh": "西安 2026-10-01 天气怎么样？"}[LANG],
    confirm={"en": ("yes",), "zh": ("确认",)}[LANG])

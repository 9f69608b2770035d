"""MCP results as servers really send them (issue 47, finding 1): most published tools answer in content blocks with
no structured content. A text-only tool, a tool answering two text blocks, a text block and an image, an `isError`
result and a structured result, from a server written with the official `mcp` SDK over stdio and over Streamable
HTTP, through the CLI with the real `openai` client and a loopback scripted model, an agent file as a user writes
one, English and Chinese. Assertions read the audit file: the tool messages the model read and the blocks the trace
keeps."""
import json
import sys

import pytest

pytest.importorskip("mcp")

from conftest import read_audit                     # noqa: E402
from mcp_util import SDK_SERVER, server_env         # noqa: E402

AGENT_FILE = '''
from handloop import Agent, MCPServer

DESK = MCPServer("desk", {where}, tools={{
    "incident_note": (), "incident_log": (), "incident_chart": (), "search_location": ("latitude",),
    "get_weather": ("condition",)}})
AGENT = Agent(name="oncall", language={language!r}, planning=False, confirm={confirm!r}, tools=[], mcp=[DESK],
              instructions="You help the on-call engineer: look incidents up and say what you found.",
              goal="What is going on with INC-4?")
'''
CONFIRM = {"en": ("confirm",), "zh": ("确认",)}
CALLS = [("incident_note", {"incident_id": "INC-4"}), ("incident_log", {"incident_id": "INC-4"}),
         ("incident_chart", {"incident_id": "INC-4"}), ("search_location", {"city": "Atlantis"}),
         ("get_weather", {"latitude": 34.2, "longitude": 108.9, "date": "2026-10-01"})]


def model(request):
    """Asks for every tool once, then answers."""
    if any(m["role"] == "tool" for m in request["messages"]):
        return {"content": "INC-4 is open; u-3 is on call."}
    return {"content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": {
        "name": name, "arguments": json.dumps(args)}} for i, (name, args) in enumerate(CALLS)]}


def results(snap):
    """Each tool's result as its tool message holds it, and its trace entry."""
    names = {c["id"]: c["function"]["name"] for m in snap["messages"] for c in m.get("tool_calls") or ()}
    said = {names[m["tool_call_id"]]: json.loads(m["content"]) for m in snap["messages"] if m["role"] == "tool"}
    traced = {t["name"]: t for record in snap["trace"] for t in record.get("tools") or ()}
    return said, traced


@pytest.fixture(scope="module")
def http_server():
    pytest.importorskip("uvicorn")
    from test_mcp_http import SDK_HTTP_SERVER, Process
    process = Process([sys.executable, SDK_HTTP_SERVER], server_env())
    yield process.url
    process.stop()


@pytest.mark.parametrize("language", sorted(CONFIRM))
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_every_kind_of_mcp_result_reaches_the_model_as_the_server_sent_it(agent_files, request, transport, language):
    where = (f"command=[{sys.executable!r}, {SDK_SERVER!r}]" if transport == "stdio"
             else f"url={request.getfixturevalue('http_server')!r}")
    path, run = agent_files(model, "oncall.py", AGENT_FILE.format(where=where, language=language,
                                                                 confirm=CONFIRM[language]))
    out = run("--agent", str(path), "--run-id", "t")
    assert out.returncode == 0, out.stdout + out.stderr
    snap = read_audit(path.parent / "audit", "t")
    assert (snap["status"], snap["reason"]) == ("done", "final_answer")
    said, traced = results(snap)
    assert said["incident_note"] == {"text": "INC-4 is open; on call: u-3"}
    assert [b["text"] for b in traced["incident_note"]["blocks"]] == ["INC-4 is open; on call: u-3"]
    log = said["incident_log"]["text"]                       # two blocks, in order, both read
    assert log.index("09:00 paged u-3") < log.index("09:05 acknowledged")
    assert [b["type"] for b in traced["incident_log"]["blocks"]] == ["text", "text"]
    chart = said["incident_chart"]["text"]                   # the image described in one line, its data never kept
    assert "error rate of INC-4" in chart and "image/png" in chart.splitlines()[-1]
    image = traced["incident_chart"]["blocks"][1]
    assert image["type"] == "image" and image["mimeType"] == "image/png" and image["bytes"] > 0
    assert "data" not in image and "iVBOR" not in json.dumps(snap)
    assert traced["search_location"]["status"] == "error" and "Atlantis" in said["search_location"]["error"]
    assert said["get_weather"] == {"condition": "rain"}      # structured, cut to its fields as before
    assert "blocks" not in traced["get_weather"]


def test_other_kinds_are_one_line_each_and_a_long_text_is_cut_by_length_and_said():
    from handloop import config, texts, toolset
    from handloop.mcp import results
    sent = {"content": [{"type": "audio", "data": "AAAA" * 10, "mimeType": "audio/wav"},
                        {"type": "resource", "resource": {"uri": "file:///runbook.md", "mimeType": "text/markdown",
                                                          "text": "# runbook"}},
                        {"type": "resource_link", "uri": "https://desk.example/INC-4", "name": "INC-4"},
                        {"type": "hologram"}, "no block at all",
                        *[{"type": "text", "text": "x" * 1000}] * (config.MCP_BLOCKS + 3)]}
    for language in ("en", "zh"):
        cut = toolset.text_cut("desk", results.text_result(sent, texts.of(language)), texts.of(language))
        lines = cut["text"].split("\n\n")
        assert "audio/wav" in lines[0] and "file:///runbook.md" in lines[1] and "https://desk.example/INC-4" in lines[2]
        assert "hologram" in lines[3] and "# runbook" not in cut["text"] and "AAAA" not in cut["text"]
        assert len(cut["text"]) == config.MCP_TEXT_CHARS and len(cut.blocks) == config.MCP_BLOCKS
        assert {"path": "text", "chars": config.MCP_TEXT_CHARS} in cut.notice["cut"]
        assert {"path": "content[]", "items": config.MCP_BLOCKS, "of": len(sent["content"])} in cut.notice["cut"]
        assert cut.blocks[0] == {"type": "audio", "mimeType": "audio/wav", "bytes": 30}

"""Declarations that mean what the docs say (issue 47, finding 4): a `Source` reading a declared MCP server's result
at a path that names no declared field (a typo, or a text tool's result, which is no records) is a DeclarationError
when the agent is made, naming the tool, the path and the fields declared, and an agent file declaring one is
refused by the command line (exit 2) before any model request, instead of a run whose every write is blocked."""
import sys

import pytest

from handloop import Agent, DeclarationError, MCPServer, Source, Tool

SLOT = {"type": "object", "required": ["slot_id"], "properties": {"slot_id": {"type": "string"}}}
FIELDS = ("slots[].slot_id", "slots[].start")


def desk(source, fields=FIELDS, remote_source=None):
    book = Tool("book", "Book a slot (a write).", SLOT, lambda slot_id: {"booked": slot_id}, kind="write",
                effect=(("slot_id", "id"),), sources=(source,))
    tools = {"list_slots": fields, "hold_slot": {"fields": ("held",), "arguments": ("slot_id",),
                                                 "sources": (remote_source,) if remote_source else ()}}
    return Agent("desk", "You book slots.", [book], language="en", planning=False,
                 mcp=[MCPServer("clinic", command=[sys.executable, "-c", "pass"], tools=tools)])


@pytest.mark.parametrize("source, path", [
    (Source.of("list_slots", "slot_id", path="slot[]"), "slot[].slot_id"),           # a typo in the path
    (Source.of("list_slots", "slot_id"), "slot_id"),                                  # the path forgotten
    (Source(("slot_id",), "list_slots", ("slotid",), "slots[]"), "slots[].slotid"),  # a typo in the field
])
def test_a_source_into_an_mcp_result_naming_no_declared_field_is_a_declaration_error(source, path):
    with pytest.raises(DeclarationError) as caught:
        desk(source)
    said = str(caught.value)
    assert "'book'" in said and "'list_slots'" in said and repr(path) in said
    assert "slots[].slot_id" in said and "slots[].start" in said


def test_an_mcp_tools_own_source_and_a_text_tool_are_checked_the_same_way():
    good = Source.of("list_slots", "slot_id", path="slots[]")
    with pytest.raises(DeclarationError, match=r"tool 'hold_slot'.*'slots\.slot_id'"):
        desk(good, remote_source=Source.of("list_slots", "slot_id", path="slots"))
    with pytest.raises(DeclarationError, match="a text tool sources nothing"):
        desk(good, fields=())
    with pytest.raises(DeclarationError, match="'text', where a text result"):    # not even a field named so
        desk(Source(("slot_id",), "list_slots", ("text",)), fields=("text", *FIELDS))
    assert desk(good, remote_source=good).name == "desk"


def test_an_agent_file_with_such_a_source_is_refused_before_any_model_request(tmp_path):
    from conftest import run_agent
    path = tmp_path / "desk.py"
    path.write_text(
        "import sys\nfrom handloop import Agent, MCPServer, Source, Tool\n"
        "SLOT = {'type': 'object', 'properties': {'slot_id': {'type': 'string'}}}\n"
        "BOOK = Tool('book', 'Book a slot.', SLOT, lambda slot_id: {}, kind='write', effect={'slot_id': 'id'},\n"
        "            sources=[Source.of('list_slots', 'slot_id', path='slot[]')])\n"
        "AGENT = Agent('desk', 'You book slots.', [BOOK], language='en', planning=False, mcp=[MCPServer('clinic',\n"
        "              command=[sys.executable, '-c', 'pass'], tools={'list_slots': ('slots[].slot_id',)})])\n",
        encoding="utf-8")
    out = run_agent("--agent", str(path), "--run-id", "d", cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "'slot[].slot_id'" in out.stderr and "slots[].slot_id" in out.stderr
    assert not (tmp_path / "audit" / "run-d.json").exists()


def test_the_typed_declaration_means_what_the_older_spellings_mean():
    from handloop import MCPTool
    source = Source.of("list_slots", "slot_id", path="slots[]")
    typed = MCPServer("clinic", command=["x"], tools={
        "list_slots": MCPTool(fields=FIELDS), "note": MCPTool(),
        "book": MCPTool(fields=("booked",), kind="write", effect={"slot_id": "id"}, key="idem", sources=(source,))})
    older = MCPServer("clinic", command=["x"], tools={
        "list_slots": FIELDS, "note": (),
        "book": {"fields": ("booked",), "kind": "write", "effect": {"slot_id": "id"}, "key": "idem", "sources": (source,)}})
    assert typed == older
    with pytest.raises(TypeError, match="feilds"):
        MCPTool(feilds=("id",))                                   # a misspelt option is refused where it is written
    with pytest.raises(DeclarationError, match="tool 'book'.*effect"):
        MCPServer("clinic", command=["x"], tools={"book": MCPTool(fields=("booked",), kind="write")})

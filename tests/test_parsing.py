"""The argument ladder and schema validation: nothing invalid reaches a tool."""
import json

import pytest

from conftest import BOOK
from handloop import toolset
from handloop import tools
from handloop.toolset import ToolSet, parse_arguments


@pytest.mark.parametrize("raw", [
    '```json\n{"city": "西安", "date": "2026-10-01"}\n```',
    '```\n{"city": "西安", "date": "2026-10-01"}\n```',
    "{'city': '西安', 'date': '2026-10-01',}",
    '{city: "西安", date: "2026-10-01", /* comment */}',
    '  {"city": "西安", "date": "2026-10-01"}  ',
])
def test_ladder_parses_fenced_and_json5(raw):
    assert parse_arguments(raw) == ({"city": "西安", "date": "2026-10-01"}, None)


@pytest.mark.parametrize("raw", ["{city: 西安", "not json at all", "```json\n{\n```", "{'a': }"])
def test_garbage_gives_a_problem_never_an_empty_dict(raw):
    value, problem = parse_arguments(raw)
    assert value is None and "不是合法 JSON" in problem


def test_empty_arguments_mean_no_arguments():
    assert parse_arguments("") == ({}, None)


def _prepare(name, args):
    ts = ToolSet("r", tools.xian_agent(None))
    return ts.prepare([{"id": "c1", "function": {"name": name, "arguments": args}}])[0]


@pytest.mark.parametrize("nights, words", [
    ("true", "应为 integer"), ('"2"', "应为 integer"), ("0", "之间"), ("99", "之间"), ("1.5", "应为 integer")])
def test_wrong_nights_are_refused(nights, words):
    call = _prepare("book_hotel", '{"hotel_id": "XA-001", "room_type": "Suite", "check_in": "2026-10-01", '
                                  f'"nights": {nights}}}')
    assert call.args is None and words in call.problem


@pytest.mark.parametrize("args, words", [
    ('{"hotel_id": "XA-001", "room_type": "King", "check_in": "2026-10-01", "nights": 2}', "只能是"),
    ('{"hotel_id": "XA-001", "room_type": "Suite", "check_in": "10/01", "nights": 2}', "格式不对"),
    ('{"hotel_id": "XA-001", "room_type": "Suite", "check_in": "2026-10-01"}', "缺少必填字段 nights"),
    ('{"hotel_id": "XA-001", "room_type": "Suite", "check_in": "2026-10-01", "nights": 2, "vip": true}', "不允许字段 vip"),
    ('["XA-001", "Suite"]', "应为 object"),
])
def test_schema_problems_are_named(args, words):
    call = _prepare("book_hotel", args)
    assert call.args is None and words in call.problem


def test_unknown_tool_is_named():
    call = _prepare("delete_everything", "{}")
    assert call.args is None and "没有名为 'delete_everything' 的工具" in call.problem


def test_valid_call_keeps_raw_text_and_parsed_args():
    raw = "```json\n" + '{"hotel_id": "XA-001", "room_type": "Suite", "check_in": "2026-10-01", "nights": 2}' + "\n```"
    call = _prepare("book_hotel", raw)
    assert call.args == BOOK and call.arguments == raw and call.problem is None


def test_signature_is_canonical():
    a = _prepare("get_weather", '{"city": "西安", "date": "2026-10-01"}')
    b = _prepare("get_weather", "{'date': '2026-10-01', 'city': '西安'}")
    assert a.signature == b.signature


def test_declared_schemas_are_strict():
    for tool in toolset.ToolSet("r", tools.xian_agent(None)).tools.values():
        assert tool.parameters["additionalProperties"] is False and tool.parameters["type"] == "object"


def _keywords(schema):
    found = set(schema)
    for sub in [*schema.get("properties", {}).values(), *([schema["items"]] if "items" in schema else [])]:
        found |= _keywords(sub)
    return found


def test_the_model_is_shown_the_shape_without_the_guard_rails():
    ts = toolset.ToolSet("r", tools.xian_agent(None))
    for spec in ts.schemas:
        shown, declared = spec["function"]["parameters"], ts.tool(spec["function"]["name"]).parameters
        assert not _keywords(shown) & {"pattern", "minLength", "maxLength", "minItems", "maxItems", "minimum", "maximum",
                                       "additionalProperties"}
        assert shown["required"] == declared["required"] and set(shown["properties"]) == set(declared["properties"])
    book = next(s["function"]["parameters"] for s in ts.schemas if s["function"]["name"] == "book_hotel")
    assert book["properties"]["room_type"]["enum"] == ["Standard", "Deluxe", "Suite"]
    assert "minimum" not in book["properties"]["nights"] and ts.tool("book_hotel").parameters["properties"][
        "nights"]["maximum"] == 14                                          # hidden, still declared (and enforced)
    assert book["properties"]["check_in"]["description"] == "YYYY-MM-DD"


@pytest.mark.parametrize("name, args, field", [
    ("get_weather", {"city": "西安", "date": "10/01/2026"}, "arguments.date"),                      # pattern
    ("get_weather", {"city": "", "date": "2026-10-01"}, "arguments.city"),                          # minLength
    ("search_hotels", {"city": "西" * 65, "check_in": "2026-10-01"}, "arguments.city"),             # maxLength
    ("book_hotel", dict(BOOK, breakfast=True), "breakfast"),                                         # additionalProperties
    ("set_plan", {"steps": []}, "arguments.steps"),                                                  # minItems
    ("set_plan", {"steps": [{"title": "查天气", "arguments": {}}]}, "arguments"),                    # nested additionalProperties
    ("mark_step", {"index": 1, "status": "done", "note": "x" * 501}, "arguments.note"),             # maxLength
    ("book_hotel", dict(BOOK, nights=15), "arguments.nights"),                                      # maximum
    ("mark_step", {"index": 0, "status": "done"}, "arguments.index"),                               # minimum
])
def test_a_rule_the_model_is_not_shown_is_still_enforced(name, args, field):
    call = _prepare(name, json.dumps(args, ensure_ascii=False))
    assert call.args is None and field in call.problem


def test_shown_hides_only_the_guard_rails_at_every_level():
    declared = {"type": "object", "additionalProperties": False, "required": ["d"], "properties": {
        "d": {"type": "string", "pattern": "^x$", "maxLength": 9, "format": "date", "default": "x"},
        "l": {"type": "array", "minItems": 1, "items": {"type": "object", "additionalProperties": False,
                                                         "properties": {"n": {"type": "integer", "minimum": 1}}}}}}
    assert toolset.shown(declared) == {"type": "object", "required": ["d"], "properties": {
        "d": {"type": "string", "format": "date", "default": "x"},
        "l": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}}}}
    assert "pattern" in declared["properties"]["d"]            # the declaration itself is untouched


def test_a_tool_may_show_less_of_its_schema_than_it_validates():
    """set_plan shows a step as an object (its description names the fields); a call is still validated against
    every rule of the declaration, and a `shown` with other properties is a declaration error."""
    from handloop.calls import Tool
    from handloop.errors import DeclarationError
    ts = toolset.ToolSet("r", tools.xian_agent(None))
    shown = next(s["function"]["parameters"] for s in ts.schemas if s["function"]["name"] == "set_plan")
    assert shown["properties"]["steps"]["items"] == {"type": "object"}
    assert "title" in ts.tool("set_plan").description and "after" in ts.tool("set_plan").description
    call = _prepare("set_plan", json.dumps({"steps": [{"title": "查天气", "tools": "get_weather"}]}))
    assert call.args is None and "tools" in call.problem
    with pytest.raises(DeclarationError, match="shown"):
        Tool("t", "d", {"type": "object", "properties": {"a": {"type": "string"}}}, None,
             shown={"type": "object", "properties": {"b": {"type": "string"}}})

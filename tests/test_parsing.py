"""The argument ladder and schema validation: nothing invalid reaches a tool."""
import pytest

from conftest import BOOK
import toolset
from toolset import ToolSet, parse_arguments


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
    ts = ToolSet("r", store=None)
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


def test_schemas_are_strict():
    for schema in toolset.ToolSet("r", None).schemas:
        params = schema["function"]["parameters"]
        assert params["additionalProperties"] is False and params["type"] == "object"

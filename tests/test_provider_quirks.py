"""What OpenAI-compatible servers really send, through the real client and the loopback endpoint:
each ends in a correct, clear state, never a traceback."""
import json
import sys

import pytest

from handloop import texts
from handloop import loop
from handloop import model
from conftest import BOOK, PLAN, run_agent, text, tool_calls
from test_model import http

REAL_REPLIES = [   # shared/notes/real-model-replies.md, as a 1.5 B model wrote them
    ('{"name": "set_plan", "arguments": {"steps": [{"title": "预订酒店", "tool": "book_hotel", "arguments": '
     '{"hotel_id": <hotel-id>}}]}}', ["set_plan"]),
    ('```json\n{\n  "name": "set_plan",\n  "arguments": {"steps": []}\n}\n```', ["set_plan"]),
    ('{"name": "mark_step", "arguments": {"index": 1, "status": "failed"}}\n{"name": "set_plan", "arguments": {}}',
     ["mark_step", "set_plan"]),
    ('{"name": "set_plan", "arguments": {"steps": []}}\n\n# Plan\n1. 获取城市坐标', ["set_plan"]),
    ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "西安"}}\n</tool_call>', ["get_weather"]),
    ('<function=search_hotels>{"city": "西安"}</function>', ["search_hotels"]),
    ("好的，请先调用 set_plan。", []),
    ('<tool_response>\n{"error": "arguments.steps[1] 不允许字段 arguments"}\n</tool_response>', []),
    ('建议预订古城墙酒店，参数如下：{"hotel": "XA-001"}', []),
]
NAMES = {"set_plan", "mark_step", "get_weather", "search_hotels", "book_hotel"}


@pytest.mark.parametrize("content, names", REAL_REPLIES)
def test_tool_calls_written_into_the_text_are_recognised(content, names):
    assert model.written_calls(content, NAMES) == names


def test_content_parts_are_joined(fake_model, new_run):
    r, ts, _ = new_run()
    parts = [{"type": "text", "text": "你想住哪天"}, {"type": "text", "text": "？"}]
    ask, _ = fake_model([{"content": parts}])
    loop.run(r, ask, ts)
    assert r.messages[2]["content"] == "你想住哪天？" and r.status == "suspended"


def test_a_cut_off_json_body_is_an_error_with_a_message_and_resumable(fake_model, new_run):
    r, ts, _ = new_run()
    cut = {"_http": {"raw": b'{"id": "x", "choices": [{"index": 0, "message": {"role": "assis'}}
    ask, endpoint = fake_model([cut, cut, tool_calls(("set_plan", {"steps": PLAN})), text("好")], retries=1)
    loop.run(r, ask, ts)
    assert (r.status, r.reason) == ("error", "bad_response") and "JSON" in r.detail and len(endpoint.requests) == 2
    loop.run(r, ask, ts)
    assert r.memory.plan and r.status == "suspended"


def test_a_reply_cut_by_length_twice_is_an_error_and_a_resume_sends_something_new(fake_model, new_run):
    r, ts, _ = new_run()
    cut = dict(text("建议预订古城墙"), finish_reason="length")
    ask, endpoint = fake_model([cut, cut, text("你想住几晚？")])
    loop.run(r, ask, ts)
    assert (r.status, r.reason) == ("error", "length") and r.messages[-1]["name"] == "loop"
    assert all(m["role"] != "assistant" for m in r.messages)        # a cut-off reply is never recorded as an answer
    loop.run(r, ask, ts)
    assert endpoint.requests[2]["messages"] != endpoint.requests[0]["messages"] and r.status == "suspended"


def test_an_error_inside_a_200_is_reported_with_the_providers_words(fake_model, new_run):
    r, ts, _ = new_run()
    body = {"error": {"message": "No endpoints found matching your data policy", "code": 404}}
    ask, _ = fake_model([{"_http": {"status": 200, "body": body}}])
    loop.run(r, ask, ts)
    assert (r.status, r.reason) == ("error", "bad_response") and "No endpoints found" in r.detail


def test_an_error_inside_a_200_with_a_transient_code_is_retried(fake_model):
    ask, endpoint = fake_model([{"_http": {"status": 200, "body": {"error": {"message": "upstream", "code": 502}}}},
                                text("好")], retries=2)
    assert ask([{"role": "user", "content": "u"}], []).text == "好" and len(endpoint.requests) == 2


@pytest.mark.parametrize("status, body", [
    (429, {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                     "code": "insufficient_quota"}}),
    (402, {"error": {"message": "Insufficient Balance"}}),
])
def test_quota_and_billing_errors_are_not_retried(fake_model, status, body):
    ask, endpoint = fake_model([http(status, body=body), text("never")], retries=3)
    with pytest.raises(model.ModelError) as info:
        ask([{"role": "user", "content": "u"}], [])
    assert info.value.kind == "quota" and len(endpoint.requests) == 1 and "重试无用" in str(info.value)


def test_tool_choice_goes_with_every_request_that_carries_tools(fake_model, new_run):
    r, ts, _ = new_run()
    ask, endpoint = fake_model([tool_calls(("set_plan", {"steps": PLAN})), text("好的。")])
    loop.run(r, ask, ts)
    for request in endpoint.requests:      # forced (the next step's function) only right after the loop's nudge to act
        nudged = request["messages"][-1].get("name") == "loop"
        assert request.get("tool_choice") == ({"type": "function", "function": {"name": "get_weather"}} if nudged
                                              else "auto")
    assert "auto" in {str(q.get("tool_choice")) for q in endpoint.requests} and \
        any(q["messages"][-1].get("name") == "loop" for q in endpoint.requests)
    ask([{"role": "user", "content": "u"}], [])
    assert "tool_choice" not in endpoint.requests[-1] and "tools" not in endpoint.requests[-1]


def test_full_width_digits_are_ascii_after_validation(fake_model, new_run):
    r, ts, store = new_run()
    ask, _ = fake_model([tool_calls(("set_plan", {"steps": PLAN})),
                         tool_calls(("get_weather", {"city": "西安", "date": "２０２６-１０-０１"}),
                                    ("search_hotels", {"city": "西安", "check_in": "２０２６－１０－０１", "nights": 2})),
                         tool_calls(("book_hotel", {"hotel_id": "ＸＡ-００１", "room_type": "Ｓｕｉｔｅ",
                                                    "check_in": "２０２６-１０-０１", "nights": 2})),
                         text("请确认。")])
    loop.run(r, ask, ts)
    assert r.memory.fact("weather")["2026-10-01"]["condition"] == "rain"
    held = r.memory.proposal                 # the held call: every argument as validated
    assert (held["tool"], held["args"]) == ("book_hotel", BOOK) and (r.status, r.reason) == ("suspended",
                                                                                              "awaiting_confirmation")


def test_the_final_answer_instruction_goes_into_that_one_system_message(fake_model, new_run, tmp_path):
    r, ts, _ = new_run(max_turns=2)
    ask, endpoint = fake_model([tool_calls(("set_plan", {"steps": PLAN})),
                                tool_calls(("get_weather", {"city": "西安", "date": "2026-10-01"})), text("到此为止")])
    loop.run(r, ask, ts)
    last = endpoint.requests[-1]["messages"]
    assert (r.status, r.reason) == ("stopped", "max_turns")
    assert [m["role"] for m in last].count("system") == 1 and texts.ZH_TEXTS("final_prompt") in last[0]["content"]
    assert all(texts.ZH_TEXTS("final_prompt") not in (m.get("content") or "") for m in r.messages)   # never in the record


def test_no_openai_package_is_a_clear_error_before_any_run_is_written(tmp_path):
    out = run_agent("--run-id", "x", cwd=tmp_path, setup=lambda: sys.modules.__setitem__("openai", None))
    assert out.returncode == 2 and "缺少依赖 openai" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "audit" / "run-x.json").exists()


def test_a_blocked_plan_sent_again_unchanged_counts_toward_the_spin_stop(fake_model, new_run):
    r, ts, _ = new_run()
    bad = tool_calls(("set_plan", {"steps": [{"title": "查天气", "tool": "get_weather", "arguments": {"city": "西安"}}]}))
    ask, _ = fake_model([bad] * 10)
    loop.run(r, ask, ts)
    results = [json.loads(m["content"]) for m in r.messages if m["role"] == "tool"]
    assert (r.status, r.reason) == ("stopped", "spin") and results[0]["blocked_by"] == "arguments"
    assert "arguments.steps[0] 不允许字段 arguments（只能有 title, tool, after）" in results[0]["error"]


def test_plan_errors_name_the_field_to_fix():
    from handloop import plan
    from handloop import tools
    with pytest.raises(tools.ToolError) as info:
        plan.set_plan([{"title": "查天气", "tool": "get_weathr"}], {"get_weather"})
    assert "arguments.steps[0].tool" in str(info.value) and "get_weather" in str(info.value)
    assert "例：" in plan.tools(tools.PLAN_EXAMPLE)[0].description and tools.PLAN_EXAMPLE in plan.tools(tools.PLAN_EXAMPLE)[0].description


@pytest.mark.parametrize("say", [texts.of("zh"), texts.of("en")])
def test_an_after_on_the_step_itself_or_a_later_one_is_dropped_with_a_note(say):
    from handloop import plan
    steps = [{"title": "a", "tool": "get_weather", "after": [1]}, {"title": "b", "after": [1, 2, 3]},
             {"title": "c", "after": [2]}]
    result = plan.set_plan(steps, {"get_weather"}, say)
    assert "error" not in result and result["note"].count("[") == 2           # two steps' entries dropped, said
    assert [s["after"] for s in plan.steps_of(steps)] == [[], [1], [2]]     # what memory keeps
    assert "note" not in plan.set_plan([{"title": "a"}, {"title": "b", "after": [1]}], {"get_weather"}, say)


def test_tool_calls_that_are_not_a_list_are_ignored_not_raised(fake_model):
    ask, _ = fake_model([{"content": "好", "tool_calls": "oops"}])
    reply = ask([{"role": "user", "content": "u"}], [])
    assert reply.tool_calls == [] and reply.text == "好"

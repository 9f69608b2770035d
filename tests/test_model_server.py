"""bench/model_server.py's prompt and parsing (pure functions; the model itself needs torch and is not loaded)."""
import json

from bench.model_server import _prefill, parse, render

TOOLS = [{"type": "function", "function": {"name": "get_iban", "description": "The user's IBAN",
                                           "parameters": {"type": "object", "properties": {}}}},
         {"type": "function", "function": {"name": "send_money", "description": "Send money",
                                           "parameters": {"type": "object", "properties": {
                                               "recipient": {"type": "string"}, "amount": {"type": "number"}}}}}]


def test_a_tag_becomes_a_call_and_the_rest_stays_prose():
    content, calls = parse('Sure.\n<tool_call>{"name": "send_money", "arguments": {"recipient": "X1", '
                           '"amount": 5}}</tool_call>', TOOLS)
    assert content == "Sure."
    assert [c["function"]["name"] for c in calls] == ["send_money"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"recipient": "X1", "amount": 5}


def test_a_tag_that_is_not_json_and_a_reply_without_tools_stay_prose():
    assert parse('<tool_call>{"name": get_iban}</tool_call>', TOOLS) == ('<tool_call>{"name": get_iban}</tool_call>', [])
    text = '<tool_call>{"name": "get_iban", "arguments": {}}</tool_call>'
    assert parse(text, []) == (text, [])


def test_a_forced_call_is_prefilled_and_parsed_whole():
    prefill = _prefill({"type": "function", "function": {"name": "get_iban"}})
    content, calls = parse(prefill + "{}}</tool_call>", TOOLS)
    assert content is None and calls[0]["function"]["name"] == "get_iban"
    assert _prefill("required").startswith("<tool_call>") and _prefill("auto") == ""


def test_the_prompt_carries_tools_calls_and_results():
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "My IBAN?"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "get_iban", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "DE89 3704"}]
    prompt = render(messages, TOOLS)
    assert prompt.startswith("<|im_start|>system\nBe brief.") and '"name": "send_money"' in prompt
    assert '<tool_call>{"name": "get_iban", "arguments": {}}</tool_call>' in prompt
    assert "<tool_response>\nDE89 3704\n</tool_response>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    assert '"send_money"' not in render(messages, [])

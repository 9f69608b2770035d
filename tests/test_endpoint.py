"""The fake endpoint speaks the API's message rules, through the real openai client."""
import openai
import pytest

from conftest import text, tool_calls

CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
    {"id": "b", "type": "function", "function": {"name": "search_hotels", "arguments": "{}"}}]}


def _send(fake_model, messages):
    ask, endpoint = fake_model([text("好的")])
    return ask([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, *messages], [])


def test_answered_in_order_is_accepted(fake_model):
    reply = _send(fake_model, [CALL, {"role": "tool", "tool_call_id": "a", "content": "{}"},
                               {"role": "tool", "tool_call_id": "b", "content": "{}"}])
    assert reply.message["content"] == "好的"


@pytest.mark.parametrize("messages, words", [
    ([CALL, {"role": "tool", "tool_call_id": "a", "content": "{}"}], "did not have response messages: b"),
    ([CALL, {"role": "tool", "tool_call_id": "b", "content": "{}"},
      {"role": "tool", "tool_call_id": "a", "content": "{}"}], "comes first"),
    ([{"role": "tool", "tool_call_id": "a", "content": "{}"}], "must be a response to a preceeding message"),
    ([CALL, {"role": "user", "content": "hi"}], "must be followed by tool messages"),
])
def test_broken_pairing_is_a_400_with_the_apis_words(fake_model, messages, words):
    with pytest.raises(Exception) as info:
        _send(fake_model, messages)
    assert info.value.kind == "bad_request" and words in str(info.value)


def test_scripted_tool_calls_come_back_normalised(fake_model):
    ask, _ = fake_model([tool_calls(("get_weather", {"city": "西安", "date": "2026-10-01"}))])
    reply = ask([{"role": "user", "content": "u"}], [])
    assert reply.tool_calls[0]["function"]["arguments"] == '{"city": "西安", "date": "2026-10-01"}'
    assert reply.tokens > 0 and not reply.estimated


def test_openai_client_sees_a_real_http_server(fake_model):
    _, endpoint = fake_model([text("x")])
    client = openai.OpenAI(api_key="k", base_url=endpoint.url, max_retries=0)
    out = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert out.choices[0].message.content == "x"
    client.close()

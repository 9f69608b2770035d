"""The model adapter: retries, distinct errors, usage, normalisation — through the real client."""
import pytest

from conftest import text, tool_calls
from handloop import model


def http(status, headers=None, body=None, delay=0):
    return {"_http": {"status": status, "headers": headers or {}, "delay": delay,
                      "body": body if body is not None else {"error": {"message": f"status {status}"}}}}


def test_429_with_retry_after_then_5xx_then_success(fake_model):
    _, endpoint = fake_model([http(429, {"Retry-After": "7"}), http(503), text("好")])
    waits = []
    ask = model.connect(endpoint.url, "k", "m", retries=3, sleep=waits.append, loopback=True)
    reply = ask([{"role": "user", "content": "u"}], [])
    ask.close()
    assert reply.message["content"] == "好" and waits == [7.0, 2.0]   # Retry-After honoured, then backoff


@pytest.mark.parametrize("status, kind", [(401, "auth"), (403, "auth"), (404, "not_found"), (400, "bad_request"),
                                          (422, "bad_request")])
def test_non_transient_errors_are_distinct_and_not_retried(fake_model, status, kind):
    ask, endpoint = fake_model([http(status), text("never")], retries=3)
    with pytest.raises(model.ModelError) as info:
        ask([{"role": "user", "content": "u"}], [])
    assert info.value.kind == kind and len(endpoint.requests) == 1


def test_5xx_retried_then_reported(fake_model):
    ask, endpoint = fake_model([http(500), http(502), http(500)], retries=2)
    with pytest.raises(model.ModelError) as info:
        ask([{"role": "user", "content": "u"}], [])
    assert info.value.kind == "server" and "已重试 2 次" in str(info.value) and len(endpoint.requests) == 3


def test_unreachable_endpoint():
    ask = model.connect("http://127.0.0.1:9/v1", "k", "m", retries=1, sleep=lambda s: None, loopback=True)
    with pytest.raises(model.ModelError) as info:
        ask([{"role": "user", "content": "u"}], [])
    assert info.value.kind == "unreachable" and "127.0.0.1:9" in str(info.value)


def test_timeout_is_retried_then_reported(fake_model):
    ask, endpoint = fake_model([http(200, delay=2), http(200, delay=2)])
    slow = model.connect(endpoint.url, "k", "m", timeout=0.3, retries=1, sleep=lambda s: None, loopback=True)
    with pytest.raises(model.ModelError) as info:
        slow([{"role": "user", "content": "u"}], [])
    slow.close()
    assert info.value.kind == "timeout"


def test_missing_usage_is_estimated(fake_model):
    ask, _ = fake_model([dict(text("好的"), usage=False)])
    reply = ask([{"role": "user", "content": "一二三四五六"}], [])
    assert reply.estimated and reply.tokens > 0


def test_missing_and_duplicate_ids_are_replaced_and_noted(fake_model):
    reply = tool_calls(("get_weather", {"city": "西安", "date": "2026-10-01"}, "same"),
                       ("search_hotels", {"city": "西安", "check_in": "2026-10-01"}, "same"),
                       ("get_weather", {"city": "北京", "date": "2026-10-01"}, ""))
    ask, _ = fake_model([reply])
    out = ask([{"role": "user", "content": "u"}], [])
    ids = [c["id"] for c in out.tool_calls]
    assert ids[0] == "same" and len(set(ids)) == 3 and all(ids) and len(out.notes) == 2


def test_final_call_asks_for_no_tools(fake_model):
    ask, endpoint = fake_model([text("总结")])
    ask([{"role": "user", "content": "u"}], [{"type": "function", "function": {"name": "x", "parameters": {}}}],
        final=True)
    assert endpoint.requests[0]["tool_choice"] == "none"


def test_a_failure_of_the_sdks_own_parsing_is_a_model_error():
    """pydantic raises RuntimeError subclasses about half-built models; never a traceback."""
    class Completions:
        def create(self, **request):
            raise RuntimeError("Pydantic models should inherit from BaseModel")

    class Client:
        chat = type("Chat", (), {"completions": Completions()})()
    with pytest.raises(model.ModelError) as caught:
        model._create(Client(), {"model": "m", "messages": []})
    assert caught.value.kind == "unparseable"


def test_warming_builds_every_response_type_a_reply_touches():
    """In a fresh process: after model._warm, parsing replies of every shape the loop reads (text,
    content parts, tool calls, usage with details, a refusal; and the chunks of a streamed reply)
    completes no further pydantic model,
    so threads that parse their first replies together find them all built."""
    import subprocess
    import sys
    from conftest import ROOT
    code = """
import sys
import openai
from handloop import model
from openai._models import construct_type
from openai.types.chat import ChatCompletion
from pydantic._internal._mock_val_ser import MockCoreSchema

def deferred():
    seen, todo = set(), [openai.BaseModel]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    return {c for c in seen if isinstance(c.__dict__.get("__pydantic_core_schema__"), MockCoreSchema)}

model._warm(openai)
before = deferred()
call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
for message in ({"role": "assistant", "content": "好的"}, {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "assistant", "content": [{"type": "text", "text": "x"}], "refusal": "no"}):
    construct_type(type_=ChatCompletion, value={
        "id": "r", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": message, "logprobs": None}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5,
                  "prompt_tokens_details": {"cached_tokens": 1}, "completion_tokens_details": {"reasoning_tokens": 0}}})
from openai.types.chat import ChatCompletionChunk
for delta in ({"role": "assistant", "content": ""}, {"content": "好"},
              {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}]},
              {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}):
    construct_type(type_=ChatCompletionChunk, value={
        "id": "r", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": None, "delta": delta, "logprobs": None}]})
construct_type(type_=ChatCompletionChunk, value={"id": "r", "object": "chat.completion.chunk", "created": 1, "model": "m",
    "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})
print(sorted(c.__name__ for c in before - deferred()))
"""
    out = subprocess.run([sys.executable, "-c", code, ROOT], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]"], f"built only on a reply's first parse: {out.stdout}"

"""Model access: one chat function over the official `openai` client, for any
OpenAI-compatible endpoint (the built-in offline model included).

Invariants: every request has a timeout; timeouts, 429 and 5xx are retried with backoff
(honouring Retry-After, capped); every other failure, and retries running out, raise
ModelError with a kind and a message a person can act on. A reply always comes back
normalised: tool calls with unique ids and string arguments exactly as sent, and a token
count (the server's usage, or an estimate flagged as such). `openai` is imported only when a
client is made, so commands that never ask a model start fast.
"""
import dataclasses
import json
import secrets
import threading
import time

import config


class ModelError(Exception):
    """The model service failed; `kind` says how (auth, not_found, bad_request, rate_limited,
    server, timeout, unreachable, bad_response)."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


@dataclasses.dataclass
class Reply:
    message: dict                 # the assistant message to append, as the model sent it
    tool_calls: list
    tokens: int
    estimated: bool               # the server sent no usage; tokens is our estimate
    seconds: float
    notes: list                   # what normalisation had to fix (missing or duplicate ids...)


def estimate_tokens(chars):
    return max(1, chars // config.CHARS_PER_TOKEN)


def connect(base_url, api_key, model, timeout=config.MODEL_TIMEOUT, retries=config.MODEL_RETRIES,
            on_retry=None, sleep=time.sleep, loopback=False):
    """A chat function ask(messages, tools, final=False) -> Reply over the openai client."""
    import openai
    kwargs = {}
    if loopback:                  # never send a loopback request through an HTTP proxy
        try:
            kwargs["http_client"] = openai.DefaultHttpxClient(trust_env=False)
        except (AttributeError, TypeError):
            pass
    client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0, **kwargs)

    def ask(messages, tools, final=False):
        request = {"model": model, "messages": messages, "tools": tools}
        if final:
            request["tool_choice"] = "none"
        started = time.perf_counter()
        def send():
            return _within(timeout, lambda: client.chat.completions.create(**request))
        response = _with_retries(send, openai, retries, on_retry, sleep, base_url or "https://api.openai.com/v1",
                                 model)
        return _reply(response, messages, time.perf_counter() - started)

    ask.model = model
    ask.close = client.close
    return ask


def _with_retries(send, openai, retries, on_retry, sleep, where, model):
    attempt = 0
    while True:
        try:
            return send()
        except openai.APIStatusError as exc:
            error = _status_error(exc, model)
            wait = _retry_after(exc)
        except (openai.APITimeoutError, _Overdue):
            error, wait = ModelError("timeout", f"模型服务 {where} 超时未响应"), None
        except openai.APIConnectionError as exc:
            error, wait = ModelError("unreachable", f"无法连接模型服务 {where}：{exc.__cause__ or exc}"), None
        if error.kind not in ("timeout", "unreachable", "rate_limited", "server") or attempt == retries:
            if attempt:
                error.args = (f"{error}（已重试 {attempt} 次）",)
            raise error
        wait = min(config.RETRY_CAP, wait if wait is not None else config.RETRY_BASE * 2 ** attempt)
        attempt += 1
        if on_retry:
            on_retry(attempt, retries, wait, error)
        sleep(wait)


class _Overdue(Exception):
    """The whole request took longer than its timeout (e.g. a server dribbling bytes forever)."""


def _within(seconds, send):
    """send() with a deadline on the whole request, not only between bytes; an overdue
    request is abandoned in its daemon thread."""
    box = {}

    def work():
        try:
            box["value"] = send()
        except BaseException as exc:        # handed back to the caller below
            box["error"] = exc

    worker = threading.Thread(target=work, daemon=True, name="model-request")
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise _Overdue()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _status_error(exc, model):
    status, detail = exc.status_code, _detail(exc)
    if status in (401, 403):
        return ModelError("auth", f"API key 无效或没有权限（HTTP {status}）：{detail}")
    if status == 404:
        return ModelError("not_found", f"模型 {model} 不存在，或 OPENAI_BASE_URL 不是 OpenAI 兼容地址（HTTP 404）：{detail}")
    if status == 429:
        return ModelError("rate_limited", f"模型服务限流（HTTP 429）：{detail}")
    if status >= 500:
        return ModelError("server", f"模型服务出错（HTTP {status}）：{detail}")
    return ModelError("bad_request", f"模型服务拒绝了请求（HTTP {status}）：{detail}")


def _detail(exc):
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        body = body.get("error", body)
        if isinstance(body, dict):
            body = body.get("message", body)
    return str(body if body else exc)[:500]


def _retry_after(exc):
    try:
        return max(0.0, float(exc.response.headers.get("retry-after")))
    except (AttributeError, TypeError, ValueError):
        return None


def _reply(response, messages, seconds):
    choices = getattr(response, "choices", None)
    if not choices:
        raise ModelError("bad_response", "模型服务返回了没有 choices 的回复")
    raw = choices[0].message
    calls, notes, seen = [], [], set()
    for i, tc in enumerate(raw.tool_calls or []):
        function = getattr(tc, "function", None)
        call_id = getattr(tc, "id", None)
        if not call_id or call_id in seen:
            notes.append(f"tool call #{i + 1} had {'a duplicate' if call_id else 'no'} id; assigned one")
            call_id = f"call_{secrets.token_hex(6)}"
        seen.add(call_id)
        arguments = getattr(function, "arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        calls.append({"id": call_id, "type": "function",
                      "function": {"name": getattr(function, "name", "") or "", "arguments": arguments}})
    message = {"role": "assistant", "content": raw.content if raw.content else None}
    if calls:
        message["tool_calls"] = calls
    usage = getattr(response, "usage", None)
    tokens = getattr(usage, "total_tokens", None) if usage else None
    estimated = not isinstance(tokens, int)
    if estimated:
        sent = sum(len(str(m.get("content") or "")) + len(json.dumps(m.get("tool_calls") or "")) for m in messages)
        tokens = estimate_tokens(sent + len(json.dumps(message, ensure_ascii=False)))
    return Reply(message, calls, tokens, estimated, seconds, notes)

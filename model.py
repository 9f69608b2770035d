"""Model access: one chat function over the official `openai` client, for any
OpenAI-compatible endpoint (the built-in offline model included).

Invariants: every request has a timeout and says `tool_choice` whenever it carries tools;
timeouts, 429 (but not quota or billing), 5xx and unparseable bodies are retried with backoff
(honouring Retry-After, capped); every other failure, and retries running out, raise
ModelError with a kind and the provider's own message. A reply that cannot be an answer (cut
off by length, empty) is asked for once more, then raised as ModelError. A reply always comes
back normalised: text content (content parts joined), tool calls with unique ids and string
arguments exactly as sent, the names of tools the model wrote into its text instead of
calling them, and a token count (the server's usage, or an estimate flagged as such; tokens
of discarded attempts included). `openai` is imported only when a client is made, so
commands that never ask a model start fast. No response the SDK can hand back raises
anything but ModelError.
"""
import dataclasses
import json
import re
import secrets
import threading
import time

import config
from calls import chars


class ModelError(Exception):
    """The model service failed; `kind` says how (auth, quota, not_found, bad_request,
    rate_limited, server, timeout, unreachable, bad_response, length, empty_reply). `tokens`:
    what the failed attempts cost, when the server said."""

    def __init__(self, kind, message, tokens=0):
        super().__init__(message)
        self.kind, self.tokens = kind, tokens


TRANSIENT = ("timeout", "unreachable", "rate_limited", "server", "unparseable")


@dataclasses.dataclass
class Reply:
    message: dict                 # the assistant message to append, as the model sent it
    tool_calls: list
    tokens: int
    estimated: bool               # the server sent no usage; tokens is our estimate
    seconds: float
    notes: list                   # what normalisation had to fix (missing or duplicate ids...)
    written_calls: list = dataclasses.field(default_factory=list)   # tools named in text, not called
    cut: bool = False             # finish_reason "length": the reply was cut off

    @property
    def text(self):
        return (self.message.get("content") or "").strip()


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
    _warm(openai)

    def ask(messages, tools, final=False):
        request = {"model": model, "messages": messages}
        if tools:
            request.update(tools=tools, tool_choice="none" if final else "auto")
        names = {t.get("function", {}).get("name") for t in tools or ()}
        started, spent, earlier = time.perf_counter(), 0, []

        def send():
            response = _within(timeout, lambda: _create(client, request))
            return _reply(response, messages, time.perf_counter() - started, names)
        for _ in (1, 2):                    # a cut-off or empty reply is asked for once more
            reply = _with_retries(send, openai, retries, on_retry, sleep, base_url or "https://api.openai.com/v1", model)
            spent += reply.tokens
            problem = _unusable(reply)
            if problem is None:
                reply.tokens, reply.notes = spent, earlier + reply.notes
                return reply
            earlier += reply.notes + [f"{problem[0]}: asked again"]
        raise ModelError(problem[0], problem[1], tokens=spent)

    ask.model = model
    ask.close = client.close
    return ask


def _unusable(reply):
    """(kind, message) when a reply cannot be taken as it is: cut off, or empty; else None."""
    if reply.cut:
        return "length", "模型的回复因长度限制被截断（finish_reason=length），不能当作答复"
    if not reply.tool_calls and not reply.text:
        return "empty_reply", "模型返回了空回复（没有内容也没有工具调用）"
    return None


def _with_retries(send, openai, retries, on_retry, sleep, where, model):
    attempt = 0
    while True:
        try:
            return send()
        except ModelError as exc:
            error, wait = exc, None
        except openai.APIStatusError as exc:
            error = _status_error(exc, model)
            wait = _retry_after(exc)
        except (openai.APITimeoutError, _Overdue):
            error, wait = ModelError("timeout", f"模型服务 {where} 超时未响应"), None
        except openai.APIConnectionError as exc:
            error, wait = ModelError("unreachable", f"无法连接模型服务 {where}：{exc.__cause__ or exc}"), None
        except openai.OpenAIError as exc:
            error, wait = ModelError("bad_response", f"模型服务的回复无法使用：{exc}"), None
        if error.kind not in TRANSIENT or attempt == retries:
            if error.kind == "unparseable":
                error.kind = "bad_response"
            if attempt:
                error.args = (f"{error}（已重试 {attempt} 次）",)
            raise error
        wait = min(config.RETRY_CAP, wait if wait is not None else config.RETRY_BASE * 2 ** attempt)
        attempt += 1
        if on_retry:
            on_retry(attempt, retries, wait, error)
        sleep(wait)


_WARM = {"done": False, "lock": threading.Lock()}
# a response with every part the loop reads, for _warm
_SAMPLE = {"id": "warm", "object": "chat.completion", "created": 0, "model": "warm",
           "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None,
                        "message": {"role": "assistant", "content": [{"type": "text", "text": ""}], "refusal": None,
                                    "tool_calls": [{"id": "c", "type": "function",
                                                    "function": {"name": "f", "arguments": "{}"}}]}}],
           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2,
                     "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}}}


def _warm(openai):
    """Build the SDK's response types once per process, in one thread. pydantic completes a
    model's schema on first use, and threads that first use it together can see it half built
    (PydanticUserError "base-model-instantiated", pydantic issue 11849): several runs started at
    once in a fresh process would fail their first request."""
    if _WARM["done"]:
        return
    with _WARM["lock"]:
        if not _WARM["done"]:
            openai.types.chat.ChatCompletion.construct(**_SAMPLE)
            _WARM["done"] = True


def _create(client, request):
    """One request; a body the SDK cannot parse (cut-off JSON, an HTML error page) is a ModelError,
    and so is a failure of the SDK's own parsing (RuntimeError: pydantic's errors about its models)."""
    try:
        return client.chat.completions.create(**request)
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, RuntimeError) as exc:
        raise ModelError("unparseable", f"模型服务返回的内容不是完整的 JSON（{type(exc).__name__}: {str(exc)[:200]}）") \
            from None


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
    if status == 402 or _code(exc) in QUOTA_CODES:
        return ModelError("quota", f"模型服务额度不足或未付费（HTTP {status}），重试无用：{detail}")
    if status == 429:
        return ModelError("rate_limited", f"模型服务限流（HTTP 429）：{detail}")
    if status >= 500:
        return ModelError("server", f"模型服务出错（HTTP {status}）：{detail}")
    return ModelError("bad_request", f"模型服务拒绝了请求（HTTP {status}）：{detail}")


QUOTA_CODES = ("insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "quota_exceeded",
               "insufficient_balance", "payment_required")


def _code(exc):
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    values = (error.get("code"), error.get("type")) if isinstance(error, dict) else ()
    return next((v for v in values if v in QUOTA_CODES), None)


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


def _reply(response, messages, seconds, names=()):
    choices = getattr(response, "choices", None)
    if not choices:
        raise _body_error(response)
    choice = choices[0]
    raw = getattr(choice, "message", None)
    if raw is None:
        raise ModelError("bad_response", "模型服务的回复里没有 message")
    calls, notes, seen = [], [], set()
    raw_calls = getattr(raw, "tool_calls", None) or []
    if not isinstance(raw_calls, list):
        notes.append(f"tool_calls came as {type(raw_calls).__name__}, not a list; ignored")
        raw_calls = []
    for i, tc in enumerate(raw_calls):
        function = getattr(tc, "function", None)
        call_id = getattr(tc, "id", None)
        if not call_id or not isinstance(call_id, str) or call_id in seen:
            notes.append(f"tool call #{i + 1} had {'a duplicate' if call_id else 'no'} id; assigned one")
            call_id = f"call_{secrets.token_hex(6)}"
        seen.add(call_id)
        arguments = getattr(function, "arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        name = getattr(function, "name", "")
        calls.append({"id": call_id, "type": "function",
                      "function": {"name": name if isinstance(name, str) else "", "arguments": arguments}})
    content = _joined(getattr(raw, "content", None), notes)
    message = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = calls
    usage = getattr(response, "usage", None)
    tokens = getattr(usage, "total_tokens", None) if usage else None
    estimated = not isinstance(tokens, int)
    if estimated:
        tokens = estimate_tokens(chars(messages) + chars([message]))
    reply = Reply(message, calls, tokens, estimated, seconds, notes)
    reply.cut = getattr(choice, "finish_reason", None) == "length"
    reply.written_calls = [] if calls else written_calls(content or "", names)
    return reply


def _body_error(response):
    """A 200 without choices: the provider's own error when the body carries one (OpenRouter
    does this), retried when its code says it is transient."""
    error = getattr(response, "error", None) or (getattr(response, "model_extra", None) or {}).get("error")
    if isinstance(error, dict):
        code = error.get("code")
        kind = "server" if code in (429, 500, 502, 503, 504) or str(code) in ("429", "500", "502", "503", "504") \
            else "quota" if code in QUOTA_CODES or code == 402 else "bad_response"
        return ModelError(kind, f"模型服务返回了错误（HTTP 200，code {code}）：{str(error.get('message'))[:500]}")
    if error:
        return ModelError("bad_response", f"模型服务返回了错误：{str(error)[:500]}")
    return ModelError("bad_response", "模型服务返回了没有 choices 的回复")


def _joined(content, notes):
    """Text content; a list of content parts (some servers send them) joined into one string."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        notes.append("content came as a list of parts; joined")
        return "".join(p.get("text") or "" if isinstance(p, dict) else str(getattr(p, "text", "") or "")
                       for p in content)
    notes.append(f"content came as {type(content).__name__}; converted to text")
    return json.dumps(content, ensure_ascii=False) if isinstance(content, dict) else str(content)


WRITTEN = re.compile(r"<tool_call>|<function[=\s>]|\[TOOL_CALLS\]|<\|python_tag\|>|^\s*```|^\s*[\[{]", re.M)
NAMED = re.compile(r"""["']?(?:name|function)["']?\s*[:=]\s*["']([A-Za-z0-9_.-]+)["']|<function=([A-Za-z0-9_.-]+)>""")


def written_calls(text, names):
    """Tools the model named in a tool-call shape inside its text (`<tool_call>` tags, a bare or
    fenced JSON object with a tool's name...) instead of calling them: small open models do this."""
    if not text or not names or not WRITTEN.search(text):
        return []
    found = [a or b for a, b in NAMED.findall(text)]
    return list(dict.fromkeys(n for n in found if n in names))

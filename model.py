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

Streamed replies (the default) are assembled into exactly the body the same reply unstreamed
would have had, then normalised by the same code, so nothing downstream can tell them apart;
what was heard of an attempt that failed is never part of a Reply. The timeout bounds the wait
for the first byte and every silence between bytes; `max_seconds` caps a whole reply, streamed
or not. Listeners (`on_event`) are called in the caller's thread, never after ask returned.
"""
import dataclasses
import json
import queue
import re
import secrets
import threading
import time
import types

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
            on_retry=None, sleep=time.sleep, loopback=False, stream=True, max_seconds=config.MODEL_MAX_SECONDS):
    """A chat function ask(messages, tools, final=False, on_event=None) -> Reply over the openai client.

    `timeout`: seconds to the first byte and of silence between bytes; `max_seconds`: one whole
    reply. With `stream`, `on_event(kind, **data)` hears the reply while it arrives: "delta"
    (text=a piece of the text), "tool_call" (call={"id", "name", "arguments"} as sent, once that
    call is complete), "discard" (why=...: what was heard of this attempt is void; it is asked
    again or fails). `ask.streams` says whether it streams."""
    import openai
    kwargs = {}
    if loopback:                  # never send a loopback request through an HTTP proxy
        try:
            kwargs["http_client"] = openai.DefaultHttpxClient(trust_env=False)
        except (AttributeError, TypeError):
            pass
    client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0, **kwargs)
    _warm(openai)
    where = base_url or "https://api.openai.com/v1"

    def ask(messages, tools, final=False, on_event=None):
        request = {"model": model, "messages": messages}
        if tools:
            request.update(tools=tools, tool_choice="none" if final else "auto")
        names = {t.get("function", {}).get("name") for t in tools or ()}
        started, spent, earlier = time.perf_counter(), 0, []

        def send():
            if stream:
                response = _streamed(openai, client, request, (timeout, max_seconds, where), on_event)
            else:
                response = _within(max_seconds, where, lambda: _create(client, request))
            return _reply(response, messages, time.perf_counter() - started, names)
        for _ in (1, 2):                    # a cut-off or empty reply is asked for once more
            reply = _with_retries(send, openai, retries, on_retry, sleep, where, model)
            spent += reply.tokens
            problem = _unusable(reply)
            if problem is None:
                reply.tokens, reply.notes = spent, earlier + reply.notes
                return reply
            earlier += reply.notes + [f"{problem[0]}: asked again"]
            if stream and on_event:
                on_event("discard", why=problem[1])
        raise ModelError(problem[0], problem[1], tokens=spent)

    ask.model = model
    ask.streams = stream
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
        except openai.APITimeoutError:
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


_CHUNK = {"id": "warm", "object": "chat.completion.chunk", "created": 0, "model": "warm",
          "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None,
                       "delta": {"role": "assistant", "content": "", "refusal": None,
                                 "tool_calls": [{"index": 0, "id": "c", "type": "function",
                                                 "function": {"name": "f", "arguments": "{}"}}]}}],
          "usage": _SAMPLE["usage"]}


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
            openai.types.chat.ChatCompletionChunk.construct(**_CHUNK)
            _WARM["done"] = True


# what reading a body the SDK cannot parse raises (RuntimeError: pydantic's errors about its models)
UNPARSEABLE = (ValueError, TypeError, AttributeError, KeyError, IndexError, RuntimeError)


def _unparseable(exc, what="模型服务返回的内容不是完整的 JSON"):
    return ModelError("unparseable", f"{what}（{type(exc).__name__}: {str(exc)[:200]}）")


def _create(client, request):
    """One request; a body the SDK cannot parse (cut-off JSON, an HTML error page) is a ModelError,
    and so is a failure of the SDK's own parsing (RuntimeError: pydantic's errors about its models)."""
    try:
        return client.chat.completions.create(**request)
    except UNPARSEABLE as exc:
        raise _unparseable(exc) from None


def _overdue(where, seconds):
    """The whole reply took longer than `max_seconds` (e.g. a server dribbling bytes forever)."""
    return ModelError("timeout", f"模型服务 {where} 的回复超过总时限 {seconds:g} 秒")


def _within(seconds, where, send):
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
        raise _overdue(where, seconds)
    if "error" in box:
        raise box["error"]
    return box["value"]


def _streamed(openai, client, request, limits, on_event):
    """One streamed request, put together into the body the same reply unstreamed would have had.

    A daemon thread reads the chunks and hands them over; they are assembled here, in the
    caller's thread, so `on_event` runs there, the whole reply has its deadline and an interrupt
    (Ctrl-C) stops at once: the reader is told to close the stream at its next chunk and left."""
    timeout, max_seconds, where = limits
    handed, stop = queue.SimpleQueue(), threading.Event()

    def read():
        got = False
        try:
            stream = _create(client, dict(request, stream=True, stream_options={"include_usage": True}))
            try:
                kind = stream.response.headers.get("content-type", "")
                if "json" in kind and "event-stream" not in kind:    # the server ignored `stream`: one body
                    return handed.put(("body", stream.response.read()))
                for chunk in stream:
                    if stop.is_set():
                        return
                    got = True
                    handed.put(("chunk", chunk))
                handed.put(("end", None))
            finally:
                stream.close()
        except openai.APITimeoutError as exc:
            handed.put(("error", ModelError("timeout", f"模型服务 {where} 的流式回复停顿超过 {timeout:g} 秒")
                        if got else exc))
        except openai.APIConnectionError as exc:
            handed.put(("error", ModelError("unreachable", f"模型服务 {where} 的流式回复中途断开："
                                                           f"{exc.__cause__ or exc}") if got else exc))
        except openai.APIStatusError as exc:
            handed.put(("error", exc))
        except openai.APIError as exc:               # an `error` event inside the stream
            handed.put(("error", _provider_error(exc.body if isinstance(exc.body, dict) else exc.message, "流式回复中")))
        except UNPARSEABLE as exc:
            handed.put(("error", _unparseable(exc, "模型服务的流式回复里有一段不是合法的 JSON")))
        except Exception as exc:                     # the transport's own, reading a whole body
            slow = "Timeout" in type(exc).__name__
            handed.put(("error", ModelError("timeout" if slow else "unreachable",
                                            f"模型服务 {where} 的回复没有读完：{type(exc).__name__}: {str(exc)[:200]}")))
        except BaseException as exc:                 # handed back to the caller below
            handed.put(("error", exc))

    threading.Thread(target=read, daemon=True, name="model-stream").start()
    deadline, reply = time.monotonic() + max_seconds, _Assembly(on_event)
    try:
        while True:
            try:
                kind, value = handed.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise _overdue(where, max_seconds) from None
            if kind == "chunk":
                reply.add(value)
            elif kind == "end":
                return reply.body()
            elif kind == "body":
                return _parsed(openai, value)
            else:
                raise value
    except Exception as exc:
        if reply.heard and on_event:
            on_event("discard", why=str(exc)[:200] or type(exc).__name__)
        raise
    finally:
        stop.set()


def _parsed(openai, raw):
    """A whole JSON body (a server that ignored `stream`), read as the SDK reads one."""
    try:
        body = json.loads(raw)
        if not isinstance(body, dict):
            raise ValueError(f"not a JSON object: {str(body)[:100]}")
        return openai.types.chat.ChatCompletion.construct(**body)
    except UNPARSEABLE as exc:
        raise _unparseable(exc) from None


class _Assembly:
    """A streamed reply, chunk by chunk, into the body the server would have sent unstreamed.

    Quirks it absorbs: arguments split over many chunks, calls interleaved by `index`; the id
    and name in the first chunk of a call only, or repeated in every one; chunks without
    `index` (a new id starts a new call); a whole call in one chunk; content and calls in one
    stream; usage in a final chunk with no choices, on a chunk with choices, or never;
    finish_reason anywhere or nowhere. A call is announced once it is complete: another call
    has begun and its arguments are whole JSON, or the stream ended."""

    def __init__(self, on_event):
        self.on_event, self.heard = on_event, False
        self.content, self.calls, self.order, self.shown = None, {}, [], set()
        self.finish = self.usage = self.odd = None
        self.head = {}

    def add(self, chunk):
        extra = getattr(chunk, "model_extra", None) or {}
        if extra.get("error"):
            raise _provider_error(extra["error"], "流式回复中")
        for field in ("id", "created", "model"):
            self.head.setdefault(field, getattr(chunk, field, None))
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage
        for choice in getattr(chunk, "choices", None) or ():
            if getattr(choice, "index", 0) not in (0, None):
                continue
            delta = getattr(choice, "delta", None)
            if delta is not None:
                self._text(getattr(delta, "content", None))
                pieces = getattr(delta, "tool_calls", None)
                if pieces is not None and not isinstance(pieces, list):
                    self.odd = pieces                   # not a list: left for the normalisation to note
                for piece in pieces if isinstance(pieces, list) else ():
                    if not isinstance(piece, (str, bytes, int, float, list, dict)):
                        self._call(piece)
            if getattr(choice, "finish_reason", None):
                self.finish = choice.finish_reason

    def _text(self, piece):
        if piece is None or piece == "":
            return
        if isinstance(piece, str) and not isinstance(self.content, list):
            self.content = (self.content or "") + piece
            text = piece
        else:                                   # content parts (some servers): kept as parts, as unstreamed
            self.content = ([self.content] if isinstance(self.content, str) else self.content or []) + \
                (piece if isinstance(piece, list) else [piece])
            text = _parts_text(piece if isinstance(piece, list) else [piece])
        self._tell("delta", text=text)

    def _call(self, piece):
        index, call_id = getattr(piece, "index", None), getattr(piece, "id", None)
        if index is not None:
            key = index
        elif self.order and (not call_id or call_id == self.calls[self.order[-1]]["id"]):
            key = self.order[-1]
        else:
            key = ("no-index", len(self.order))
        call = self.calls.get(key)
        if call is None:
            self._complete()
            call = self.calls[key] = {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
            self.order.append(key)
        if call_id and not call["id"]:
            call["id"] = call_id
        function = call["function"]
        name = getattr(getattr(piece, "function", None), "name", None)
        if isinstance(name, str) and name and name != function["name"]:
            function["name"] += name
        arguments = getattr(getattr(piece, "function", None), "arguments", None)
        if isinstance(arguments, str):
            function["arguments"] = _arguments_text(function["arguments"]) + arguments
        elif arguments is not None:             # an object, not a string: kept as is, as unstreamed
            function["arguments"] = arguments if function["arguments"] == "" else \
                function["arguments"] + _arguments_text(arguments)

    def _complete(self, ended=False):
        """Announce the calls that are complete now (all of them when the stream ended)."""
        for key in self.order:
            if key in self.shown:
                continue
            function = self.calls[key]["function"]
            if not ended and not _whole(function["arguments"]):
                continue
            self.shown.add(key)
            self._tell("tool_call", call={"id": self.calls[key]["id"], "name": function["name"],
                                          "arguments": _arguments_text(function["arguments"])})

    def _tell(self, kind, **data):
        self.heard = True
        if self.on_event:
            self.on_event(kind, **data)

    def body(self):
        self._complete(ended=True)
        calls = [types.SimpleNamespace(id=c["id"], type=c["type"], function=types.SimpleNamespace(**c["function"]))
                 for c in map(self.calls.get, self.order)]
        message = types.SimpleNamespace(role="assistant", content=self.content, tool_calls=calls or self.odd)
        choice = types.SimpleNamespace(index=0, message=message, finish_reason=self.finish)
        return types.SimpleNamespace(**self.head, choices=[choice], usage=self.usage)


def _whole(arguments):
    if not isinstance(arguments, str):
        return True
    try:
        json.loads(arguments)
        return True
    except ValueError:
        return False


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


def _error_of(exc):
    """The error object of a status error's body (`{"error": {...}}` or the body itself)."""
    body = getattr(exc, "body", None)
    return body.get("error", body) if isinstance(body, dict) else body


def _code(exc):
    error = _error_of(exc)
    values = (error.get("code"), error.get("type")) if isinstance(error, dict) else ()
    return next((v for v in values if v in QUOTA_CODES), None)


def _detail(exc):
    error = _error_of(exc)
    message = error.get("message", error) if isinstance(error, dict) else error
    return str(message if message else exc)[:500]


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
        name = getattr(function, "name", "")
        calls.append({"id": call_id, "type": "function",
                      "function": {"name": name if isinstance(name, str) else "",
                                   "arguments": _arguments_text(getattr(function, "arguments", ""))}})
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
    if error:
        return _provider_error(error)
    return ModelError("bad_response", "模型服务返回了没有 choices 的回复")


def _provider_error(error, where="HTTP 200"):
    """The provider's own error object (in a 200 body, or an `error` event inside a stream) as a
    ModelError in its words; a transient code is retried."""
    if isinstance(error, dict):
        code = error.get("code")
        kind = "server" if code in (429, 500, 502, 503, 504) or str(code) in ("429", "500", "502", "503", "504") \
            else "quota" if code in QUOTA_CODES or code == 402 else "bad_response"
        return ModelError(kind, f"模型服务返回了错误（{where}，code {code}）：{str(error.get('message'))[:500]}")
    return ModelError("bad_response", f"模型服务返回了错误：{str(error)[:500]}")


def _joined(content, notes):
    """Text content; a list of content parts (some servers send them) joined into one string."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        notes.append("content came as a list of parts; joined")
        return _parts_text(content)
    notes.append(f"content came as {type(content).__name__}; converted to text")
    return json.dumps(content, ensure_ascii=False) if isinstance(content, dict) else str(content)


def _arguments_text(arguments):
    """A call's arguments as recorded and announced: a string exactly as sent, anything else as JSON."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _parts_text(parts):
    """The text of content parts, as the recorded reply and the streamed "delta" events show it."""
    return "".join(p.get("text") or "" if isinstance(p, dict) else str(getattr(p, "text", "") or "") for p in parts)


WRITTEN = re.compile(r"<tool_call>|<function[=\s>]|\[TOOL_CALLS\]|<\|python_tag\|>|^\s*```|^\s*[\[{]", re.M)
NAMED = re.compile(r"""["']?(?:name|function)["']?\s*[:=]\s*["']([A-Za-z0-9_.-]+)["']|<function=([A-Za-z0-9_.-]+)>""")


def written_calls(text, names):
    """Tools the model named in a tool-call shape inside its text (`<tool_call>` tags, a bare or
    fenced JSON object with a tool's name...) instead of calling them: small open models do this."""
    if not text or not names or not WRITTEN.search(text):
        return []
    found = [a or b for a, b in NAMED.findall(text)]
    return list(dict.fromkeys(n for n in found if n in names))

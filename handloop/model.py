"""Model access: one chat function over the official `openai` client, for any
OpenAI-compatible endpoint (the built-in offline model included): the client, each request
with its time limits, retries, and asking once more for a reply that cannot be an answer.

Invariants: every request has a timeout and says `tool_choice` whenever it carries tools ("auto";
when the loop forces a call of one tool, that function by name, else "required", each until the
server rejects it: then the next one down, named → "required" → "auto", for the rest of the
client's life; "none" for a final answer); a server that refuses `stream` (400/422) is
asked the same request unstreamed, and so for the rest of the client's life; the messages sent are
valid Unicode (lone surrogates replaced), and a request we cannot encode is ours ("unsendable"),
never reported as the model's fault;
timeouts, 429 (but not quota or billing), 5xx and unparseable bodies are retried with backoff
(honouring Retry-After, capped); every other failure, and retries running out, raise
ModelError with a kind and the provider's own message. A reply cut off by length, or an empty one,
is raised at once as ModelError with the tokens it cost (the loop asks again with a note saying
what was wrong: the same request tends to get the same reply back, from a greedy or seeded server
above all). The timeout bounds the wait for
the first byte and every silence between bytes of a streamed reply; `max_seconds` caps a whole reply, streamed or
not. An unstreamed reply sends no byte before its whole body, so while its server holds the connection (a slow
local model writing) only `max_seconds` bounds it; connecting is bounded by the timeout. `openai` is imported only when a client is made, so commands that never ask a model start
fast. No response the SDK can hand back raises anything but ModelError.

Streamed replies (the default) are assembled by llm/streams.py; every body, streamed or not, is read
into a Reply (or its failure into a ModelError) by llm/replies.py, whose public names are the model's
own: model.ModelError, model.Reply, model.estimate_tokens, model.written_calls.

The interface the loop calls is `Model` (a typing.Protocol): `connect()` returns one over the official client;
a user's own model implements it, or wraps a plain function in `FunctionModel`.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import re
import threading
import time
from typing import Any, Callable, Protocol, runtime_checkable

from . import config
from .llm import replies
from .llm import streams
from .values import chars, redacted_url, told_at, valid_text
from .llm.replies import ModelError, Reply, estimate_tokens, written_calls  # noqa: F401  (re-exported, as before)
from .texts import Said


TRANSIENT = ("timeout", "unreachable", "rate_limited", "server", "unparseable")

Message = dict[str, Any]            # one chat message in the OpenAI format
OnEvent = Callable[..., None]       # on_event(kind, **data): "delta", "tool_call", "discard"


@runtime_checkable
class Model(Protocol):
    """What the loop asks: `model(messages, tools, final=False, on_event=None, force=False) -> Reply`.

    `name` is recorded as the run's model. `streams`: `on_event` hears the reply as it arrives.
    `forces`: `force=True` asks for a tool call, `force="name"` for a call of that tool (the loop forces the
    next step's call after a nudge to act). `final`: a
    last answer without tools. A failure of the service raises ModelError; nothing else may raise."""

    name: str
    streams: bool
    forces: bool

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]], final: bool = False,
                 on_event: OnEvent | None = None, force: bool | str = False) -> Reply: ...

    def close(self) -> None: ...


@dataclasses.dataclass
class FunctionModel:
    """A plain function `fn(messages, tools, final=False)` as a Model. It is told `on_event` only when
    `streams`, and `force` only when `forces`; called as `fn(messages, tools)` otherwise. It returns a Reply,
    or what Reply.of takes (an assistant message as a dict, or the text of an answer); anything else is a
    ModelError ("bad_response"). A function that raises (but a ModelError of its own) is a ModelError
    "model_code" naming its file and line (values.told_at): the run stops on record. A reply that counts no
    tokens of its own has the request's estimated too."""

    fn: Callable[..., Reply]
    name: str = ""
    streams: bool = False
    forces: bool = False

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]], final: bool = False,
                 on_event: OnEvent | None = None, force: bool | str = False) -> Reply:
        extra: dict[str, Any] = {}
        if self.streams and on_event is not None:
            extra["on_event"] = on_event
        if self.forces and force:
            extra["force"] = force
        try:
            got = self.fn(messages, tools, final=True, **extra) if final else self.fn(messages, tools, **extra)
        except ModelError:
            raise
        except Exception as exc:            # the function's own bug: where it is, never a service failure
            raise ModelError("model_code", Said("model.model_code", error=told_at(exc))) from None
        return _counted(_as_reply(got), messages)

    def close(self) -> None:
        """Nothing to release."""


def _as_reply(got: Any) -> Reply:
    """A function model's answer as a Reply (see FunctionModel)."""
    if isinstance(got, Reply):
        return got
    if isinstance(got, (dict, str)):
        return Reply.of(got)
    raise ModelError("bad_response", Said("model.not_a_reply", kind=type(got).__name__))


def _counted(reply: Reply, messages: list[Message]) -> Reply:
    """An estimated reply's tokens with the request's own (Reply.of cannot know the request)."""
    if reply.estimated and not reply.tokens_in:
        reply.tokens_in = estimate_tokens(chars(messages))
        reply.tokens = reply.tokens_in + (reply.tokens_out if reply.tokens_out is not None else reply.tokens)
    return reply


def as_model(ask: Model | Callable[..., Reply]) -> Model:
    """`ask` as a Model: itself when it is one, else a plain function wrapped (it neither streams nor forces)."""
    return ask if isinstance(ask, Model) else FunctionModel(ask)


@dataclasses.dataclass
class Client:
    """The official `openai` client as a Model (what `connect` returns)."""

    ask: Callable[..., Reply]
    name: str
    streams: bool
    release: Callable[[], None]
    forces: bool = True
    url: str | None = None        # where it asks (the loopback endpoint's, for an offline model)

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]], final: bool = False,
                 on_event: OnEvent | None = None, force: bool | str = False) -> Reply:
        return self.ask(messages, tools, final=final, on_event=on_event, force=force)

    def close(self) -> None:
        self.release()


def connect(base_url: str | None, api_key: str, model: str, timeout: float = config.MODEL_TIMEOUT,
            retries: int = config.MODEL_RETRIES, on_retry: Callable[..., None] | None = None,
            sleep: Callable[[float], None] = time.sleep, loopback: bool = False, stream: bool = True,
            max_seconds: float = config.MODEL_MAX_SECONDS, failure: Callable[[], str | None] | None = None,
            extra: dict[str, Any] | None = None) -> Client:
    """A Model over the openai client: model(messages, tools, final=False, on_event=None, force=False) -> Reply.

    `timeout`: seconds to connect, to a streamed reply's first byte and of silence between its bytes;
    `max_seconds`: one whole reply (an unstreamed one has no byte before its body: only this bounds it). With `stream`, `on_event(kind, **data)` hears the reply while it arrives: "delta"
    (text=a piece of the text), "tool_call" (call={"id", "name", "arguments"} as sent, once that
    call is complete), "discard" (why=the ModelError: what was heard of this attempt is void; it is asked
    again or fails). `.streams` says whether it streams; `.name` is `model`. `failure`: for a model answered
    in this process (the loopback endpoint's take_failure), what its own code raised behind a failed request:
    a ModelError "model_code" at once, never retried. `extra`: fields every request carries besides the
    messages and tools (`{"seed": 7, "temperature": 0.7}` for seeded runs of a benchmark)."""
    import openai
    kwargs: dict[str, Any] = {}
    if loopback:                  # never send a loopback request through an HTTP proxy
        try:
            kwargs["http_client"] = openai.DefaultHttpxClient(trust_env=False)
        except (AttributeError, TypeError):
            pass
    client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0, **kwargs)
    _warm(openai)
    where = redacted_url(base_url or "https://api.openai.com/v1")      # as errors name it: a password as ***

    refused: set[str] = set()       # the forced tool_choice forms the server rejected ("named", "required")
    streaming = [stream]            # False once the server refused `stream`: asked unstreamed since

    def ask(messages, tools, final=False, on_event=None, force=False):
        request = {**(extra or {}), "model": model, "messages": valid_text(messages)}   # lone surrogates: replaced
        if tools:
            request.update(tools=tools, tool_choice="none" if final else tool_choice(force, refused))
        names = {t.get("function", {}).get("name"): list((t.get("function", {}).get("parameters") or {})
                                                         .get("properties") or ()) for t in tools or ()}
        started, earlier = time.perf_counter(), list[Any]()

        def send():
            if streaming[0]:
                response = streams.assembled(openai, functools.partial(_create, client), request,
                                        (timeout, max_seconds, where), on_event)
            else:
                held = openai.Timeout(max_seconds, connect=timeout)     # no byte comes before the whole body
                response = _within(max_seconds, where, lambda: _create(client, request, held))
            return replies.normalised(response, messages, time.perf_counter() - started, names)
        reply = _forced(send, request, (force, refused), earlier, lambda: _streamless(
            lambda: _with_retries(send, openai, retries, on_retry, sleep, where, model, failure), streaming, earlier))
        problem = _unusable(reply)
        if problem is None:
            reply.notes = earlier + reply.notes
            return reply
        if streaming[0] and on_event:
            on_event("discard", why=ModelError(problem, Said("model." + problem)))
        error = ModelError(problem, Said("model." + problem), tokens=reply.tokens)   # the loop asks again, with a note
        if reply.tokens_in is not None and reply.tokens_out is not None:
            error.split = (reply.tokens_in, reply.tokens_out)
        raise error

    return Client(ask, model, stream, client.close)   # force=True | "tool" asks for a tool call (see tool_choice)


def configured(base_url: str | None, api_key: str, name: str, env: Any = None, **options: Any) -> Client:
    """`connect` with the time limits, retries and streaming the environment sets for the command line
    (AGENT_MODEL_TIMEOUT, AGENT_MODEL_MAX_SECONDS, AGENT_MODEL_RETRIES, AGENT_STREAM; config.settings): what a
    benchmark runner asks a model with, so that a slow local model is waited for as the CLI waits for it.
    `options` (extra, on_retry, ...) go to `connect` and win over the environment's."""
    got = config.settings(env)
    limits = {"timeout": got["model_timeout"], "retries": got["model_retries"],
              "max_seconds": got["model_max_seconds"], "stream": got["stream"]}
    return connect(base_url, api_key, name, **{**limits, **options})


def offline_model(respond: Callable[[dict[str, Any]], dict[str, Any]], name: str = config.OFFLINE_MODEL,
                  **options: Any) -> Client:
    """A scripted model `respond(request) -> reply` (an assistant message: content and/or tool_calls) served by
    the loopback endpoint and asked through the same openai client as a real one; closing it stops the
    endpoint. `options` go to `connect` (timeout, retries, stream, ...). A `respond` that raises (or answers
    no dict) is a ModelError "model_code" naming its file and line, at once: the run stops on record
    (loop.py), nothing is retried."""
    from .llm.endpoint import Endpoint
    endpoint = Endpoint(respond)
    client = connect(endpoint.url, "offline-no-key", name, loopback=True, failure=endpoint.take_failure, **options)
    release = client.release

    def both() -> None:
        release()
        endpoint.close()
    client.release, client.url = both, endpoint.url
    return client


def tool_choice(force: bool | str, refused: Any = ()) -> str | dict[str, Any]:
    """The tool_choice of a request that is not a final answer: `force` a tool's name → that function
    by name, True → "required", False → "auto"; a form in `refused` ("named", "required": the server
    rejected it) gives way to the next one down."""
    if isinstance(force, str) and force and "named" not in refused:
        return {"type": "function", "function": {"name": force}}
    return "required" if force and "required" not in refused else "auto"


def _form(choice):
    return "named" if isinstance(choice, dict) else choice


def _forced(send, request, forcing, notes, attempt):
    """attempt(); when the request forced a tool call and the server refused the request (a 400 or
    422: servers word it their own way, "tool_choice", "tool choice", "only auto is supported"...),
    the same request with the next tool_choice down (named → "required" → "auto"), and the client's
    later requests too (`forcing`: the force asked for, the set of refused forms). A request that
    fails with "auto" as well fails as it would have."""
    force, refused = forcing
    while True:
        try:
            return attempt()
        except ModelError as exc:
            choice = request.get("tool_choice")
            if _form(choice) not in ("named", "required") or exc.kind != "bad_request":
                raise
            detail = replies.detail_of(exc)
        refused.add(_form(choice))
        request["tool_choice"] = tool_choice(force, refused)
        notes.append(f"tool_choice {json.dumps(choice)} refused by the server ({detail[:200]}): asked with "
                     f"{json.dumps(request['tool_choice'])}, and so on for this client")


STREAM_WORDS = re.compile(r"\bstream(ing|_options)?\b", re.I)


def _streamless(attempt, streaming, notes):
    """attempt(); when it streamed and the server refused streaming (a 400 or 422 naming `stream` or
    `stream_options`: llama.cpp-based servers say "stream not supported"), the same request
    unstreamed, and the client's later requests too, noted once. A request that fails unstreamed
    as well fails as it would have."""
    try:
        return attempt()
    except ModelError as exc:
        refused = replies.detail_of(exc)
        if not streaming[0] or replies.status_of(exc) not in (400, 422) or not STREAM_WORDS.search(refused):
            raise
    streaming[0] = False
    notes.append(f"streaming refused by the server ({refused[:200]}): asked unstreamed, and so on for this client")
    return attempt()


def _unusable(reply):
    """The kind of problem when a reply cannot be taken as it is: cut off, or empty; else None."""
    if reply.cut:
        return "length"
    if not reply.tool_calls and not reply.text:
        return "empty_reply"
    return None


def _with_retries(send, openai, retries, on_retry, sleep, where, model, failure=None):
    attempt = 0
    while True:
        try:
            return send()
        except ModelError as exc:
            error, wait = exc, None
        except openai.APIStatusError as exc:
            error = replies.status_error(exc, model)
            wait = replies.retry_after(exc)
        except openai.APITimeoutError:
            error, wait = ModelError("timeout", Said("model.timeout", where=where)), None
        except openai.APIConnectionError as exc:
            error, wait = ModelError("unreachable", Said("model.unreachable", where=where, error=exc.__cause__ or exc)), None
        except openai.OpenAIError as exc:
            error, wait = ModelError("bad_response", Said("model.unusable", error=exc)), None
        own = failure() if failure else None
        if own:                             # the offline model's own code failed: retrying cannot help
            raise ModelError("model_code", Said("model.model_code", error=own)) from None
        if error.kind not in TRANSIENT or attempt == retries:
            if error.kind == "unparseable":
                error.kind = "bad_response"
            error.retried = attempt
            raise error
        wait = min(config.RETRY_CAP, wait if wait is not None else config.RETRY_BASE * 2 ** attempt)
        attempt += 1
        if on_retry:
            on_retry(attempt, retries, wait, error)
        sleep(wait)


_WARM: dict[str, Any] = {"done": False, "lock": threading.Lock()}
# a response with every part the loop reads, for _warm
_SAMPLE = {"id": "warm", "object": "chat.completion", "created": 0, "model": "warm",
           "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None,
                        "message": {"role": "assistant", "content": [{"type": "text", "text": ""}], "refusal": None,
                                    "tool_calls": [{"id": "c", "type": "function",
                                                    "function": {"name": "f", "arguments": "{}"}}]}}],
           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2,
                     "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}}}


# and a chunk of a streamed one
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


def _create(client, request, timeout=None):
    """One request (`timeout`: its own, instead of the client's); a body the SDK cannot parse (cut-off JSON, an
    HTML error page) is a ModelError, and so is a failure of the SDK's own parsing (RuntimeError: pydantic's errors
    about its models)."""
    try:
        return client.chat.completions.create(**request, **({"timeout": timeout} if timeout is not None else {}))
    except UnicodeEncodeError as exc:       # our own request, not the model's answer: not the model's fault
        raise ModelError("unsendable", Said("model.unsendable", error=str(exc)[:200])) from None
    except replies.UNPARSEABLE as exc:
        raise replies.unparseable(exc) from None


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
        raise replies.overdue(where, seconds)
    if "error" in box:
        raise box["error"]
    return box["value"]

"""What the model service answers, read into the project's terms: a response body normalised into
a Reply, or a failure classified as a ModelError with a kind and the provider's own words.

Invariants: a reply always comes back normalised: text content (content parts joined), tool calls
with unique ids and string arguments exactly as sent (save that every text is valid Unicode: a lone
surrogate, which no request could carry, is replaced by U+FFFD), the names of tools the model wrote into its
text instead of calling them, and a token count with its split into input and output (the server's usage:
total_tokens, prompt_tokens, completion_tokens; when it sent none, estimates flagged as such; a total
without its split leaves the split unknown, None), and of the input the part the server's prompt cache served
(prompt_tokens_details.cached_tokens; None when it did not say). A body is read by attribute, with a default for
whatever a provider may leave out, so an SDK model and llm/streams.py's body of the same shape read
alike. A provider's error object is classified by one rule wherever it came (a 200 body, an `error`
event inside a stream), in the provider's words. How content parts and non-string arguments become
text is defined here once, for the recorded reply and for what a stream announces alike. No client, no network, no state;
imports only config.py, errors.py, texts/ and values.py.
"""
from __future__ import annotations

import dataclasses
import json
import re
import secrets
from typing import Any

from .. import config
from .. import texts
from ..errors import HandloopError
from ..values import chars, valid_text
from ..texts import Said

ZH = texts.ZH_TEXTS


class ModelError(HandloopError):
    """The model service failed; `kind` says how (auth, quota, not_found, bad_request,
    rate_limited, server, timeout, unreachable, bad_response, length, empty_reply; unsendable: our
    own request could not be encoded; model_code: the user's own model code, answering in this process,
    raised: no failure of a service, never retried). `tokens`:
    what the failed attempts cost, when the server said (`split`: (input, output) of them, or None). Errors are
    data: the message is a
    texts.Said, so `text(say)` says it in a run's language (the provider's own words kept as they
    are); str() is the Chinese. `retried`: the attempts made before it was given up."""

    def __init__(self, kind: str, message: Any = "", tokens: int = 0) -> None:
        super().__init__(message)
        self.kind, self.tokens, self.retried = kind, tokens, 0
        self.split: tuple[int, int] | None = None

    def text(self, say: Any) -> str:
        said = self.args[0] if self.args else ""
        told = said(say) if isinstance(said, Said) else str(said)    # a plain message is said as it is
        return told + (say("model.retried", n=self.retried) if self.retried else "")

    def __str__(self):
        return self.text(ZH)


@dataclasses.dataclass
class Reply:
    message: dict                 # the assistant message to append, as the model sent it
    tool_calls: list
    tokens: int
    estimated: bool               # the server sent no usage; tokens is our estimate
    seconds: float
    notes: list                   # what normalisation had to fix (missing or duplicate ids...)
    written_calls: list = dataclasses.field(default_factory=list)   # tools named in text, not called
    written_problems: list = dataclasses.field(default_factory=list)  # what is wrong with them (written_problems)
    cut: bool = False             # finish_reason "length": the reply was cut off
    tokens_in: int | None = None  # the request's tokens (the server's prompt_tokens); None: the split is unknown
    tokens_out: int | None = None  # the reply's tokens (completion_tokens); estimates when `estimated`
    tokens_cached: int | None = None  # of tokens_in, those the server served from its prompt cache
                                      # (usage.prompt_tokens_details.cached_tokens); None: it did not say

    @property
    def text(self) -> str:
        return (self.message.get("content") or "").strip()

    @classmethod
    def of(cls, message: dict | str, *, tokens: int | None = None, tokens_in: int | None = None,
           tokens_out: int | None = None, cut: bool = False) -> Reply:
        """The reply of a model of your own (a FunctionModel's function returns it): `message` an assistant
        message in the OpenAI chat format (`content` and/or `tool_calls`, each `{"id", "type": "function",
        "function": {"name", "arguments"}}`), or the text of an answer. It is read as a server's reply is: a
        call without an id (or with one seen before) gets one, arguments given as an object become JSON text,
        content parts are joined. `tokens` (or `tokens_in` and `tokens_out`) as your model counted them;
        estimated from the reply's characters when not given. `cut`: the reply was cut off (a length limit)."""
        body = {"content": message} if isinstance(message, str) else message
        if not isinstance(body, dict):
            raise TypeError(f"Reply.of takes an assistant message (a dict) or a text, not {type(body).__name__}")
        usage = {"total_tokens": tokens, "prompt_tokens": tokens_in, "completion_tokens": tokens_out}
        choice = {"message": body, "finish_reason": "length" if cut else "stop"}
        return normalised(_Read({"choices": [choice], "usage": usage}), [], 0.0)


class _Read:
    """A plain dict read as the openai client's response objects are (attributes; None for what it lacks); a
    call's arguments and a message's content stay as given (the client keeps them as the body had them)."""

    def __init__(self, data):
        self._data = data

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        value = self._data.get(name)
        return value if name in ("arguments", "content") else _read(value)


def _read(value):
    if isinstance(value, dict):
        return _Read(value)
    return [_read(v) for v in value] if isinstance(value, list) else value


def estimate_tokens(chars):
    return max(1, chars // config.CHARS_PER_TOKEN)


def normalised(response, messages, seconds, names=()):
    """The Reply a response body makes; `names`: the tools offered, for written_calls. A body
    without choices, or without a message, is a ModelError."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise _body_error(response)
    choice = choices[0]
    raw = getattr(choice, "message", None)
    if raw is None:
        raise ModelError("bad_response", Said("model.no_message"))
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
                                   "arguments": arguments_text(getattr(function, "arguments", ""))}})
    content = _joined(getattr(raw, "content", None), notes)
    calls, content = _valid(calls, content, notes)
    message = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = calls
    tokens, tokens_in, tokens_out = _usage(getattr(response, "usage", None))
    estimated = tokens is None
    if estimated:
        tokens = estimate_tokens(chars(messages) + chars([message]))
        tokens_out = min(tokens, estimate_tokens(chars([message])))
        tokens_in = tokens - tokens_out
    reply = Reply(message, calls, tokens, estimated, seconds, notes, tokens_in=tokens_in, tokens_out=tokens_out,
                  tokens_cached=None if estimated else cached_tokens(getattr(response, "usage", None)))
    reply.cut = getattr(choice, "finish_reason", None) == "length"
    reply.written_calls = [] if calls else written_calls(content or "", names)
    reply.written_problems = written_problems(content or "", names) if reply.written_calls else []
    return reply


def _usage(usage):
    """(total, input, output) tokens as the server's usage says them: None for what it did not say (a total
    it left out is the sum of the two parts when it gave both; the parts go only together)."""
    total, given, made = (_count(usage, key) for key in ("total_tokens", "prompt_tokens", "completion_tokens"))
    if given is None or made is None:
        return total, None, None
    return (given + made if total is None else total), given, made


def cached_tokens(usage):
    """The prompt tokens the server says it served from its cache (`prompt_tokens_details.cached_tokens`, as
    OpenAI, DeepSeek and vLLM send it), or None when it did not say."""
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else \
        getattr(usage, "prompt_tokens_details", None)
    return _count(details, "cached_tokens") if details is not None else None


def _count(usage, key):
    value = usage.get(key) if isinstance(usage, dict) else getattr(usage, key, None)    # a dict: a body read raw
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _valid(calls, content, notes):
    """The calls and the content as valid Unicode (values.valid_text), noted when something was replaced."""
    fixed = valid_text([calls, content])
    if fixed[0] is not calls or fixed[1] is not content:
        notes.append("lone surrogates in the reply replaced by U+FFFD")
    return fixed[0], fixed[1]


def _joined(content, notes):
    """Text content; a list of content parts (some servers send them) joined into one string."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        notes.append("content came as a list of parts; joined")
        return parts_text(content)
    notes.append(f"content came as {type(content).__name__}; converted to text")
    return json.dumps(content, ensure_ascii=False) if isinstance(content, dict) else str(content)


def arguments_text(arguments):
    """A call's arguments as recorded and announced: a string exactly as sent, anything else as JSON."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def parts_text(parts):
    """The text of content parts, as the recorded reply and the streamed "delta" events show it."""
    return "".join(p.get("text") or "" if isinstance(p, dict) else str(getattr(p, "text", "") or "") for p in parts)


WRITTEN = re.compile(r"<tool_call>|<function[=\s>]|\[TOOL_CALLS\]|<\|python_tag\|>|^\s*```|^\s*[\[{]|^\s*\"name\"\s*:",
                     re.M)
NAMED = re.compile(r"""["']?(?:name|function)["']?\s*[:=]\s*["']([A-Za-z0-9_.-]+)["']|<function=([A-Za-z0-9_.-]+)>""")
PLACEHOLDER = re.compile(r"""["']([A-Za-z_][A-Za-z0-9_]*)["']\s*:\s*<[^<>"\n]{1,80}>""")


def written_calls(text, names):
    """Tools the model named in a tool-call shape inside its text (`<tool_call>` tags, a bare or
    fenced JSON object with a tool's name, a tag named after a tool, arguments with placeholders
    that only one tool takes...) instead of calling them: small open models do this. `names`: the
    tools offered, or {name: its argument names} (then placeholders are matched to a tool too)."""
    if not text or not names:
        return []
    found = [a or b for a, b in NAMED.findall(text)] if WRITTEN.search(text) else []
    found += [m.group(1) for m in re.finditer(r"<\s*([A-Za-z0-9_.-]+)[\s/>]", text) if m.group(1) in names]
    keys = set(PLACEHOLDER.findall(text))
    if keys and isinstance(names, dict) and not found:       # bare arguments: the one tool that takes them
        takers = [n for n, props in names.items() if keys <= set(props or ())]
        found += takers if len(takers) == 1 else []
    return list(dict.fromkeys(n for n in found if n in names))


def written_problems(text, names=()):
    """What makes a call written into text unusable, beyond being text: "placeholder" (a value
    written as <...>), "arguments_not_object" (`arguments` given as a list), "markup" (a tag named
    after a tool, not a call of any format)."""
    problems = []
    if PLACEHOLDER.search(text or ""):
        problems.append("placeholder")
    if re.search(r"""["']arguments["']\s*:\s*\[""", text or ""):
        problems.append("arguments_not_object")
    if any(re.search(rf"<\s*{re.escape(n)}[\s/>]", text or "") for n in names):
        problems.append("markup")
    return problems


def status_error(exc, model):
    """An HTTP error as a ModelError: the kind from the status and the provider's code, the
    provider's own message."""
    status, detail = exc.status_code, _detail(exc)
    kind = "auth" if status in (401, 403) else "not_found" if status == 404 else \
        "quota" if status == 402 or _code(exc) in QUOTA_CODES else "rate_limited" if status == 429 else \
        "server" if status >= 500 else "bad_request"
    return ModelError(kind, Said("model." + kind, status=status, detail=detail, model=model))


def status_of(error):
    """The HTTP status in a ModelError made by status_error (None when there is none)."""
    said = error.args[0] if error.args else None
    return getattr(said, "values", {}).get("status")


def detail_of(error):
    """The provider's own words in a ModelError made by status_error ("" when there are none)."""
    said = error.args[0] if error.args else None
    return str(getattr(said, "values", {}).get("detail", ""))


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


def retry_after(exc):
    """Seconds the provider asked to wait before a retry (Retry-After), or None."""
    try:
        return max(0.0, float(exc.response.headers.get("retry-after")))
    except (AttributeError, TypeError, ValueError):
        return None


def _body_error(response):
    """A 200 without choices: the provider's own error when the body carries one (OpenRouter
    does this), retried when its code says it is transient."""
    error = getattr(response, "error", None) or (getattr(response, "model_extra", None) or {}).get("error")
    if error:
        return provider_error(error)
    return ModelError("bad_response", Said("model.no_choices"))


def provider_error(error, streamed=False):
    """The provider's own error object (in a 200 body, or an `error` event inside a stream) as a
    ModelError in its words; a transient code is retried."""
    if isinstance(error, dict):
        code = error.get("code")
        kind = "server" if code in (429, 500, 502, 503, 504) or str(code) in ("429", "500", "502", "503", "504") \
            else "quota" if code in QUOTA_CODES or code == 402 else "bad_response"
        return ModelError(kind, Said("model.provider_stream" if streamed else "model.provider", code=code,
                          said=str(error.get("message"))[:500]))
    return ModelError("bad_response", Said("model.provider_plain", said=str(error)[:500]))


# what reading a body the SDK cannot parse raises (RuntimeError: pydantic's errors about its models)
UNPARSEABLE = (ValueError, TypeError, AttributeError, KeyError, IndexError, RuntimeError)


def unparseable(exc, key="model.not_json"):
    return ModelError("unparseable", Said(key, error_type=type(exc).__name__, error=str(exc)[:200]))


def overdue(where, seconds):
    """The whole reply took longer than `max_seconds` (e.g. a server dribbling bytes forever)."""
    return ModelError("timeout", Said("model.overdue", where=where, seconds=seconds))

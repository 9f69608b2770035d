"""A streamed reply assembled into exactly the body the same reply unstreamed would have had,
under the time limits.

Invariants: the body is normalised by the same code as an unstreamed one (replies.normalised),
so nothing downstream can tell them apart; what was heard of an attempt that failed is never
part of a body, and a listener that heard some of it is told to discard it. `timeout` bounds the
wait for the first byte and every silence between bytes, `max_seconds` the whole reply; a stream
cut or stalled mid-way is a transient ModelError, while a timeout, a lost connection or an HTTP
error before the first chunk is handed back as the SDK raised it, so the caller's retry loop
classifies it as it would for an unstreamed request. Listeners (`on_event`) are called in the
caller's thread, never after `assembled` returned, and an interrupt stops at once; what they hear
is valid Unicode (lone surrogates replaced, as in the body). `openai` and
the request function are handed in by the caller, so importing this module starts nothing;
imports only llm/replies.py, calls.py and texts/__init__.py.
"""
import json
import queue
import threading
import time
import types

from ..values import valid_text
from .replies import UNPARSEABLE, ModelError, arguments_text, overdue, parts_text, provider_error, unparseable
from ..texts import Said


def assembled(openai, create, request, limits, on_event):
    """One streamed request, put together into the body the same reply unstreamed would have had.

    A daemon thread reads the chunks and hands them over; they are assembled here, in the
    caller's thread, so `on_event` runs there, the whole reply has its deadline and an interrupt
    (Ctrl-C) stops at once: the reader is told to close the stream at its next chunk and left."""
    timeout, max_seconds, where = limits
    handed, stop = queue.SimpleQueue[tuple](), threading.Event()

    def read():
        got = False
        try:
            stream = create(dict(request, stream=True, stream_options={"include_usage": True}))
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
            handed.put(("error", ModelError("timeout", Said("model.stall", where=where, seconds=timeout)) if got else exc))
        except openai.APIConnectionError as exc:
            handed.put(("error", ModelError("unreachable", Said("model.broken_stream", where=where,
                                            error=str(exc.__cause__ or exc))) if got else exc))
        except openai.APIStatusError as exc:
            handed.put(("error", exc))
        except openai.APIError as exc:               # an `error` event inside the stream
            handed.put(("error", provider_error(exc.body if isinstance(exc.body, dict) else exc.message, streamed=True)))
        except UNPARSEABLE as exc:
            handed.put(("error", unparseable(exc, "model.stream_not_json")))
        except ModelError as exc:                    # already classified (by the request itself)
            handed.put(("error", exc))
        except Exception as exc:                     # the transport's own, reading a whole body
            slow = "Timeout" in type(exc).__name__
            handed.put(("error", ModelError("timeout" if slow else "unreachable", Said("model.unread", where=where,
                                            error_type=type(exc).__name__, error=str(exc)[:200]))))
        except BaseException as exc:                 # handed back to the caller below
            handed.put(("error", exc))

    def guarded():                                   # nothing the reader raises is lost: the caller waits on it
        try:
            read()
        except BaseException as exc:
            handed.put(("error", exc))

    threading.Thread(target=guarded, daemon=True, name="model-stream").start()
    deadline, reply = time.monotonic() + max_seconds, _Assembly(on_event)
    try:
        while True:
            try:
                kind, value = handed.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise overdue(where, max_seconds) from None
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
            on_event("discard", why=exc)
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
        raise unparseable(exc) from None


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
            raise provider_error(extra["error"], streamed=True)
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
            text = parts_text(piece if isinstance(piece, list) else [piece])
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
            function["arguments"] = arguments_text(function["arguments"]) + arguments
        elif arguments is not None:             # an object, not a string: kept as is, as unstreamed
            function["arguments"] = arguments if function["arguments"] == "" else \
                arguments_text(function["arguments"]) + arguments_text(arguments)

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
                                          "arguments": arguments_text(function["arguments"])})

    def _tell(self, kind, **data):
        self.heard = True
        if self.on_event:
            self.on_event(kind, **valid_text(data))       # a lone surrogate is never printed

    def body(self):
        self._complete(ended=True)
        calls = [types.SimpleNamespace(id=c["id"], type=c["type"], function=types.SimpleNamespace(**c["function"]))
                 for c in (self.calls[key] for key in self.order)]
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

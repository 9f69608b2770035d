"""A stretch of a run's work as OpenTelemetry GenAI spans, sent over OTLP/HTTP: one of the two modules that import
opentelemetry (the `otel` extra; trace/temporal.py, Temporal's own spans, is the other).

Spans (GenAI semantic conventions): `invoke_agent {agent}` per stretch of work (gen_ai.agent.name,
gen_ai.conversation.id = the run id), and under it `chat {model}` per model call (gen_ai.request.model,
gen_ai.usage.input_tokens / output_tokens as the server reported them, estimated only when it did not or
the record predates the split: handloop.usage_split says which; gen_ai.usage.cache_read.input_tokens, the part of
the input the server's prompt cache served, when it said so; gen_ai.response.finish_reasons) and
`execute_tool {tool}` per call (gen_ai.tool.name, gen_ai.tool.call.id; a blocked call names its guard, with
error.type "blocked").
Suspension, resume, nudges and proposals are events of the stretch's span. Contents only when `capture` says so
(the GenAI conventions' opt-in): the messages (gen_ai.input.messages, gen_ai.output.messages,
gen_ai.system_instructions), a call's arguments and result, a failed call's error text (its status description),
a guard's reason (handloop.guard.reason: it quotes argument values), the loop's nudges and the turn's notes
(a server's own words among them). Without it a span carries names, kinds, counts and statuses only.

Invariants: spans are built after the work, from the timeline of what the run recorded (timeline.py), on a
tracer provider of our own (a program's global provider is never touched); every stretch of a run shares one
trace id, made from the run id and its creation time, so a resume in another process continues the same trace
and conversation; everything is sent in one request, bounded by the exporter's timeout, and only an answer of
2xx counts as sent (a redirect is never followed: it would take our headers to another origin); the SDK's own
log lines are kept quiet, those quoting OTEL_EXPORTER_OTLP_HEADERS included (send.py says what happened in one
line).
"""
import hashlib
import json
import logging
import os

import requests
from opentelemetry import trace as api
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import SpanKind, Status, StatusCode

PROVIDER = "openai"            # the API the loop speaks, whoever serves it
QUIET = ("opentelemetry.exporter", "opentelemetry.sdk", "opentelemetry.util", "opentelemetry.attributes")
DEFAULT_TIMEOUT = 3.0          # seconds, when OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT does not say
NAME_LIMIT = 200               # characters of a tool's name or a call's id kept (the model chose them)


def trace_id(run_id, created):
    """The trace id of every stretch of a run."""
    digest = hashlib.sha256(f"handloop:{run_id}:{created}".encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1


def spans(snap, timeline, turn_after, started_ns, ended_ns, opened="", capture=False, root=None):
    """The finished spans of the turns after `turn_after` (a stretch of work that began at `started_ns`,
    ended at `ended_ns`, wall clock in ns); `opened`: how it began ("", "confirm", "reply", "resume");
    `root`: the span id of its invoke_agent span, when chosen before the work (trace/temporal.py's parent)."""
    quiet()
    collected = _Collect()
    provider = TracerProvider(resource=_resource(timeline), id_generator=_Ids(trace_id(timeline.run_id,
                                                                                         timeline.created), root))
    provider.add_span_processor(collected)
    tracer = provider.get_tracer("handloop")
    messages = [m for m in snap.get("messages") or () if isinstance(m, dict)]
    for stretch in timeline.stretches:
        turns = [t for t in stretch.turns if t.number > turn_after]
        if turns:
            _stretch(tracer, timeline, stretch, turns, messages, started_ns, ended_ns, opened, capture)
    provider.shutdown()
    return collected.spans


def send(finished, timeout=None):
    """Send the spans in one OTLP/HTTP request to the endpoint the environment names: (accepted, the HTTP status
    of the collector's last answer, None when there was none)."""
    quiet()
    exporter = exporter_for(timeout)
    try:
        accepted = exporter.export(finished) == SpanExportResult.SUCCESS
        return accepted, exporter.answers.status
    finally:
        exporter.shutdown()


def quiet():
    """The SDK's own log lines off: send.py says in one line what went wrong, and some of them quote secrets
    (a malformed OTEL_EXPORTER_OTLP_HEADERS whole)."""
    for name in QUIET:
        logging.getLogger(name).setLevel(logging.CRITICAL)


def exporter_for(timeout=None):
    """An OTLP/HTTP span exporter to the endpoint the environment names, its timeout the environment's (else
    DEFAULT_TIMEOUT), counting only a 2xx answer as sent."""
    if timeout is None and not (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
                                or os.environ.get("OTEL_EXPORTER_OTLP_TIMEOUT")):
        timeout = DEFAULT_TIMEOUT
    return Exporter(timeout)


class _Answers(requests.Session):
    """The exporter's HTTP session: it never follows a redirect (whatever the SDK asks) and keeps the status of
    the last answer."""

    def __init__(self):
        super().__init__()
        self.status = None

    def request(self, method, url, *args, **kwargs):
        kwargs["allow_redirects"] = False
        response = super().request(method, url, *args, **kwargs)
        self.status = response.status_code
        return response


class Exporter(OTLPSpanExporter):
    """The OTLP/HTTP span exporter, on a session that follows no redirect, for which an answer is a success only
    when it is 2xx (the SDK takes any status under 400 for one: a 307 to another origin was "sent" though no span
    arrived anywhere); `failures` counts the exports that were not."""

    def __init__(self, timeout=None):
        self.answers, self.failures = _Answers(), 0
        super().__init__(timeout=timeout, session=self.answers)

    def export(self, spans):
        self.answers.status = None
        result = super().export(spans)
        if result == SpanExportResult.SUCCESS and not (self.answers.status and 200 <= self.answers.status < 300):
            result = SpanExportResult.FAILURE
        if result != SpanExportResult.SUCCESS:
            self.failures += 1
        return result


class _Collect(SpanProcessor):
    def __init__(self):
        self.spans = []

    def on_end(self, span):
        self.spans.append(span)


class _Ids(RandomIdGenerator):
    """Random span ids, save the first when chosen before (`first`: the stretch's span); the run's trace id."""

    def __init__(self, run_trace, first=None):
        self.run_trace, self.first = run_trace, first

    def generate_trace_id(self):
        return self.run_trace

    def generate_span_id(self):
        first, self.first = self.first, None
        return first or super().generate_span_id()


def _resource(timeline):
    named = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": timeline.agent or "handloop"}
    return Resource.create(dict(named, **{"service.namespace": "handloop"}))


def _stretch(tracer, timeline, stretch, turns, messages, started_ns, ended_ns, opened, capture):
    origin = turns[0].start
    at = lambda seconds: started_ns + int(max(0.0, seconds - origin) * 1e9)      # noqa: E731
    end = max(ended_ns, at(turns[-1].end))
    last = stretch is timeline.stretches[-1]
    how = opened or (stretch.opened if stretch.number > 1 else "start")
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": timeline.agent,
                  "gen_ai.conversation.id": timeline.run_id, "gen_ai.provider.name": PROVIDER,
                  "gen_ai.request.model": timeline.model, "handloop.stretch": stretch.number,
                  "handloop.opened": how, "handloop.mode": timeline.mode,
                  "handloop.status": stretch.outcome if not last else timeline.status,
                  "handloop.reason": stretch.reason if not last else timeline.reason,
                  "handloop.turns": len(turns), "handloop.tokens": sum(t.tokens for t in turns)}
    root = tracer.start_span(f"invoke_agent {timeline.agent}", kind=SpanKind.INTERNAL, attributes=attributes,
                             start_time=started_ns)
    if how != "start":
        root.add_event("handloop.resumed", {"handloop.resumed_by": how}, timestamp=started_ns)
    parent = api.set_span_in_context(root)
    for turn in turns:
        _chat(tracer, parent, timeline, turn, messages, at, capture)
        for call in turn.calls:
            _tool(tracer, parent, timeline, root, call, at, capture)
        for text in turn.nudges:
            root.add_event("handloop.nudge", {"handloop.nudge.text": text[:500]} if capture else {},
                           timestamp=at(turn.end))
    status = stretch.outcome if not last else timeline.status
    if status == "suspended":
        root.add_event("handloop.suspended", {"handloop.reason": (stretch.reason if not last else timeline.reason)
                                              or "awaiting_user"}, timestamp=end)
    elif status in ("stopped", "error"):
        root.set_status(Status(StatusCode.ERROR, f"{status}: {timeline.reason}"))
        root.set_attribute("error.type", timeline.reason or status)
    root.end(end_time=end)


def _chat(tracer, parent, timeline, turn, messages, at, capture):
    given, made = _usage(turn)
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": PROVIDER,
                  "gen_ai.request.model": timeline.model, "gen_ai.conversation.id": timeline.run_id,
                  "gen_ai.usage.input_tokens": given, "gen_ai.usage.output_tokens": made,
                  "gen_ai.response.finish_reasons": [turn.finish], "handloop.turn": turn.number,
                  "handloop.tokens": turn.tokens, "handloop.tokens_estimated": turn.estimated,
                  "handloop.usage_split": "server" if turn.split else "estimated",
                  "handloop.chars_sent": turn.chars_sent,
                  "handloop.chars_full": turn.chars_full}
    if turn.split and turn.tokens_cached is not None:     # the server said what its prompt cache served
        attributes["gen_ai.usage.cache_read.input_tokens"] = turn.tokens_cached
    if turn.notes:
        attributes["handloop.notes.count"] = len(turn.notes)
        if capture:                            # a note may quote a server's words
            attributes["handloop.notes"] = turn.notes
    if capture and turn.message is not None:
        index = next((i for i, m in enumerate(messages) if m is turn.message), len(messages))
        system = [m for m in messages[:index] if m.get("role") == "system"]
        attributes["gen_ai.input.messages"] = json.dumps(
            [_semconv(m) for m in messages[:index] if m.get("role") != "system"], ensure_ascii=False)
        attributes["gen_ai.output.messages"] = json.dumps([dict(_semconv(turn.message), finish_reason=turn.finish)],
                                                          ensure_ascii=False)
        if system:
            attributes["gen_ai.system_instructions"] = json.dumps(
                [{"type": "text", "content": _content(system[-1])}], ensure_ascii=False)
    span = tracer.start_span(f"chat {timeline.model}", context=parent, kind=SpanKind.CLIENT, attributes=attributes,
                             start_time=at(turn.start))
    if turn.message is None:
        span.set_status(Status(StatusCode.ERROR, "empty reply"))
        span.set_attribute("error.type", "empty_reply")
    span.end(end_time=at(turn.start + turn.model_seconds))


def _tool(tracer, parent, timeline, root, call, at, capture):
    name, call_id = call.name[:NAME_LIMIT], call.id[:NAME_LIMIT]
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                  "gen_ai.tool.call.id": call_id, "gen_ai.tool.type": "function",
                  "gen_ai.conversation.id": timeline.run_id, "handloop.tool.status": call.status[:NAME_LIMIT],
                  "handloop.tool.concurrent": call.concurrent}
    if call.guard:
        attributes.update({"handloop.guard": str(call.guard)[:NAME_LIMIT], "error.type": "blocked"})
    elif call.error is not None:
        attributes["error.type"] = call.status[:NAME_LIMIT] if call.status not in ("ok", "error") else "tool_error"
    if capture:
        attributes.update({"gen_ai.tool.call.arguments": call.arguments, "gen_ai.tool.call.result": call.result})
        if call.guard:
            attributes["handloop.guard.reason"] = (call.error or "")[:1000]
    span = tracer.start_span(f"execute_tool {name}", context=parent, kind=SpanKind.INTERNAL,
                             attributes=attributes, start_time=at(call.start))
    if call.guard or call.error is not None:
        why = f"blocked by {attributes['handloop.guard']}" if call.guard else \
            (call.error or "")[:200] if capture else attributes["error.type"]
        span.set_status(Status(StatusCode.ERROR, why))
    if call.proposal:
        root.add_event("handloop.proposal", {"gen_ai.tool.name": name, "gen_ai.tool.call.id": call_id},
                       timestamp=at(call.start))
    span.end(end_time=at(call.end))


def _usage(turn):
    """(input, output) tokens of a turn: as the server reported them, else the record's estimates, else (an
    older record: the total only) the total split by the reply's characters."""
    if turn.split:
        return turn.split
    if turn.estimated and turn.tokens_in is not None and turn.tokens_out is not None:
        return turn.tokens_in, turn.tokens_out
    output = _out_tokens(turn)
    return max(0, turn.tokens - output), output


def _out_tokens(turn):
    """The reply's share of a turn's tokens (the record has their sum only): its characters' estimate."""
    if turn.message is None:
        return 0
    size = len(json.dumps({k: turn.message.get(k) for k in ("content", "tool_calls")}, ensure_ascii=False))
    return min(turn.tokens, max(1, size // 3))


def _semconv(message):
    """An OpenAI chat message as a GenAI semantic-conventions message: role and parts."""
    role = message.get("role")
    if role == "tool":
        return {"role": "tool", "parts": [{"type": "tool_call_response", "id": message.get("tool_call_id"),
                                           "response": _content(message)}]}
    parts = [{"type": "text", "content": _content(message)}] if _content(message) else []
    for raw in message.get("tool_calls") or ():
        function = raw["function"] if isinstance(raw, dict) and isinstance(raw.get("function"), dict) else {}
        parts.append({"type": "tool_call", "id": raw.get("id") if isinstance(raw, dict) else None,
                      "name": function.get("name"), "arguments": _arguments(function.get("arguments"))})
    out = {"role": role, "parts": parts}
    if message.get("name"):
        out["name"] = message["name"]
    return out


def _arguments(raw):
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return raw


def _content(message):
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return content if isinstance(content, str) else ""

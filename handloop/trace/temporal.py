"""Temporal's own work as spans of the run's trace: the tracing interceptor of temporalio's OpenTelemetry
contrib on a Temporal client (and so on the workers made with it), and the parent a command line attaches
while it starts or answers a run's workflow. Imported (by durable/client.py, trace/send.py) only when traces
are exported (settings.wanted) and the `otel` and `temporal` extras are installed; with otlp.py, the only modules
that import opentelemetry, and with durable/, the only ones that import temporalio.

Spans: the client's `StartUpdateWithStartWorkflow:AgentRun` / `StartWorkflowUpdate:answer|settle` (children of the
stretch's `invoke_agent` span, whose id the command line chose before the work: trace id from the run id and
its creation time, as otlp.py makes it), then, in the worker, `RunWorkflow:AgentRun`, `HandleUpdate:...`,
`StartActivity:agent.*` (the contrib's instant workflow spans) and `RunActivity:agent.*` (each activity as it
ran, with its attempt; a tool's with its call's gen_ai.tool.name and gen_ai.tool.call.id, which pair it with
the call's execute_tool span), each with `gen_ai.conversation.id` = the run id (the workflow id).

Invariants: our own tracer provider per set of OTEL_* settings (a program's global provider is never
touched), exporting in the background in batches (a workflow task never waits on a collector) through
otlp.Exporter (only a 2xx answer is sent; `flush` says False when an export was not), its SDK log lines kept
quiet; without OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT no span carries an exception's words (the
contrib records an activity's or a workflow's exception as an event, its message and stack trace, and as the
status description: only the exception's type leaves); a workflow or an activity is traced only when the work that started it carried a run's
trace (no orphan traces from runs started untraced); nothing here changes what a workflow or an activity
does or returns, and replaying a history makes no span.
"""
import json
import os
import threading

from opentelemetry import context as contexts
from opentelemetry import trace as api
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, TraceFlags
from temporalio import activity
from temporalio.contrib.opentelemetry import TracingInterceptor
from temporalio.worker import ActivityInboundInterceptor

from . import otlp
from .settings import capture as captured

SERVICE = "handloop"              # service.name of Temporal's spans unless OTEL_SERVICE_NAME says
FLUSH_MS = 5000                   # at most this long waiting for the batch at the end of a stretch or a worker

_PROVIDERS: dict = {}             # the environment's OTEL_* settings -> (our provider for them, its exporter)
_LOCK = threading.Lock()


def interceptors():
    """The interceptors a Temporal client takes to trace what it and its workers do."""
    return [_Interceptor(_provider().get_tracer("handloop.temporal"))]


def attach(run_id, created, span_id):
    """Make the stretch's `invoke_agent` span (`span_id`, in the run's trace) the current parent; a token for
    detach."""
    parent = SpanContext(otlp.trace_id(run_id, created), span_id, is_remote=True,
                         trace_flags=TraceFlags(TraceFlags.SAMPLED))
    return contexts.attach(api.set_span_in_context(NonRecordingSpan(parent)))


def detach(token):
    contexts.detach(token)


def flush():
    """Send what the batches hold now (bounded by FLUSH_MS); False when some of it did not leave, now or since
    the last flush."""
    with _LOCK:
        made = list(_PROVIDERS.values())
    flushed = all([provider.force_flush(FLUSH_MS) for provider, _ in made])
    failed = [exporter.failures for _, exporter in made]
    for _, exporter in made:
        exporter.failures = 0
    return flushed and not any(failed)


def _provider():
    settings = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("OTEL_")))
    with _LOCK:
        made = _PROVIDERS.get(settings)
        if made is None:
            otlp.quiet()
            named = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": SERVICE}
            provider = TracerProvider(resource=Resource.create(dict(named, **{"service.namespace": "handloop"})))
            provider.add_span_processor(_Conversation())
            exporter = otlp.exporter_for()
            provider.add_span_processor(BatchSpanProcessor(exporter if captured() else _Plain(exporter)))
            made = _PROVIDERS[settings] = (provider, exporter)
    return made[0]


class _Plain(SpanExporter):
    """The spans as the GenAI conventions allow them without the opt-in: an exception event keeps its type, an
    error status its code (their words are an exception's message: content)."""

    def __init__(self, exporter):
        self.exporter = exporter

    def export(self, spans):
        return self.exporter.export([_plain(s) for s in spans])

    def shutdown(self):
        self.exporter.shutdown()

    def force_flush(self, timeout_millis=30000):
        return self.exporter.force_flush(timeout_millis)


def _plain(span):
    events = [Event(e.name, {k: v for k, v in (e.attributes or {}).items() if k == "exception.type"}, e.timestamp)
              if e.name == "exception" else e for e in span.events]
    if events == list(span.events) and not span.status.description:
        return span
    return ReadableSpan(name=span.name, context=span.context, parent=span.parent, resource=span.resource,
                        attributes=span.attributes, events=events, links=span.links, kind=span.kind,
                        status=Status(span.status.status_code), start_time=span.start_time, end_time=span.end_time,
                        instrumentation_scope=span.instrumentation_scope)


class _Conversation(SpanProcessor):
    """Each Temporal span names the run it worked for: gen_ai.conversation.id = the workflow id = the run id."""

    def on_start(self, span, parent_context=None):
        run_id = (span.attributes or {}).get("temporalWorkflowID")
        if run_id:
            span.set_attribute("gen_ai.conversation.id", run_id)


class _Interceptor(TracingInterceptor):
    """temporalio's tracing interceptor on our tracer; an activity is traced only when its workflow was."""

    def intercept_activity(self, next):
        return _InRun(next, super().intercept_activity(_Named(next)), self.header_key)


class _InRun(ActivityInboundInterceptor):
    """An activity through the tracing interceptor when its input carries a trace, else untouched."""

    def __init__(self, plain, traced, key):
        super().__init__(plain)
        self.traced, self.key = traced, key

    def init(self, outbound):
        self.traced.init(outbound)              # the traced one wraps the plain one: one init down the chain

    async def execute_activity(self, input):
        chosen = self.traced if self.key in (input.headers or {}) else self.next
        return await chosen.execute_activity(input)


class _Named(ActivityInboundInterceptor):
    """Inside a traced activity's span: its attempt and, for a tool's, the call it runs."""

    async def execute_activity(self, input):
        span = api.get_current_span()
        if span.is_recording():
            span.set_attributes(_named(activity.info(), input.args))
        return await self.next.execute_activity(input)


def _named(info, args):
    named = {"handloop.attempt": info.attempt}
    if info.activity_type == "agent.tool" and args and isinstance(args[0], str):
        try:
            call = json.loads(args[0]).get("call") or {}
            named.update({"gen_ai.tool.name": str(call["function"]["name"])[:otlp.NAME_LIMIT],
                          "gen_ai.tool.call.id": str(call["id"])[:otlp.NAME_LIMIT]})
        except (ValueError, TypeError, KeyError, AttributeError):
            pass                               # a request of another shape: the span without the call
    return named

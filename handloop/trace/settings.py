"""What the environment asks of tracing: whether a stretch of work is exported as OpenTelemetry spans (`wanted`) and
whether message contents go into them (`capture`, the GenAI conventions' opt-in).

Invariants: reads only the environment given (os.environ by default); imports no project module, so that both the
exporting of a stretch (trace/send.py) and Temporal's tracing (trace/temporal.py) read it from below.
"""
import os

__all__ = ["CAPTURE", "CAPTURE_ON", "capture", "wanted"]

CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
CAPTURE_ON = ("1", "true", "yes", "on", "span_only", "span_and_event")


def wanted(environ=None):
    """Whether the environment asks for traces to be exported."""
    env = os.environ if environ is None else environ
    if str(env.get("OTEL_SDK_DISABLED", "")).strip().lower() == "true":
        return False
    if "none" in [e.strip().lower() for e in str(env.get("OTEL_TRACES_EXPORTER", "")).split(",")]:
        return False
    return bool(str(env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "")
                .strip())


def capture(environ=None):
    """Whether message contents go into the spans (the GenAI conventions' opt-in)."""
    env = os.environ if environ is None else environ
    return str(env.get(CAPTURE, "")).strip().lower() in CAPTURE_ON

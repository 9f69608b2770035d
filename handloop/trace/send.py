"""Whether a stretch of work is exported as OpenTelemetry spans, and doing it once the stretch is over.

Invariants: nothing is sent unless the environment names an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) and OpenTelemetry is not switched off (OTEL_SDK_DISABLED,
OTEL_TRACES_EXPORTER=none); opentelemetry is imported (through otlp.py) only then. The spans are made from the
audit file the stretch left, never from the live run; a missing SDK, a dead collector or anything else that goes
wrong is one line the caller prints (`finish` returns it), never an exception, never a changed outcome; an answer
that is not a success (a redirect included) is such a line, naming its HTTP status; the line never shows a
secret (the endpoint's user name and password, a header value of OTEL_EXPORTER_OTLP_[TRACES_]HEADERS: ***). Work done
elsewhere for the stretch (a run's workflow on Temporal) can be made the children of the stretch's span while it
runs (`within`): its span id is chosen when the stretch begins.
"""
import contextlib
import os
import secrets
import sys
import time
import urllib.parse

from ..values import redacted_url, scrubbed
from .settings import CAPTURE, CAPTURE_ON, capture, wanted

__all__ = ["CAPTURE", "CAPTURE_ON", "Stretch", "capture", "wanted"]


class Stretch:
    """A stretch of work of the run whose audit file is `path`, from now on: `turn` is the run's turn before
    it, `opened` how it began ("" for a new run, "confirm", "reply", "resume")."""

    def __init__(self, path, turn, opened=""):
        self.path, self.turn, self.opened = path, turn, opened
        self.on = wanted()
        self.started = time.time_ns()
        self.span_id = secrets.randbits(64) or 1          # its invoke_agent span's, chosen now

    @contextlib.contextmanager
    def within(self, run_id, created):
        """While it lasts, what is traced live (Temporal's client and, through it, the workflow and its
        activities: trace/temporal.py) is a child of this stretch's span in the trace of the run `run_id`
        created at `created`; nothing when export is off, the SDK is missing or the run's creation is unknown."""
        token = None
        if self.on and created:
            try:
                from . import temporal as live
                token = live.attach(run_id, created, self.span_id)
            except Exception:                  # no SDK, no contrib: the stretch is exported without them
                token = None
        try:
            yield
        finally:
            if token is not None:
                live.detach(token)

    def finish(self, say):
        """Export the stretch when asked for; None when all went well or nothing was asked, else the line
        that says why no trace was exported."""
        if not self.on:
            return None
        ended = time.time_ns()
        try:
            from . import otlp
        except ImportError as exc:
            return say("trace.no_sdk", error=exc.name or exc)
        try:
            from .. import audit
            from . import timeline
            snap = audit.load(self.path)
            finished = otlp.spans(snap, timeline.build(snap), self.turn, self.started, ended, self.opened,
                                  capture(), root=self.span_id)
            sent, status = otlp.send(finished) if finished else (True, None)
            if not sent and status:
                return say("trace.answered", endpoint=_endpoint(), status=status)
            if not (_flushed() and sent):
                return say("trace.not_sent", endpoint=_endpoint())
        except Exception as exc:               # an exporter's or a collector's fault never changes the run
            return say("trace.failed", error=scrubbed(f"{type(exc).__name__}: {exc}", _secrets())[:300])
        return None


def _flushed():
    """Temporal's spans of this process (trace/temporal.py, when it was used) sent; False when some did not leave."""
    live = sys.modules.get(__package__ + ".temporal")
    return live.flush() if live is not None else True


def _endpoint():
    """The endpoint the spans went to, as a line may show it (a user name and password as ***)."""
    return redacted_url(os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or
                        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


def _secrets():
    """What the exporter's settings hold that no line may show: each header value of OTEL_EXPORTER_OTLP_HEADERS and
    ..._TRACES_HEADERS (as written and decoded; a part that is not name=value, whole) and the endpoints' passwords."""
    found = []
    for key in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        for part in str(os.environ.get(key) or "").split(","):
            name, sep, value = part.partition("=")
            found += [value.strip(), urllib.parse.unquote(value).strip()] if sep else [part.strip()]
    for key in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        netloc = urllib.parse.urlsplit(str(os.environ.get(key) or "")).netloc
        if "@" in netloc:
            found += [netloc.rpartition("@")[0], *netloc.rpartition("@")[0].split(":", 1)]
    return [s for s in found if len(s) >= 4]

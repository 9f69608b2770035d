"""The terminal while a run works: the model's words as they arrive, each tool call once it is
complete, and a sign of life while nothing streams (waiting for the first token, tools running).

Invariants: one Console writes one stream, every write under one lock and flushed at once;
control characters (carriage return, erase line) are written only when the stream is a
terminal; anywhere else (a pipe, a log file) a sign of life is a plain line after every
`line_every` seconds of silence. The in-place line is erased before anything else is written,
and nothing else is ever erased: a partial line of the model's text is never overwritten (no
sign of life while a line of text is open). The model's text is shown without its control
characters (the record keeps it exactly as sent). The ticker is a daemon thread, started with
the first request and stopped by close(). What it says comes from the agent's catalogue in
texts/__init__.py (keys `live.*`).
"""
import re
import sys
import threading
import time
from typing import Any

from .. import texts

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")     # all but tab and newline
ERASE = "\r\x1b[K"
LIVE_KINDS = ("asking", "delta", "tool_call", "discard")


class Console:
    """Shows the live events of a run (see LIVE_KINDS) on `out`; `event()` says whether it took one."""

    def __init__(self, out=None, tty=None, lang="zh", tick=0.25, line_every=10.0, clock=time.monotonic):
        self.out = out or sys.stdout
        self.tty = _is_tty(self.out) if tty is None else tty
        self.texts, self.tick, self.line_every, self.clock = texts.of(lang), tick, line_every, clock
        self.lock, self.stopped = threading.Lock(), threading.Event()
        self.phase = None           # "waiting" or "tools" while nothing streams; None otherwise
        self.began = self.quiet = 0.0
        self.open = False           # a line of the model's text is open (no newline yet)
        self.ticking = False        # the in-place line is on screen
        self.shown = None           # what it says
        self.streamed = False       # text of this turn was shown as it came
        self.thread = None

    def say(self, key, **values):
        return self.texts("live." + key, **values)

    def event(self, kind, **data):
        """Show one live event; False when `kind` is not one (the caller shows it)."""
        if kind not in LIVE_KINDS:
            return False
        with self.lock:
            if kind == "asking":
                self._close_line()
                self._write(self.say("turn", turn=data["run"].turn + 1 if "run" in data else "?") + "\n")
                self.streamed = False
                self._wait("waiting")
            elif kind == "delta":
                text = CONTROL.sub("", data.get("text") or "")
                if text:
                    self._erase()
                    if not self.open:
                        self._write(self.say("model"))
                        self.open = True
                    self._write(text.replace("\n", "\n   "))
                    self.streamed, self.phase = True, None
            elif kind == "tool_call":
                call = data.get("call") or {}
                self._close_line()
                self._write(self.say("call", name=CONTROL.sub("", str(call.get("name") or "?")),
                                     arguments=CONTROL.sub("", str(call.get("arguments") or ""))[:160]) + "\n")
                self._wait("tools")
            else:                               # "discard"
                self._close_line()
                why: Any = data.get("why")        # the ModelError that voided the attempt, or what a caller gave
                told = why.text(self.texts) if hasattr(why, "text") else str(why or "") or type(why).__name__
                self._write(self.say("discard", why=CONTROL.sub(" ", told)[:160]) + "\n")
                self.streamed = False
                self._wait("waiting")
        if self.thread is None:
            self.thread = threading.Thread(target=self._ticker, daemon=True, name="live-ticker")
            self.thread.start()
        return True

    def settle(self):
        """Before the caller prints: the in-place line erased, an open line of text ended, no
        sign of life until the next live event. Returns whether this turn's text was shown."""
        with self.lock:
            self._close_line()
            self.phase = None
            return self.streamed

    def note(self, line, out=None):
        """A line of the caller's (a retry notice, perhaps on stderr) that keeps the phase."""
        with self.lock:
            self._close_line()
            target = out or self.out
            target.write(line + "\n")
            target.flush()
            self.quiet = self.clock()

    def close(self):
        self.settle()
        self.stopped.set()

    # ---- under the lock ----
    def _wait(self, phase):
        self.phase, self.began = phase, self.clock()
        self.quiet = self.began

    def _write(self, text):
        try:
            self.out.write(text)
            self.out.flush()
        except (OSError, ValueError):           # a closed or broken stdout must not stop the run
            pass

    def _erase(self):
        if self.ticking:
            self._write(ERASE)
            self.ticking, self.shown = False, None

    def _close_line(self):
        self._erase()
        if self.open:
            self._write("\n")
            self.open = False

    def _ticker(self):
        while not self.stopped.wait(self.tick):
            with self.lock:
                if self.phase is None or self.open:
                    continue
                now = self.clock()
                line = self.say("alive", what=self.say(self.phase), seconds=int(now - self.began))
                if self.tty and now - self.began >= 1:
                    if line != self.shown:
                        self._write(ERASE + line)
                        self.ticking, self.shown = True, line
                elif not self.tty and now - self.quiet >= self.line_every:
                    self._write(line + "\n")
                    self.quiet = now


def _is_tty(out):
    try:
        return out.isatty()
    except (AttributeError, ValueError, OSError):
        return False

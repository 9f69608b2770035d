"""Run the allowed calls of a turn, then flatten every outcome into tool messages.

Invariants: read-only calls run concurrently; calls that change run state and writes run one
at a time in request order, each seeing the effect of those before it (memory's own fold on a
fork: the run's own memory changes only in the loop). A tool declared inline (pure and
bounded) runs in the loop's thread: no hop, no timeout. Every other call has a timeout and runs
in a daemon thread, so abandoned work can never keep the process alive at exit; the threads
are reused (a new one starts only when none is idle, so a hung tool keeps its own thread and
never delays another call). An `async def` tool runs on the executor's own event loop (one
daemon thread), concurrently with the other async reads; at its timeout it is cancelled. A
write whose outcome is unknown at its timeout is reconciled through its idempotency key, never
retried blind. Every outcome is settled once (a result that is no JSON object wrapped as
{"value": ...}, fitted to the result limit, encoded as strict JSON): what memory absorbs is what
the tool message says. Flattening yields exactly one tool
message per call, in request order; a write that ran and did not succeed (an error, an unknown
outcome) is flattened with the note that the confirmation it ran on is spent.

A tool is untrusted code: whatever it raises (SystemExit and a KeyboardInterrupt of its own too,
inline, in a thread or on the event loop, which survives it) or returns (a value JSON cannot
hold, NaN) is a tool error, and so is a `reconcile` that fails. A write that returned has run,
whatever it returned: a result JSON cannot hold (values.Unencodable) is the receipt its
idempotency key stored (reconciled), else what it returned in a strict form (values.strict: NaN as
null...), noted in the result, never a write recorded as not run. Only the user's own interrupt
(calls.by_user) goes through, to stop the run.
"""
import asyncio
import os
import queue
import threading
import time

from . import config
from .calls import ZH, Outcome, ToolError, by_user
from .values import Unencodable, settled, strict, wrapped


def order(memory, calls, inline):
    """The order a turn's calls run in, defined here once for every driver (this executor, the Temporal
    workflow): the reads (kind "read") start together, the others run one at a time in request order,
    each seeing the state calls before it (on a fork of memory when there are several); `inline(call)`: a
    pure, bounded tool, run where the turn is driven.

    A generator: it yields ("start", call, view) — begin a call elsewhere, sent nothing back —,
    ("here", call, view) — run it now, sent its Outcome —, ("wait", call) — the Outcome of a started
    call, sent back —; it returns {call id: Outcome} in request order."""
    reads = [c for c in calls if c.kind == "read"]
    serial = [c for c in calls if c.kind != "read"]
    started = [c for c in reads if not inline(c)]
    for call in started:
        yield "start", call, memory
    outcomes, view = {}, memory.fork() if len(serial) > 1 else memory
    for call in reads:
        if inline(call):
            outcomes[call.id] = yield "here", call, memory
    for call in serial:
        if inline(call):
            outcomes[call.id] = yield "here", call, view
        else:
            yield "start", call, view
            outcomes[call.id] = yield "wait", call
        if call.kind == "state" and view is not memory:
            view.absorb(call, outcomes[call.id].result)
    for call in started:
        outcomes[call.id] = yield "wait", call
        outcomes[call.id].concurrent = len(started) > 1
    return {c.id: outcomes[c.id] for c in calls}


def execute(memory, calls, toolset, timeout=None, limit=None):
    """Run `calls` (already screened) in this process, in `order`; returns {call id: Outcome}. Each call
    gets `timeout` seconds, by default its tool's (`toolset.timeout_for`); results are fitted to `limit`."""
    limit, say = limit or config.TOOL_RESULT_MAX_CHARS, memory.say
    steps, handles, sent = order(memory, calls, toolset.inline), {}, None
    try:
        while True:
            step = steps.send(sent)
            sent = None
            if step[0] == "start":
                handles[step[1].id] = _start(toolset, step[1], step[2])
            elif step[0] == "here":
                sent = _inline(toolset, step[1], step[2], limit, say)
            else:
                sent = _outcome(handles[step[1].id], step[1], toolset, _timeout(toolset, step[1], timeout), limit, say)
    except StopIteration as done:
        return done.value


def _timeout(toolset, call, given):
    return toolset.timeout_for(call) if given is None else given


def _start(toolset, call, view):
    return _Async(toolset, call, view) if toolset.is_async(call) else _Job(toolset.run, call, view)


def _inline(toolset, call, view, limit, say):
    """A pure, bounded tool run here and now."""
    started = time.perf_counter()
    try:
        value, exc = toolset.run(call, view), None
    except BaseException as error:  # any failure of a tool is data for the model; the user's Ctrl-C is not
        if by_user(error):
            raise
        value, exc = None, error
    outcome = settle(value, exc, limit, say, doubt_for(call, toolset, say))
    outcome.seconds = time.perf_counter() - started
    config.fault("after_tool")
    return outcome


class _Job:
    """One call, handed to a daemon worker thread."""

    def __init__(self, fn, call, view):
        self.done, self.value, self.exc, self.seconds = threading.Lock(), None, None, 0.0   # held until done
        self.done.acquire()
        self.fn, self.call, self.view = fn, call, view
        self.started = time.perf_counter()
        _WORKERS.submit(self)

    def work(self):
        try:
            self.value = self.fn(self.call, self.view)
        except BaseException as exc:      # any failure of a tool is data for the model
            self.exc = exc
        finally:
            self.seconds = time.perf_counter() - self.started
            self.done.release()

    def wait(self, timeout):
        """Whether the job finished within `timeout` seconds of its start (asked once per job)."""
        return self.done.acquire(timeout=max(0.0, self.started + timeout - time.perf_counter()))


class _Async:
    """One async tool call, on the executor's event loop; cancelled at its timeout."""

    def __init__(self, toolset, call, view):
        self.call, self.started = call, time.perf_counter()
        self.value, self.exc, self.seconds = None, None, 0.0
        self.future = asyncio.run_coroutine_threadsafe(_shielded(toolset.run(call, view)), _loop())
        self.future.add_done_callback(self._finished)

    def _finished(self, future):
        self.seconds = time.perf_counter() - self.started
        if future.cancelled():
            self.exc = TimeoutError("cancelled")
        elif future.exception() is not None:
            exc = future.exception()
            self.exc = exc.error if isinstance(exc, _Raised) else exc
        else:
            self.value = future.result()

    def wait(self, timeout):
        try:
            self.future.result(max(0.0, self.started + timeout - time.perf_counter()))
        except BaseException:       # its failure is read from self.exc; a timeout is told by done()
            pass
        if not self.future.done():
            self.future.cancel()    # the coroutine is cancelled at its next await
            return False
        self._finished(self.future)
        return True


class _Raised(Exception):
    """What an async tool raised that asyncio would not keep inside its task (KeyboardInterrupt,
    SystemExit: they stop the event loop), carried out as an ordinary failure."""

    def __init__(self, error):
        super().__init__(error)
        self.error = error


async def _shielded(coro):
    """The tool's coroutine; whatever it raises is handed back as its failure, a cancellation stays one."""
    try:
        return await coro
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        raise _Raised(exc) from None


_LOOP: dict[int, object] = {}


def _loop():
    """The executor's event loop, on a daemon thread started at first use (again after a fork)."""
    loop = _LOOP.get(os.getpid())
    if loop is None:
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, daemon=True, name="tool-async").start()
        _LOOP.clear()
        _LOOP[os.getpid()] = loop
    return loop


class _Workers:
    """Daemon threads that run jobs; `idle` counts those waiting and not yet promised a job, so
    every submitted job has a free thread (an idle one, or a new one) and none waits behind a
    hung tool. A thread idle for `linger` seconds ends."""
    jobs: queue.SimpleQueue

    def __init__(self, linger=30.0):
        self.linger = linger
        self.reset()

    def reset(self):
        """Forget every worker: after a fork the child has none of the parent's threads."""
        self.jobs, self.lock, self.idle = queue.SimpleQueue(), threading.Lock(), 0

    def submit(self, job):
        with self.lock:
            spare = self.idle > 0
            self.idle -= spare
        self.jobs.put(job)
        if not spare:
            threading.Thread(target=self._serve, daemon=True, name="tool-worker").start()

    def _serve(self):
        while True:
            try:
                job = self.jobs.get(timeout=self.linger)
            except queue.Empty:
                with self.lock:
                    if self.idle > 0:     # nobody counts on this thread: end it
                        self.idle -= 1
                        return
                continue                  # promised to a job just put: take it
            threading.current_thread().name = f"tool-{job.call.name}"
            job.work()
            job = None                    # drop the finished job's references while idle
            with self.lock:
                self.idle += 1


_WORKERS = _Workers()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WORKERS.reset)


def _outcome(job, call, toolset, timeout, limit, say, concurrent=False):
    if not job.wait(timeout):
        outcome = _timed_out(call, toolset, timeout, say)
        outcome.result, outcome.content = settled(outcome.result, limit, say)
        outcome.seconds = time.perf_counter() - job.started
    else:
        outcome = settle(job.value, job.exc, limit, say, doubt_for(call, toolset, say))
        outcome.seconds = job.seconds
    outcome.concurrent = concurrent
    config.fault("after_tool")
    return outcome


def settle(value, exc, limit, say, doubt=None):
    """What a tool returned or raised, as the Outcome the record will hold (here, and for a call run elsewhere:
    in a Temporal workflow or activity). A result JSON cannot hold is a tool error, or for a write
    (`doubt(why, result)`, see doubt_for) the receipt it is kept as. What a cut MCP result says it dropped
    (toolset.Cut) stays with the outcome (`notice`), and so do a text result's content blocks (`blocks`)."""
    if exc is not None:
        message = _told(exc) if isinstance(exc, ToolError) else say("tool.internal", kind=type(exc).__name__,
                                                                   error=_told(exc))
        result, status = {"error": message}, "error"
    else:
        result = wrapped(value)                  # any JSON value: an object for the model, {"value": ...}
        status = "error" if "error" in result else "ok"
    outcome = Outcome({}, status=status, notice=getattr(value, "notice", None) if exc is None else None,
                      blocks=tuple(getattr(value, "blocks", ())) if exc is None else ())
    try:
        outcome.result, outcome.content = settled(result, limit, say)
    except Unencodable as why:
        if doubt is not None:
            outcome = doubt(str(why), result)
            outcome.result, outcome.content = settled(outcome.result, limit, say)
            return outcome
        outcome.status = "error"
        outcome.result, outcome.content = settled({"error": say("tool.unencodable", why=why)}, limit, say)
    return outcome


def _told(exc):
    """What an exception says, even when its own str() raises."""
    try:
        return str(exc)
    except Exception:
        return type(exc).__name__


def doubt_for(call, toolset, say):
    """For a write, how a result JSON cannot hold is settled: the write returned, so it ran. The receipt its
    idempotency key stored (reconciled through `toolset`; None: not looked up), else what it returned in its
    strict form (values.strict), with a note (`_strict`) of what was changed. None for any other call (its
    result is a tool error)."""
    if call.kind != "write":
        return None
    return lambda why, returned: _kept(call, toolset, say, returned)


def _kept(call, toolset, say, returned):
    receipt = _reconciled(call, toolset, say) if toolset is not None else None
    if receipt is not None:
        return receipt
    try:
        value, changed = strict(returned)
    except RecursionError:              # strict stops at STRICT_DEPTH; under a recursion limit lower still
        value, changed = {}, [".=<too deep>"]
    shown = "; ".join(c[:80] for c in changed[:5]) + (f"; +{len(changed) - 5}" if len(changed) > 5 else "")
    result = dict(value, _strict=say("tool.strict", changed=shown))
    return Outcome(result, status="error" if "error" in result else "ok")


def _timed_out(call, toolset, timeout, say):
    if call.kind != "write":
        return Outcome({"error": say("tool.timeout", tool=call.name, seconds=timeout)}, status="timeout")
    return _unsure(call, toolset, say, "tool.unknown", seconds=timeout)


def _unsure(call, toolset, say, key, **values):
    """A write whose outcome is unknown: the receipt its idempotency key stored (reconciled), else
    the unknown outcome, said with `key` (the model may retry: the key makes that safe)."""
    receipt = _reconciled(call, toolset, say) if toolset is not None else None
    if receipt is not None:
        return receipt
    return Outcome({"error": say(key, tool=call.name, **values), "outcome": "unknown"}, status="unknown")


def _reconciled(call, toolset, say):
    """The Outcome of the receipt a write's idempotency key stored (marked reconciled), or None. A reconcile
    that fails, or returns None, has found nothing; a receipt that is no JSON object is wrapped as a result
    is ({"value": ...})."""
    try:
        receipt = toolset.reconcile(call)
    except BaseException as exc:        # the store is locked, the tool's own code is wrong...
        if by_user(exc):
            raise
        return None
    if receipt is not None:
        try:
            return Outcome(settled(dict(wrapped(receipt), reconciled=True), config.TOOL_RESULT_MAX_CHARS, say)[0],
                           status="ok")
        except Unencodable:
            pass
    return None


def tool_messages(pending, outcomes, limit=None, say=ZH):
    """Exactly one tool message per call, in request order, each its settled outcome's text. A write that ran
    and did not succeed says that the confirmation it ran on is spent (`confirmation`: memory's fold spends it)."""
    messages, limit = [], limit or config.TOOL_RESULT_MAX_CHARS
    for call in pending:
        if call.id not in outcomes:
            raise RuntimeError(f"no outcome for tool call {call.id}: executor and guards lost a call")
        outcome = outcomes[call.id]
        if call.kind == "write" and outcome.guard is None and outcome.status != "ok":
            outcome.result, outcome.content = settled(dict(outcome.result, confirmation=say("write.spent")), limit, say)
        if not outcome.content:              # blocked by a guard: settled here
            outcome.result, outcome.content = settled(outcome.result, limit, say)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": outcome.content})
    return messages

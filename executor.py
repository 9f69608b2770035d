"""Run the allowed calls of a turn, then flatten every outcome into tool messages.

Invariants: read-only calls run concurrently; calls that change run state and writes run one
at a time in request order, each seeing the effect of those before it (through absorb on a
scratch copy: the run's own memory changes only in the loop). Every call has a timeout and
runs in a daemon thread, so abandoned work can never keep the process alive at exit; the
threads are reused (a new one starts only when none is idle, so a hung tool keeps its own
thread and never delays another call). A write
whose outcome is unknown at its timeout is reconciled through its idempotency key, never
retried blind. Flattening yields exactly one tool message per call, in request order.
"""
import copy
import json
import os
import queue
import threading
import time

import config
from memory import cut
from toolset import Outcome
from tools import ToolError


def execute(memory, calls, toolset, timeout=None):
    """Run `calls` (already screened); returns {call id: Outcome}. Each call gets `timeout`
    seconds, by default the tool set's own (`toolset.timeout`)."""
    timeout = toolset.timeout if timeout is None else timeout
    reads = [c for c in calls if toolset.kind(c.name) == "read"]
    serial = [c for c in calls if toolset.kind(c.name) != "read"]
    jobs = {c.id: _Job(toolset.run, c, memory) for c in reads}       # all reads start now, together
    outcomes, view = {}, memory
    for i, call in enumerate(serial):
        outcome = _outcome(_Job(toolset.run, call, view), call, toolset, timeout)
        outcomes[call.id] = outcome
        if toolset.kind(call.name) == "state" and i + 1 < len(serial):
            view = copy.deepcopy(view) if view is memory else view
            view.absorb(call, json.dumps(outcome.result, ensure_ascii=False))
    for call in reads:
        outcomes[call.id] = _outcome(jobs[call.id], call, toolset, timeout, concurrent=len(reads) > 1)
    return outcomes


class _Job:
    """One call, handed to a daemon worker thread."""

    def __init__(self, fn, call, view):
        self.done, self.value, self.exc, self.seconds = threading.Event(), None, None, 0.0
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
            self.done.set()

    def wait(self, timeout):
        return self.done.wait(max(0.0, self.started + timeout - time.perf_counter()))


class _Workers:
    """Daemon threads that run jobs; `idle` counts those waiting and not yet promised a job, so
    every submitted job has a free thread (an idle one, or a new one) and none waits behind a
    hung tool. A thread idle for `linger` seconds ends."""

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


def _outcome(job, call, toolset, timeout, concurrent=False):
    if not job.wait(timeout):
        outcome = _timed_out(call, toolset, timeout)
        outcome.seconds = time.perf_counter() - job.started
    elif job.exc is not None:
        message = str(job.exc) if isinstance(job.exc, ToolError) else f"工具内部错误：{type(job.exc).__name__}: {job.exc}"
        outcome = Outcome({"error": message}, status="error", seconds=job.seconds)
    else:
        value = job.value if isinstance(job.value, dict) else {"value": job.value}
        outcome = Outcome(value, status="error" if "error" in value else "ok", seconds=job.seconds)
    outcome.concurrent = concurrent
    config.fault("after_tool")
    return outcome


def _timed_out(call, toolset, timeout):
    if toolset.kind(call.name) != "write":
        return Outcome({"error": f"{call.name} 超过 {timeout:g} 秒没有返回，已放弃；可以稍后重试或换个做法"},
                       status="timeout")
    try:
        receipt = toolset.reconcile(call)
    except ToolError:
        receipt = None
    if receipt is not None:
        return Outcome(dict(receipt, reconciled=True), status="ok")
    return Outcome({"error": f"{call.name} 超过 {timeout:g} 秒没有返回，结果未知；按幂等键没有查到这笔预订。"
                    "可以用完全相同的参数重试，系统保证不会重复预订", "outcome": "unknown"}, status="unknown")


def tool_messages(pending, outcomes):
    """Exactly one tool message per call, in request order; long results cut head-and-tail."""
    messages = []
    for call in pending:
        if call.id not in outcomes:
            raise RuntimeError(f"no outcome for tool call {call.id}: executor and guards lost a call")
        content = json.dumps(outcomes[call.id].result, ensure_ascii=False)
        messages.append({"role": "tool", "tool_call_id": call.id,
                         "content": cut(content, config.TOOL_RESULT_MAX_CHARS)})
    return messages

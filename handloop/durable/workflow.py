"""Runs on Temporal, the workflow: a run is a workflow (id = run id) on a task queue; asking the
model, running a turn's tool calls and writing the audit file are activities (durable/worker.py);
the user's confirmation or reply is an update to the workflow (sent by durable/client.py). These
three are the only modules that import temporalio (requirements-temporal.txt); the command line
imports them only for --worker and --temporal (cli/temporal.py).

Workflow code is loop.turns(), the same generator a process drives (loop.run): compaction, the
guards, the memory fold, flattening and the decisions between them are pure, so the order of a turn
(compact before ask, screen before execute, audit after flatten) is the one in loop.py. What touches
the world goes out as an activity: `agent.ask` (the model client of the worker's environment),
`agent.tool` (one call, run by the executor with its tool's timeout; the calls of a turn are ordered
here as the executor orders them: reads together, the others in request order, pure inline tools in
workflow code), `agent.save` (a local activity: audit.Writer, the same file, atomically, under the
run lock) and `agent.begin` (a local activity too: a new run's first snapshot, or an existing run's file,
loaded and checked). Round trips are few: begin, save and short reads (a read tool's call whose timeout
is at most LOCAL_READ_SECONDS) run in the worker that runs the workflow task (no trip through the
server, no workflow task of their own), and the save due before an ask goes with that ask, written by
its activity before it asks (a save of its own only before another call, a wait or the end); workflows
whose histories began before that (workflow.patched FEWER_TRIPS) replay as they ran.

Bounded whatever the run's length: no payload carries the record. A save carries what changed
since the last one (the loop only appends messages and trace records, and replaces messages[0]
whole); an ask carries where its request comes from (the audit file the saves wrote, how many
messages, and the digest of the request the workflow made), and the activity assembles the same
request from the file (the request itself is sent only when the file cannot give it); a run's
state enters a workflow by reference (`Opened`: inline when small, else an immutable checkpoint
file named by its digest, read once at the start like the agent file, and verified). Before the
history grows past its bound (start["limits"]: bytes and events, or the server's suggestion) the
workflow continues as new between two turns, from a checkpoint of its audit file: the same
workflow id, audit file and run; an update waiting on it is answered by the next run of the
workflow (durable_client.py waits again there).

Invariants: workflow code reads no clock but the workflow's (loop.Run.clock), writes nothing but
through the save activity or an ask carrying it (loop.Run.writer keeps what changed since the last save,
written before the workflow touches the world again and before it waits or ends; a carried save not known
written is sent again), starts no thread and draws no random number; our modules are passed through the
sandbox (or run unsandboxed when a worker says so: runner), the agent file of a run is loaded as code once per
workflow, like an import, and so is a checkpoint (immutable, checked against the digest its history
records). No payload grows with the run: saves and asks as above, tool results as the policy cuts them. A suspended run is a workflow waiting for an update
(workflow.wait_condition): no worker is busy with it. Every way out records status and reason in
the audit file, as loop.finish does on one machine.
"""
import asyncio
import datetime
import hashlib
import json
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():     # absolute: the sandbox passes modules through by name
    from handloop import audit, executor, loop, runs, texts
    from handloop.calls import HookError, Outcome
    from handloop import parts
    from handloop.model import ModelError, Reply

WORKFLOW = "AgentRun"


def runner(sandboxed=True):
    """The workflow runner every worker and replayer uses: Temporal's sandbox, with our package passed through
    (its modules are imported once per process, as the workflow's deterministic code and its pure helpers);
    unsandboxed when asked (AGENT_TEMPORAL_SANDBOX=0, serve(sandboxed=False)): the same code, without the sandbox's
    checks that workflow code (an agent's inline tools included) reads no clock, file or random number."""
    if not sandboxed:
        from temporalio.worker import UnsandboxedWorkflowRunner
        return UnsandboxedWorkflowRunner()
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions
    return SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules("handloop"))


def pack(value):
    """Our data as one JSON text: Temporal's converter sorts the keys of objects it encodes, and the
    record keeps them in the order they came (messages as the model sent them, snapshots as written)."""
    return json.dumps(value, ensure_ascii=False)


unpack = json.loads


def digest(text):
    """The digest that names a payload's content (sha256 of its UTF-8 text, hex)."""
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def opened(ref):
    """The snapshot a reference stands for: {"snapshot": its text} inline, or {"checkpoint": path,
    "digest": ...}, an immutable file read here (once per workflow, like the agent file) and checked
    against its digest; an ApplicationError (the workflow fails, the run stays resumable) when the
    file is gone or not what it was."""
    if "snapshot" in ref:
        return unpack(ref["snapshot"])
    try:
        with workflow.unsafe.sandbox_unrestricted(), open(ref["checkpoint"], "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ApplicationError(f"checkpoint {ref['checkpoint']} cannot be read: {exc}", type="CheckpointLost",
                               non_retryable=True) from None
    if digest(data) != ref["digest"]:
        raise ApplicationError(f"checkpoint {ref['checkpoint']} is not the one recorded", type="CheckpointLost",
                               non_retryable=True)
    return json.loads(data)


class WorkflowClock:
    """The workflow's clock (its history's time), standing for the process's in loop.Run.clock."""

    @staticmethod
    def monotonic():
        return workflow.time()

    @staticmethod
    def stamp():
        return workflow.now().strftime("%Y-%m-%dT%H:%M:%S%z")


class Pending:
    """Stands for audit.Writer in a workflow: keeps the newest snapshot as what changed since the
    one the save activity wrote last (new messages and trace records, messages[0] when it was
    replaced, every other field whole; the record's fields stay in their places, empty), copied
    when it is taken (the run goes on changing), for the save activity to write."""

    def __init__(self, r):
        self.snapshot = None
        self.sent = self.taken = (len(r.messages), len(r.trace), r.messages[0])   # what the file holds
        self.epoch = r.window.to_dict()

    def write(self, snapshot):
        messages, trace = snapshot["messages"], snapshot["trace"]
        n, t, first = self.sent
        delta = {"head": {k: (None if k in ("messages", "trace") else v) for k, v in snapshot.items()},
                 "from": n, "messages": messages[n:], "trace_from": t, "trace": trace[t:]}
        if messages[0] is not first:
            delta["first"] = messages[0]
        self.snapshot = pack(delta)
        self.taken, self.epoch = (len(messages), len(trace), messages[0]), snapshot["epoch"]

    def written(self):
        self.sent = self.taken

    def current(self, r):
        """Whether the file, once the pending snapshot is written, holds the run as it is now."""
        return self.taken[0] == len(r.messages) and self.taken[2] is r.messages[0] and self.epoch == r.window.to_dict()


class Lost(Exception):
    """An activity of the turn could not be done, its retries spent."""


class Continue(Exception):
    """The history has grown past its bound: the workflow continues as new before the next turn."""


class World:
    """What a turn does to the world, done by activities; a run's snapshots saved by one."""

    def __init__(self, r, toolset, start):
        self.r, self.toolset, self.start = r, toolset, start
        self.ref = {"run_id": r.run_id, "audit_dir": start["audit_dir"], "mode": r.mode, "agent": r.declared,
                    "visible": r.policy.tools, "offline": start.get("offline", False), "model": start.get("model"),
                    **({"mcp_url": r.mcp_url} if r.mcp_url else {})}
        beat = datetime.timedelta(seconds=start["limits"]["heartbeat"])
        self.options: dict[str, Any] = {"heartbeat_timeout": beat,
                                        "retry_policy": RetryPolicy(initial_interval=datetime.timedelta(seconds=1),
                                                                    maximum_attempts=5)}

    async def ask(self, effect):
        """The model's reply to effect.outgoing, asked by the ask activity, which assembles that request
        from the audit file (the request goes along only when the file does not give it)."""
        r = self.r
        if not r.writer.current(r):                   # an epoch began in this turn: the file has it first
            loop.save(r)
            if not self.carries():
                await self.flush()
        head = effect.outgoing[0] if effect.outgoing[0] is not r.messages[0] else None
        request = {"run": self.ref, "path": r.path, "count": len(r.messages), "head": head,
                   "digest": digest(pack(effect.outgoing)), "final": effect.final, "force": effect.force}
        saving = r.writer.snapshot if self.carries() else None
        if saving is not None:                        # the save due before it goes with it, written first
            r.writer.snapshot = None
        try:
            got = await self._ask(dict(request, save=saving) if saving is not None else request)
        except BaseException:
            if saving is not None and r.writer.snapshot is None:
                r.writer.snapshot = saving            # not known written: the next flush sends it again
            raise
        if saving is not None:
            r.writer.written()
        if got.get("mismatch"):
            got = await self._ask(dict(request, outgoing=effect.outgoing, tools=r.tools))
        if "error" in got:
            error = got["error"]
            raise ModelError(error["kind"], error["text"], tokens=error["tokens"])   # said by the activity already
        return Reply(**got["reply"])

    async def _ask(self, request):
        try:
            got = await workflow.execute_activity(
                "agent.ask", pack(request),
                start_to_close_timeout=datetime.timedelta(seconds=self.start["limits"]["ask"]), **self.options)
        except ActivityError as exc:
            if _cause_type(exc) == "AuditLost":        # the save it carried could not be written: as flush says
                raise ApplicationError(self.r.say("temporal.lost", what="agent.save", error=_cause(exc)),
                                       type="AuditLost", non_retryable=True) from None
            raise ModelError("unreachable", self.r.say("temporal.lost", what="agent.ask", error=_cause(exc)))
        return unpack(got)

    @staticmethod
    def carries():
        """Whether an ask carries the save due before it (workflows begun before that change replay as they ran:
        the save a local activity of its own; workflow.patched answers the same all along a workflow run)."""
        return workflow.patched(FEWER_TRIPS)

    def grown(self):
        """Whether the history has grown past its bound (or the server suggests continuing as new)."""
        info, limits = workflow.info(), self.start["limits"]
        return info.is_continue_as_new_suggested() or \
            info.get_current_history_size() > limits.get("history_bytes", HISTORY_BYTES) or \
            info.get_current_history_length() > limits.get("history_events", HISTORY_EVENTS)

    async def checkpoint(self):
        """A reference to the run's state as its audit file holds it now (a checkpoint, when large)."""
        await self.flush()
        try:
            got = await workflow.execute_local_activity(
                "agent.checkpoint", pack({"path": self.r.path}), start_to_close_timeout=datetime.timedelta(seconds=120),
                retry_policy=RetryPolicy(initial_interval=datetime.timedelta(seconds=1), maximum_attempts=20))
        except ActivityError as exc:
            raise ApplicationError(self.r.say("temporal.lost", what="agent.checkpoint", error=_cause(exc)),
                                   type="AuditLost", non_retryable=True) from None
        return unpack(got)

    async def execute(self, effect):
        """The allowed calls in executor.order, as on one machine: a pure, bounded (inline) tool runs here,
        in workflow code; every other call is an activity of its own (the reads started together)."""
        steps, started, sent = executor.order(self.r.memory, effect.calls, self.toolset.inline), {}, None
        try:
            while True:
                step = steps.send(sent)
                sent = None
                if step[0] == "start":
                    started[step[1].id] = asyncio.ensure_future(self._call(step[1], step[2]))
                elif step[0] == "here":
                    sent = self._here(step[1], step[2])
                else:
                    sent = await started[step[1].id]
        except StopIteration as done:
            return done.value

    def _here(self, call, view):
        """A pure, bounded tool's call, run in workflow code (no clock: it takes no time worth a record)."""
        try:
            value, error = self.toolset.run(call, view), None
        except Exception as exc:              # any failure of a tool is data for the model, as in the executor
            value, error = None, exc
        return executor.settle(value, error, self.r.policy.result_max_chars, self.r.say,
                               executor.doubt_for(call, None, self.r.say))   # no store touched in workflow code

    async def _call(self, call, view):
        """One call as an activity: the tool's own timeout inside (the executor's), a margin outside. A read
        whose tool answers within LOCAL_READ_SECONDS is a local activity (no round trip through the server; a
        read may run again when its worker is lost); a write, a state call and a long read go to any worker,
        each attempt numbered (a write's later attempt reconciles by its key first)."""
        raw = {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
        seconds = self.toolset.timeout_for(call)
        request = pack({"run": self.ref, "call": raw, "plan": view.plan, "done": sorted(view.done_tools),
                        "limit": self.r.policy.result_max_chars, **({"tools": self.r.tools} if self.r.mode == "mcp" else {})})
        limit = datetime.timedelta(seconds=seconds + 30)
        try:
            if call.kind == "read" and seconds <= LOCAL_READ_SECONDS and self.carries():
                got = await workflow.execute_local_activity(      # a short read, done where the workflow runs
                    "agent.tool", request, start_to_close_timeout=limit, retry_policy=self.options["retry_policy"])
            else:
                got = await workflow.execute_activity("agent.tool", request, start_to_close_timeout=limit, **self.options)
        except ActivityError as exc:
            raise Lost(self.r.say("temporal.lost", what=f"agent.tool {call.name}", error=_cause(exc))) from None
        return Outcome(**unpack(got))

    async def flush(self):
        """The newest snapshot, written by the save activity (nothing when there is none)."""
        writer = self.r.writer
        if writer.snapshot is None:
            return
        snapshot, writer.snapshot = writer.snapshot, None
        try:
            await workflow.execute_local_activity(        # in the worker that runs the workflow: no extra round trip
                "agent.save", pack({"path": self.r.path, "snapshot": snapshot}),
                start_to_close_timeout=datetime.timedelta(seconds=60),
                retry_policy=RetryPolicy(initial_interval=datetime.timedelta(seconds=1), maximum_attempts=20))
        except ActivityError as exc:
            raise ApplicationError(self.r.say("temporal.lost", what="agent.save", error=_cause(exc)),
                                   type="AuditLost", non_retryable=True) from None
        writer.written()


def _cause_type(exc):
    cause = getattr(exc, "cause", None)
    return getattr(cause, "type", None)


def _cause(exc):
    cause = exc.cause if getattr(exc, "cause", None) is not None else exc
    return str(getattr(cause, "message", None) or cause)[:300]


async def drive(steps, world):
    """loop.turns() driven from a workflow: each effect done by an activity, the newest snapshot
    saved before anything else touches the world and before the generator's end is returned.
    Raises Continue at the start of a turn (before its question) once the history is past its bound:
    the audit file then holds the run whole, and a resume from it asks that same question."""
    sent, thrown = None, None
    while True:
        try:
            effect = steps.throw(thrown) if thrown is not None else steps.send(sent)
        except StopIteration as end:
            await world.flush()
            return end.value
        except HookError as exc:              # the agent's own code failed: stopped, as on one machine
            loop.hook_failed(world.r, exc)
            await world.flush()
            return world.r
        if not (isinstance(effect, loop.Ask) and world.carries()):
            await world.flush()               # the audit file first: audit after flatten, before the next touch
        if isinstance(effect, loop.Ask) and not effect.final and world.grown():
            steps.close()
            loop.stop_clock(world.r)
            loop.save(world.r)
            raise Continue()
        sent, thrown = None, None
        try:
            sent = await (world.ask(effect) if isinstance(effect, loop.Ask) else world.execute(effect))
        except ModelError as exc:
            thrown = exc
        except Lost as exc:                   # the turn's calls went unheard: the record stays as it was
            steps.close()
            loop.finish(world.r, "error", "worker_lost", str(exc))
            await world.flush()
            return world.r


def recorded_agent(audit_dir, recorded):
    """The agent a run records, loaded as code (its file is read once per workflow, like an import)."""
    with workflow.unsafe.sandbox_unrestricted(), workflow.unsafe.imports_passed_through():
        return parts.agent_of(audit_dir, recorded)


def toolset_for(audit_dir, run_id):
    def make(snap):
        agent = recorded_agent(audit_dir, snap.get("agent"))
        with workflow.unsafe.sandbox_unrestricted():   # MCP sessions made, never opened here (a server's token is read)
            return parts.tool_set(run_id, snap["mode"], agent, schemas=snap["tools"],
                                  visible=(snap.get("policy") or {}).get("tools"), mcp_url=snap.get("mcp_url"))
    return make


async def _begin(start):
    """The begin activity's reference to the run's first snapshot: a local activity, in the worker that runs
    the workflow's first task (no round trip through the server, no workflow task of its own); a workflow
    whose history began it as an activity (before this change) replays as it ran."""
    timeout, retry = datetime.timedelta(seconds=60), RetryPolicy(initial_interval=datetime.timedelta(seconds=1),
                                                                 maximum_attempts=5)
    if workflow.patched(FEWER_TRIPS):
        return await workflow.execute_local_activity("agent.begin", start, start_to_close_timeout=timeout,
                                                     retry_policy=retry)
    return await workflow.execute_activity("agent.begin", start, start_to_close_timeout=timeout, retry_policy=retry)


FEWER_TRIPS = "begin-local-save-with-ask"   # workflow.patched: the begin activity became a local activity, the
#                                           save due before an ask goes with the ask, no save of its own after an answer,
#                                           short reads are local activities
LOCAL_READ_SECONDS = 10.0            # a read whose tool's timeout is at most this runs as a local activity
FINAL = ("done", "stopped")
HISTORY_BYTES = 4 * 1024 * 1024      # a workflow continues as new before its history passes this (server limit: 50 MB)
HISTORY_EVENTS = 4000                # or this many events (server limit: 51,200)


@workflow.defn(name=WORKFLOW)
class AgentRun:
    """One run: begun (or opened from its audit file), driven turn by turn, waiting for the user
    whenever it is suspended (or failed, or cut off), until it is done or stopped."""

    def __init__(self):
        self.r, self.inbox, self.settled, self.state, self.working = None, [], 0, {"status": "starting"}, True

    @workflow.run
    async def run(self, start):
        ref = start.get("opened")                     # continued as new: the run's state, by reference
        if ref is None:
            ref = unpack(await _begin(start))
        if "refused" in ref:
            self.state = {"status": "refused", "detail": ref["refused"]}
            return self.state
        path, snap = audit.path_for(start["audit_dir"], start["run_id"]), opened(ref)
        try:
            r, toolset, _ = runs.restore(path, snap, toolset_for(start["audit_dir"], start["run_id"]))
        except HookError as exc:                      # the agent's own code fails on its record: said, not retried
            self.state = {"status": "refused", "detail": texts.told(exc, runs.language_of(snap))}
            return self.state
        r.clock, r.writer, self.r = WorkflowClock(), Pending(r), r
        world = World(r, toolset, start)
        try:
            await self._carry(r, toolset, world, start)
        except Continue:
            onward = {k: v for k, v in start.items() if k != "opened"}
            workflow.continue_as_new(dict(onward, opened=await world.checkpoint(), open=False))
        return self.state

    async def _carry(self, r, toolset, world, start):
        """The run from here to its end, waiting for the user whenever it waits (raises Continue)."""
        if r.temporal is None:                       # a run moved onto Temporal: its file says so from now on
            r.temporal = {"queue": workflow.info().task_queue}
            loop.save(r)
            await world.flush()
        if not start.get("open"):
            await drive(loop.turns(r, toolset), world)
        while True:
            self._settle(r)
            self.working = False
            if r.status in FINAL and not (r.status == "stopped" and r.reason in runs.RESUMABLE_STOPS):
                await workflow.wait_condition(workflow.all_handlers_finished)
                return
            await workflow.wait_condition(lambda: bool(self.inbox))      # waiting costs no worker
            how, text = self.inbox.pop(0)
            self.working = True
            runs.answer(r, how, text)                                   # recorded as on one machine
            if not world.carries():                 # else saved before its first effect, or with it (drive)
                await world.flush()
            await drive(loop.turns(r, toolset), world)

    def _settle(self, r):
        self.state = {"run_id": r.run_id, "status": r.status, "reason": r.reason, "detail": r.detail,
                      "turn": r.turn, "tokens": r.memory.used_tokens, "path": r.path}
        self.settled += 1

    @workflow.query
    def where(self):
        return self.state

    @workflow.update(unfinished_policy=workflow.HandlerUnfinishedPolicy.ABANDON)   # continued as new: asked again there
    async def settle(self):
        """Where the run stands once it waits or ends (the starter's wait)."""
        await workflow.wait_condition(lambda: self.settled > 0 or self.state.get("status") == "refused")
        return self.state

    @workflow.update(unfinished_policy=workflow.HandlerUnfinishedPolicy.ABANDON)
    async def answer(self, how, text):
        """The user's part ("confirm", "reply" with its text, "resume"); returns where the run stands
        once it waits or ends again."""
        mark = self.settled
        self.inbox.append((how, text))
        await workflow.wait_condition(lambda: self.settled > mark)
        return self.state

    @answer.validator
    def _acceptable(self, how, text):
        """Refuse what one machine refuses: a run in a state that way of resuming does not take, a
        reply that is empty or a confirmation; and an answer while the run still works on the last."""
        r = self.r
        if r is None or self.inbox or self.working:
            raise ApplicationError(texts.of("zh")("temporal.busy") if r is None else r.say("temporal.busy"),
                                   type="Refused")
        say = r.say
        state = {"run_id": r.run_id, "status": r.status, "reason": r.reason, "agent": r.declared}
        try:
            runs.accept(how, state, say)
            if how == "reply" and (not (text or "").strip() or r.agent.confirms(text.strip())):
                raise runs.Refused(say("resume.bad_reply"))
        except runs.Refused as exc:
            raise ApplicationError(texts.told(exc, say), type="Refused") from None

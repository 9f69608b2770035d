"""Runs on Temporal: a run is a workflow (id = run id) on a task queue; asking the model, running a
turn's tool calls and writing the audit file are activities; the user's confirmation or reply is an
update to the workflow. The only module that imports temporalio (requirements-temporal.txt).

Workflow code is loop.turns(), the same generator a process drives (loop.run): compaction, the
guards, the memory fold, flattening and the decisions between them are pure, so the order of a turn
(compact before ask, screen before execute, audit after flatten) is the one in loop.py. What touches
the world goes out as an activity: `agent.ask` (the model client of the worker's environment),
`agent.tool` (one call, run by the executor with its tool's timeout; the calls of a turn are ordered
here as the executor orders them: reads together, the others in request order, pure inline tools in
workflow code), `agent.save` (a local activity: audit.Writer, the same file, atomically, under the
run lock) and `agent.begin` (a new run's first snapshot, or an existing run's file, loaded and checked).

Invariants: workflow code reads no clock but the workflow's (loop.Run.clock), writes nothing but
through the save activity (loop.Run.writer keeps the newest snapshot, written before the workflow
touches the world again and before it waits or ends), starts no thread and draws no random number;
our modules are passed through the sandbox, the agent file of a run is loaded as code once per
workflow, like an import. A write is never retried blind: an attempt of `agent.tool` after the
first asks the tool's `reconcile` with the write's idempotency key before running it again, and the
store's UNIQUE key holds whatever happens. A suspended run is a workflow waiting for an update
(workflow.wait_condition): no worker is busy with it. Every way out records status and reason in
the audit file, as loop.finish does on one machine.
"""
import asyncio
import concurrent.futures
import dataclasses
import datetime
import json
import os

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    import audit
    import config
    import executor
    import loop
    import runs
    import session
    import texts
    from calls import Outcome
    from model import ModelError, Reply

WORKFLOW = "AgentRun"
QUEUE = "agent-runs"
ADDRESS = "127.0.0.1:7233"
HEARTBEAT = 10.0           # seconds without a heartbeat before an activity counts as lost (its worker died)
STICKY = 5.0               # seconds a workflow task waits for the worker that has the run cached


def pack(value):
    """Our data as one JSON text: Temporal's converter sorts the keys of objects it encodes, and the
    record keeps them in the order they came (messages as the model sent them, snapshots as written)."""
    return json.dumps(value, ensure_ascii=False)


unpack = json.loads


def where(env=None):
    """(address, task queue) from AGENT_TEMPORAL_ADDRESS and AGENT_TEMPORAL_QUEUE."""
    env = os.environ if env is None else env
    return env.get("AGENT_TEMPORAL_ADDRESS") or ADDRESS, env.get("AGENT_TEMPORAL_QUEUE") or QUEUE


def limits(env=None):
    """The activities' time limits a new workflow records, from the starter's environment."""
    env = os.environ if env is None else env
    settings = config.settings(env)
    heartbeat = float(env.get("AGENT_TEMPORAL_HEARTBEAT") or HEARTBEAT)
    ask = (settings["model_max_seconds"] + settings["model_timeout"]) * (settings["model_retries"] + 1) \
        + config.RETRY_CAP * settings["model_retries"]
    return {"heartbeat": heartbeat, "ask": ask}


# ---- workflow code: deterministic ----
class WorkflowClock:
    """The workflow's clock (its history's time), standing for the process's in loop.Run.clock."""

    @staticmethod
    def monotonic():
        return workflow.time()

    @staticmethod
    def stamp():
        return workflow.now().strftime("%Y-%m-%dT%H:%M:%S%z")


class Pending:
    """Stands for audit.Writer in a workflow: keeps the newest snapshot, copied when it is taken
    (the run goes on changing), for the save activity to write."""

    def __init__(self):
        self.snapshot = None

    def write(self, snapshot):
        self.snapshot = pack(snapshot)


class Told(texts.Said):
    """A text said already (a ModelError's words, rendered by the activity in the run's language)."""

    def __init__(self, text):
        super().__init__("", text=text)
        self.text = text

    def __call__(self, say):
        return self.text


class Lost(Exception):
    """An activity of the turn could not be done, its retries spent."""


class World:
    """What a turn does to the world, done by activities; a run's snapshots saved by one."""

    def __init__(self, r, toolset, start):
        self.r, self.toolset, self.start = r, toolset, start
        self.ref = {"run_id": r.run_id, "audit_dir": start["audit_dir"], "mode": r.mode, "agent": r.declared,
                    "visible": r.policy.tools, "offline": start.get("offline", False), "model": start.get("model")}
        beat = datetime.timedelta(seconds=start["limits"]["heartbeat"])
        self.options = {"heartbeat_timeout": beat,
                        "retry_policy": RetryPolicy(initial_interval=datetime.timedelta(seconds=1), maximum_attempts=5)}

    async def ask(self, effect):
        try:
            got = await workflow.execute_activity(
                "agent.ask", pack({"run": self.ref, "outgoing": effect.outgoing, "tools": self.r.tools,
                                   "final": effect.final, "force": effect.force}),
                start_to_close_timeout=datetime.timedelta(seconds=self.start["limits"]["ask"]), **self.options)
        except ActivityError as exc:
            raise ModelError("unreachable", Told(self.r.say("temporal.lost", what="agent.ask", error=_cause(exc))))
        got = unpack(got)
        if "error" in got:
            error = got["error"]
            raise ModelError(error["kind"], Told(error["text"]), tokens=error["tokens"])
        return Reply(**got["reply"])

    async def execute(self, effect):
        """The allowed calls as executor.execute runs them on one machine: the reads started together,
        the others one at a time in request order, each seeing the state calls before it; a pure,
        bounded (inline) tool runs here, in workflow code; every other call is an activity of its own."""
        memory, toolset, calls = self.r.memory, self.toolset, effect.calls
        reads = [c for c in calls if c.kind == "read"]
        serial = [c for c in calls if c.kind != "read"]
        waiting = {c.id: asyncio.ensure_future(self._call(c, memory)) for c in reads if not toolset.inline(c)}
        outcomes, view = {}, memory.fork() if len(serial) > 1 else memory
        for call in reads:
            if call.id not in waiting:
                outcomes[call.id] = self._here(call, memory)
        for call in serial:
            outcomes[call.id] = self._here(call, view) if toolset.inline(call) else await self._call(call, view)
            if call.kind == "state" and view is not memory:
                view.absorb(call, outcomes[call.id].result)
        for call in reads:
            if call.id in waiting:
                outcomes[call.id] = await waiting[call.id]
                outcomes[call.id].concurrent = len(waiting) > 1
        return {c.id: outcomes[c.id] for c in calls}

    def _here(self, call, view):
        """A pure, bounded tool's call, run in workflow code (no clock: it takes no time worth a record)."""
        try:
            value, error = self.toolset.run(call, view), None
        except Exception as exc:              # any failure of a tool is data for the model, as in the executor
            value, error = None, exc
        return executor.settle(value, error, self.r.policy.result_max_chars, self.r.say)

    async def _call(self, call, view):
        """One call as an activity: the tool's own timeout inside (the executor's), a margin outside."""
        raw = {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
        seconds = self.toolset.timeout_for(call)
        try:
            got = await workflow.execute_activity(
                "agent.tool", pack({"run": self.ref, "call": raw, "plan": view.plan, "done": sorted(view.done_tools),
                                    "limit": self.r.policy.result_max_chars}),
                start_to_close_timeout=datetime.timedelta(seconds=seconds + 30), **self.options)
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


def _cause(exc):
    cause = exc.cause if getattr(exc, "cause", None) is not None else exc
    return str(getattr(cause, "message", None) or cause)[:300]


async def drive(steps, world):
    """loop.turns() driven from a workflow: each effect done by an activity, the newest snapshot
    saved before anything else touches the world and before the generator's end is returned."""
    sent, thrown = None, None
    while True:
        try:
            effect = steps.throw(thrown) if thrown is not None else steps.send(sent)
        except StopIteration as end:
            await world.flush()
            return end.value
        await world.flush()                   # the audit file first: audit after flatten, before the next touch
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
        return session.agent_for(audit_dir, None, recorded)


def toolset_for(audit_dir, run_id):
    def make(snap):
        return session.tool_set(audit_dir, run_id, snap["mode"], schemas=snap["tools"],
                                visible=(snap.get("policy") or {}).get("tools"),
                                agent=recorded_agent(audit_dir, snap.get("agent")))
    return make


FINAL = ("done", "stopped")


@workflow.defn(name=WORKFLOW)
class AgentRun:
    """One run: begun (or opened from its audit file), driven turn by turn, waiting for the user
    whenever it is suspended (or failed, or cut off), until it is done or stopped."""

    def __init__(self):
        self.r, self.inbox, self.settled, self.state, self.working = None, [], 0, {"status": "starting"}, True

    @workflow.run
    async def run(self, start):
        snap = await workflow.execute_activity(
            "agent.begin", start, start_to_close_timeout=datetime.timedelta(seconds=60),
            retry_policy=RetryPolicy(initial_interval=datetime.timedelta(seconds=1), maximum_attempts=5))
        snap = unpack(snap)
        if "refused" in snap:
            self.state = {"status": "refused", "detail": snap["refused"]}
            return self.state
        path = audit.path_for(start["audit_dir"], start["run_id"])
        r, toolset, _ = runs.restore(path, snap, toolset_for(start["audit_dir"], start["run_id"]))
        r.clock, r.writer, self.r = WorkflowClock(), Pending(), r
        world = World(r, toolset, start)
        if r.temporal is None:                       # a run moved onto Temporal: its file says so from now on
            r.temporal = {"queue": workflow.info().task_queue}
            loop.save(r)
            await world.flush()
        if not start.get("open"):
            await drive(loop.turns(r, toolset), world)
        while True:
            self._settle()
            self.working = False
            if r.status in FINAL and not (r.status == "stopped" and r.reason in runs.RESUMABLE_STOPS):
                await workflow.wait_condition(workflow.all_handlers_finished)
                return self.state
            await workflow.wait_condition(lambda: bool(self.inbox))      # waiting costs no worker
            how, text = self.inbox.pop(0)
            self.working = True
            runs.answer(r, how, text)                                   # recorded as on one machine
            await world.flush()
            await drive(loop.turns(r, toolset), world)

    def _settle(self):
        r = self.r
        self.state = {"run_id": r.run_id, "status": r.status, "reason": r.reason, "detail": r.detail,
                      "turn": r.turn, "tokens": r.memory.used_tokens, "path": r.path}
        self.settled += 1

    @workflow.query
    def where(self):
        return self.state

    @workflow.update
    async def settle(self):
        """Where the run stands once it waits or ends (the starter's wait)."""
        await workflow.wait_condition(lambda: self.settled > 0 or self.state.get("status") == "refused")
        return self.state

    @workflow.update
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


# ---- activities: the world ----
class Seen:
    """What a call run alone in an activity sees of its run: the language, the plan and the tools that
    succeeded (what a tool may take from the run; memory itself is never passed to a tool)."""

    def __init__(self, say, plan, done_tools=()):
        self.say, self.plan, self.done_tools = say, plan, set(done_tools)


class Activities:
    """What a worker does for its runs; models are made once per worker from its environment."""

    def __init__(self, env):
        self.env, self.models = env, {}
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="activity")

    def close(self):
        for _, close, _ in self.models.values():
            close()
        self.pool.shutdown(wait=False, cancel_futures=True)

    async def _blocking(self, fn, *args):
        """fn(*args) on a thread of this worker, heartbeating while it works (a worker that dies
        stops heartbeating, and the activity is given to another)."""
        future = asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)
        timeout = activity.info().heartbeat_timeout
        every = max(0.2, timeout.total_seconds() / 4) if timeout else 1.0
        while True:
            done, _ = await asyncio.wait({future}, timeout=every)
            if done:
                return future.result()
            activity.heartbeat()

    def _agent(self, ref):
        return session.agent_for(ref["audit_dir"], None, ref.get("agent"))

    def _toolset(self, ref, agent=None):
        return session.tool_set(ref["audit_dir"], ref["run_id"], ref["mode"], visible=ref.get("visible"),
                                agent=agent or self._agent(ref))

    def _model(self, offline, name, agent):
        key = (bool(offline), name, agent.name, agent.file)
        if key not in self.models:
            self.models[key] = session.chat(self.env, offline, name, agent=agent, stream=self.env.get("stream", True))
        return self.models[key][0]

    @activity.defn(name="agent.begin")
    async def begin(self, start):
        info = activity.info()
        return pack(await self._blocking(self._begin, start, info.attempt, info.task_queue))

    def _begin(self, start, attempt, queue):
        audit_dir, run_id = start["audit_dir"], start["run_id"]
        path, say = audit.path_for(audit_dir, run_id), texts.ZH_TEXTS
        try:
            if start.get("open") or attempt > 1 and os.path.exists(path):   # opened, or begun by a lost attempt
                snap = audit.load(path)
                if snap["mode"] != "local":
                    return {"refused": texts.Said("temporal.mcp")(runs._language_of(snap))}
                return snap
            given = session.load_agent(start["agent_file"]) if start.get("agent_file") else None
            agent = session.agent_for(audit_dir, given)
            say = agent.say                    # refusals from here on in the agent's language
            policy = config.Policy.from_dict(start["policy"]) if start.get("policy") else runs.agent_policy(agent)
            os.makedirs(audit_dir, exist_ok=True)
            ask = self._model(start.get("offline"), start.get("model"), agent)
            toolset = session.tool_set(audit_dir, run_id, "local", visible=policy.tools, agent=agent)
            with audit.RunLock(audit_dir, run_id):
                r = runs.begin(audit_dir, run_id, start.get("goal") or "", toolset, ask.model, policy=policy)
                r.temporal = {"queue": queue}                 # where the run lives, from its first snapshot on
                loop.save(r)
            return audit.load(path)
        except (audit.AuditError, ValueError) as exc:
            return {"refused": texts.told(exc, say)}
        except OSError as exc:                 # the audit dir cannot be made or written: as the CLI says it
            return {"refused": say("cli.audit_dir", error=exc)}

    @activity.defn(name="agent.ask")
    async def ask(self, request):
        return pack(await self._blocking(self._ask, unpack(request)))

    def _ask(self, request):
        ref = request["run"]
        agent = self._agent(ref)
        ask = self._model(ref.get("offline"), ref.get("model"), agent)
        forced = {"force": True} if request.get("force") and getattr(ask, "forces", False) else {}
        try:
            reply = ask(request["outgoing"], request["tools"], final=True) if request["final"] else \
                ask(request["outgoing"], request["tools"], **forced)
        except ModelError as exc:          # errors are data: the workflow records them as one machine does
            return {"error": {"kind": exc.kind, "text": exc.text(agent.say), "tokens": exc.tokens}}
        return {"reply": dataclasses.asdict(reply)}

    @activity.defn(name="agent.tool")
    async def tool(self, request):
        return pack(await self._blocking(self._tool, unpack(request), activity.info().attempt))

    def _tool(self, request, attempt):
        ref = request["run"]
        toolset = self._toolset(ref)
        try:
            call, say = toolset.prepare([request["call"]])[0], toolset.agent.say
            if attempt > 1 and call.kind == "write" and call.args is not None:
                receipt = toolset.reconcile(call)     # an attempt before this one may have written: its key decides
                if receipt is not None:
                    return dataclasses.asdict(executor.settle(dict(receipt, reconciled=True), None, request["limit"], say))
            outcome = executor.execute(Seen(say, request["plan"], request.get("done", ())), [call], toolset, limit=request["limit"])[call.id]
            return dataclasses.asdict(outcome)
        finally:
            toolset.close()

    @activity.defn(name="agent.save")
    async def save(self, request):
        await self._blocking(self._save, unpack(request))

    def _save(self, request):
        path = request["path"]
        folder, name = os.path.split(path)
        try:
            with audit.RunLock(folder, name[len("run-"):-len(".json")]):
                audit.write(path, unpack(request["snapshot"]))
        except audit.AuditError as exc:        # a process on this machine holds the run: try again later
            raise ApplicationError(texts.told(exc, texts.ZH_TEXTS), type="Busy") from None


# ---- the command line's side: a worker, starting a run, answering it ----
class Unreachable(Exception):
    """The Temporal service could not be reached."""


class WorkflowFailed(Exception):
    """The run's workflow ended in failure (its audit file could not be written, say)."""


async def connect(address):
    from temporalio.client import Client
    try:
        return await Client.connect(address)
    except RuntimeError as exc:                # the SDK's "Failed client connect"
        raise Unreachable(str(exc)[:300]) from None


async def serve(address, queue, env, ready=None, stop=None):
    """A worker on `queue` until `stop` is set (or SIGINT/SIGTERM in the main thread)."""
    import signal
    import threading
    from temporalio.worker import Worker
    client = await connect(address)
    stop = stop or asyncio.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    work = Activities(env)
    try:
        async with Worker(client, task_queue=queue, workflows=[AgentRun],
                          activities=[work.begin, work.ask, work.tool, work.save],
                          max_concurrent_activities=64, graceful_shutdown_timeout=datetime.timedelta(seconds=5),
                          sticky_queue_schedule_to_start_timeout=datetime.timedelta(seconds=STICKY)):
            if ready:
                ready()
            await stop.wait()
    finally:
        work.close()


def _service_errors(fn):
    """A failure of the Temporal service while talking to it is Unreachable, with the service's words."""
    import functools
    from temporalio.service import RPCError

    @functools.wraps(fn)
    async def guarded(*args, **kwargs):
        try:
            return await fn(*args, **kwargs)
        except RPCError as exc:
            raise Unreachable(f"{exc.status.name if exc.status else ''} {exc.message}"[:300]) from None
    return guarded


@_service_errors
async def start(address, queue, start_input, started=None):
    """Start the run as a workflow (then `started()`) and return where it stands once it waits or ends."""
    from temporalio.common import WorkflowIDReusePolicy
    from temporalio.exceptions import WorkflowAlreadyStartedError
    client = await connect(address)
    try:
        handle = await client.start_workflow(WORKFLOW, start_input, id=start_input["run_id"], task_queue=queue,
                                             id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE)
    except WorkflowAlreadyStartedError:
        raise runs.Refused(texts.Said("temporal.exists", run_id=start_input["run_id"])) from None
    if started:
        started()
    return await _settled(handle, handle.execute_update(AgentRun.settle))


@_service_errors
async def running(address, run_id):
    """Whether the run's workflow is running now (False: it ended, was terminated, or never was)."""
    from temporalio.service import RPCError, RPCStatusCode
    client = await connect(address)
    try:
        description = await client.get_workflow_handle(run_id).describe()
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
        return False
    return description.status is not None and description.status.name == "RUNNING"


@_service_errors
async def answer(address, queue, run_id, how, text, opening=None):
    """The user's part, sent to the run's workflow; returns where the run stands once it waits or
    ends. A run with no workflow (begun on one machine) is opened on Temporal first (`opening`: the
    start input). Raises Refused with the workflow's words when the run does not take it."""
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.service import RPCError, RPCStatusCode
    client = await connect(address)
    handle = client.get_workflow_handle(run_id)
    try:
        description = await handle.describe()
        running = description.status is not None and description.status.name == "RUNNING"
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
        running = False
    if not running:
        if opening is None:
            raise runs.Refused(texts.Said("temporal.no_run", run_id=run_id))
        from temporalio.common import WorkflowIDReusePolicy
        handle = await client.start_workflow(WORKFLOW, opening, id=run_id, task_queue=queue,
                                             id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE)
        state = await handle.execute_update(AgentRun.settle)
        if state.get("status") == "refused":
            raise runs.Refused(state["detail"])
    try:
        return await _settled(handle, handle.execute_update(AgentRun.answer, args=[how, text]))
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        raise runs.Refused(getattr(cause, "message", None) or str(cause)) from None


async def _settled(handle, waiting):
    """What an update returns, or, when the workflow ended meanwhile, what it returned."""
    from temporalio.client import WorkflowFailureError
    from temporalio.service import RPCError
    try:
        try:
            return await waiting
        except RPCError:
            return await handle.result()
    except WorkflowFailureError as exc:
        cause = exc.cause
        raise WorkflowFailed(str(getattr(cause, "message", None) or cause or exc)[:300]) from None

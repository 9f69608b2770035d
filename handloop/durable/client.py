"""Runs on Temporal, the starter's side: where the service and the task queue are, the time limits
a new workflow records, a connection to the service, and what the command line asks of a run's
workflow: start it, send it the user's part, tell whether it runs. Imported by the command line only
for --worker, --temporal and a run recorded on Temporal (cli/temporal.py), and by durable/worker.py
(its connection).

Invariants: a failure of the service is Unreachable, with the service's words; a workflow that
ended in failure, or that the server (or anyone) terminated, is WorkflowFailed, with why, and its
run stays resumable from its audit file; what a run's workflow refuses is runs.Refused, in its words,
as one machine says it. Starting a run and answering it return where it stands once it waits or ends
(what its workflow returned, when it ended meanwhile; when it continued as new meanwhile, what the
next run of the workflow says once the run waits or ends). With traces exported (trace/send.py), the
connection carries Temporal's tracing interceptor (trace/temporal.py), and so do the workers made with it.
"""
import os

from .. import config
from .. import runs
from .. import texts
from .workflow import WORKFLOW, AgentRun

QUEUE = "agent-runs"
ADDRESS = "127.0.0.1:7233"
HEARTBEAT = 10.0           # seconds without a heartbeat before an activity counts as lost (its worker died)


def where(env=None):
    """(address, task queue) from AGENT_TEMPORAL_ADDRESS and AGENT_TEMPORAL_QUEUE."""
    env = os.environ if env is None else env
    return env.get("AGENT_TEMPORAL_ADDRESS") or ADDRESS, env.get("AGENT_TEMPORAL_QUEUE") or QUEUE


def sandboxed(env=None):
    """Whether a worker runs its workflows in Temporal's sandbox: yes, unless AGENT_TEMPORAL_SANDBOX=0 (the same
    workflow code without the sandbox's checks; see workflow.runner)."""
    env = os.environ if env is None else env
    return (env.get("AGENT_TEMPORAL_SANDBOX") or "1").strip() != "0"


def limits(env=None):
    """The activities' time limits and the history's bound (AGENT_TEMPORAL_HISTORY_KB, _EVENTS: past
    either, the workflow continues as new) a new workflow records, from the starter's environment."""
    from .workflow import HISTORY_BYTES, HISTORY_EVENTS
    env = os.environ if env is None else env
    settings = config.settings(env)
    heartbeat = float(env.get("AGENT_TEMPORAL_HEARTBEAT") or HEARTBEAT)
    ask = (settings["model_max_seconds"] + settings["model_timeout"]) * (settings["model_retries"] + 1) \
        + config.RETRY_CAP * settings["model_retries"]
    kb = env.get("AGENT_TEMPORAL_HISTORY_KB")
    return {"heartbeat": heartbeat, "ask": ask,
            "history_bytes": int(float(kb) * 1024) if kb else HISTORY_BYTES,
            "history_events": int(env.get("AGENT_TEMPORAL_HISTORY_EVENTS") or HISTORY_EVENTS)}


class Unreachable(Exception):
    """The Temporal service could not be reached."""


class WorkflowFailed(Exception):
    """The run's workflow ended in failure (its audit file could not be written, say)."""


_CLIENTS: dict = {}     # (address, traced) -> (the event loop it was made in, the client): one connection per loop


async def connect(address):
    """A client of the service at `address`, made once per event loop (a process that starts and
    answers many runs, as a library or a benchmark does, keeps one connection)."""
    import asyncio
    from temporalio.client import Client
    running = asyncio.get_running_loop()
    traced = _tracing()
    made = _CLIENTS.get((address, bool(traced)))
    if made is not None and made[0] is running:
        return made[1]
    try:
        client = await Client.connect(address, interceptors=traced)
    except RuntimeError as exc:                # the SDK's "Failed client connect"
        raise Unreachable(str(exc)[:300]) from None
    _CLIENTS[(address, bool(traced))] = (running, client)
    return client


def _tracing():
    """Temporal's tracing interceptor (trace/temporal.py) when the environment exports traces and the SDK is
    installed, else none: without an endpoint nothing of OpenTelemetry is imported."""
    from ..trace import settings
    if not settings.wanted():
        return []
    try:
        from ..trace import temporal as traced
        return traced.interceptors()
    except Exception:                          # no SDK or contrib, or a bad setting: the run goes on untraced
        return []


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
    """Start the run as a workflow (then `started()`) and return where it stands once it waits or ends: the
    start and the starter's wait (`settle`) go in one request, so the workflow's first task takes both."""
    import asyncio
    from temporalio.client import WithStartWorkflowOperation, WorkflowUpdateStage
    from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
    from temporalio.exceptions import WorkflowAlreadyStartedError
    client = await connect(address)
    run_id = start_input["run_id"]
    operation: WithStartWorkflowOperation[AgentRun, dict] = WithStartWorkflowOperation(
        WORKFLOW, start_input, id=run_id, task_queue=queue, id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        id_conflict_policy=WorkflowIDConflictPolicy.FAIL)
    sending = asyncio.ensure_future(client.start_update_with_start_workflow(
        AgentRun.settle, start_workflow_operation=operation, wait_for_stage=WorkflowUpdateStage.ACCEPTED))
    try:
        await operation.workflow_handle()          # the service started it (or said why not)
    except BaseException as exc:
        await asyncio.gather(sending, return_exceptions=True)
        if isinstance(exc, WorkflowAlreadyStartedError):
            raise runs.Refused(texts.Said("temporal.exists", run_id=run_id)) from None
        raise
    if started:
        started()
    return await _settled(client, run_id, _outcome(sending))


async def _outcome(sending):
    """The result of an update sent with the start."""
    return await (await sending).result()


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
    try:                                       # a workflow that runs takes it at once, no question asked first
        return await _settled(client, run_id, handle.execute_update(AgentRun.answer, args=[how, text]), quiet=True)
    except WorkflowUpdateFailedError as exc:
        raise runs.Refused(getattr(exc.cause, "message", None) or str(exc.cause)) from None
    except _NotRunning:
        pass
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
        state = await _settled(client, run_id, handle.execute_update(AgentRun.settle))
        if state.get("status") == "refused":
            raise runs.Refused(state["detail"])
    try:
        return await _settled(client, run_id, handle.execute_update(AgentRun.answer, args=[how, text]))
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        raise runs.Refused(getattr(cause, "message", None) or str(cause)) from None


class _NotRunning(Exception):
    """The update found no workflow running under the run's id (quiet: the caller looks again)."""


async def _settled(client, run_id, waiting, tries=20, quiet=False):
    """What an update returns. When the workflow moved on while it waited: continued as new, the
    next run of the workflow is asked where the run stands once it waits or ends (`settle`); ended,
    what it returned; terminated or failed, WorkflowFailed with why. `quiet`: an update the service
    refuses because no workflow runs under the id raises _NotRunning."""
    from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
    from temporalio.service import RPCError, RPCStatusCode
    try:
        return await waiting
    except WorkflowUpdateFailedError as exc:
        if getattr(exc.cause, "type", None) == "Refused":
            raise                                   # the workflow's own refusal: the caller says it
    except RPCError as exc:
        if quiet and exc.status == RPCStatusCode.NOT_FOUND:
            raise _NotRunning() from None
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        pass
    handle = client.get_workflow_handle(run_id)     # the workflow as it is now: its newest run
    for _ in range(tries):
        description = await handle.describe()
        if description.status is None or description.status.name != "RUNNING":
            break
        try:
            return await handle.execute_update(AgentRun.settle)
        except (WorkflowUpdateFailedError, RPCError):
            continue                                # it moved on again meanwhile
    try:
        return await handle.result()
    except WorkflowFailureError as exc:
        cause = exc.cause
        raise WorkflowFailed(str(getattr(cause, "message", None) or cause or exc)[:300]) from None

"""Runs on Temporal, the worker: the activities (what touches the world for a run's workflow:
`agent.begin`, `agent.ask`, `agent.tool`, `agent.save`, `agent.checkpoint`) and a worker serving them
with durable.AgentRun on a task queue. Imported by the command line only for --worker (cli/temporal.py).

Payloads stay bounded (see workflow.py): a save brings what changed and is applied to the snapshot
this worker holds of the run (or the file, read again when it holds none or the file was written since
by another worker); an ask may bring the save due before it (written first, as `agent.save` would); an ask
assembles its request from that snapshot, as the workflow made it (the digests must agree, else the
workflow sends the request); a run's state goes to a workflow inline when small, else as a
checkpoint: a copy of the audit file under <audit dir>/.checkpoints, named by its digest, never
changed (the two newest of a run are kept: the one its workflow started from and the next).

Invariants: a worker makes its models once, from its environment; an activity's blocking work runs
on a thread of the worker, heartbeating while it works (a worker that dies stops heartbeating, and
the activity is given to another). A write is never retried blind: an attempt of `agent.tool` after
the first asks the tool's `reconcile` with the write's idempotency key before running it again, and
the store's UNIQUE key holds whatever happens. The audit file is written under the run lock, as on
one machine; a model's failure or a refusal goes back to the workflow as data, never as a lost
activity.
"""
import asyncio
import collections
import concurrent.futures
import dataclasses
import datetime
import json
import os
import re
import threading

from temporalio import activity
from temporalio.exceptions import ApplicationError

from .. import audit
from .. import config
from .. import context
from .. import executor
from .. import loop
from .. import mcp_tools
from .. import runs
from .. import parts
from .. import texts
from .workflow import AgentRun, digest, pack, runner, unpack
from .client import connect
from ..model import ModelError
from ..values import wrapped

STICKY = 5.0               # seconds a workflow task waits for the worker that has the run cached
INLINE = 256 * 1024        # a snapshot up to this many characters goes to a workflow inline, else as a checkpoint
HELD = 16                  # runs whose newest snapshot a worker holds in memory


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
        self.held = collections.OrderedDict()     # audit path -> {"snap", "writer", "window"}: newest first out
        self.lock = threading.Lock()

    def close(self):
        for _, close, _ in self.models.values():
            close()
        self.pool.shutdown(wait=False, cancel_futures=True)

    async def _blocking(self, fn, *args):
        """fn(*args) on a thread of this worker, heartbeating while it works (a worker that dies
        stops heartbeating, and the activity is given to another; a local activity's workflow task
        times out instead)."""
        future = asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)
        info = activity.info()
        timeout = info.heartbeat_timeout
        every = max(0.2, timeout.total_seconds() / 4) if timeout else 1.0
        while True:
            done, _ = await asyncio.wait({future}, timeout=every)
            if done:
                return future.result()
            if not info.is_local:             # a local activity lives with its workflow task: no heartbeat
                activity.heartbeat()

    def _agent(self, ref):
        return parts.agent_of(ref["audit_dir"], ref.get("agent"))

    def _toolset(self, ref, agent=None, schemas=None):
        """The run's tool set in this worker; with the MCP tools a run recorded (`schemas`), its servers open at
        their first call, in the activity that needs them (a run over Streamable HTTP: the URL it recorded)."""
        return parts.tool_set(ref["run_id"], ref["mode"], agent or self._agent(ref), schemas=schemas,
                              visible=ref.get("visible"), mcp_url=ref.get("mcp_url"))

    def _model(self, offline, name, agent):
        key = (bool(offline), name, agent.name, agent.file)
        if key not in self.models:
            self.models[key] = parts.chat(self.env, offline, name, agent=agent, stream=self.env.get("stream", True))
        return self.models[key][0]

    @activity.defn(name="agent.begin")
    async def begin(self, start):
        info = activity.info()
        return pack(await self._blocking(self._begin, start, info.attempt, info.task_queue, info.workflow_run_id))

    def _begin(self, start, attempt, queue, workflow_run=None):
        audit_dir, run_id = start["audit_dir"], start["run_id"]
        path, say = audit.path_for(audit_dir, run_id), texts.ZH_TEXTS
        try:
            if start.get("open") or os.path.exists(path) and (attempt > 1 or _begun_by(path, workflow_run)):
                return reference(path, audit.load(path))                  # opened, or begun by a lost attempt
            agent = parts.agent_of(audit_dir, start.get("agent"))     # as the starter loaded it (parts.origin)
            say = agent.say                    # refusals from here on in the agent's language
            policy = config.Policy.from_dict(start["policy"]) if start.get("policy") else runs.agent_policy(agent)
            os.makedirs(audit_dir, exist_ok=True)
            ask = self._model(start.get("offline"), start.get("model"), agent)
            mode = "mcp" if start.get("mcp") or agent.servers() else "local"
            toolset = parts.tool_set(run_id, mode, agent, visible=policy.tools)
            try:                               # its MCP servers were asked for their tools; each call opens them again
                with audit.RunLock(audit_dir, run_id):
                    r = runs.begin(audit_dir, run_id, start.get("goal") or "", toolset, ask.name, policy=policy,
                                   created=start.get("created"))     # the starter's: the run's trace id
                    r.temporal = {"queue": queue, "begun_by": workflow_run}   # where the run lives, from its first snapshot on
                    loop.save(r)
                config.fault("after_begin")
            finally:
                toolset.close()
            return reference(path, audit.load(path))
        except (audit.AuditError, ValueError) as exc:
            return {"refused": texts.told(exc, say)}
        except mcp_tools.MCPError as exc:      # a server the agent declares cannot be used as declared
            return {"refused": say("cli.mcp_failed", error=exc.message)}
        except OSError as exc:                 # the audit dir cannot be made or written: as the CLI says it
            return {"refused": say("cli.audit_dir", error=exc)}

    @activity.defn(name="agent.ask")
    async def ask(self, request):
        return pack(await self._blocking(self._ask, unpack(request)))

    def _ask(self, request):
        ref = request["run"]
        if "save" in request:                          # the newest snapshot first: the file before the world
            self._save({"path": request["path"], "snapshot": request["save"]})
        agent = self._agent(ref)
        if "outgoing" in request:
            outgoing, tools = request["outgoing"], request["tools"]
        else:
            outgoing, tools = self._request(request, agent)
            if outgoing is None:
                return {"mismatch": True}              # the workflow sends the request itself
        ask = self._model(ref.get("offline"), ref.get("model"), agent)
        try:
            reply = ask(outgoing, tools, final=bool(request["final"]),
                        force=(request.get("force") or False) if ask.forces else False)
        except ModelError as exc:          # errors are data: the workflow records them as one machine does
            return {"error": {"kind": exc.kind, "text": exc.text(agent.say), "tokens": exc.tokens}}
        return {"reply": dataclasses.asdict(reply)}

    def _request(self, request, agent):
        """The request the workflow made, assembled from the run's snapshot (the first `count` messages,
        as its epoch lays them out; the system message it sent, when that one differs): what this
        worker holds, else the file read again; (None, None) when neither gives the workflow's digest."""
        for fresh in (False, True):
            if fresh:
                with self.lock:
                    self.held.pop(request["path"], None)
            held = self._held(request["path"])
            messages = held["snap"]["messages"][:request["count"]]
            if len(messages) != request["count"]:
                continue
            outgoing = self._laid_out(held, messages, request["run"], agent)
            if request.get("head") is not None:
                outgoing[0] = request["head"]
            if digest(pack(outgoing)) == request["digest"]:
                return outgoing, held["snap"]["tools"]
        return None, None

    def _laid_out(self, held, messages, ref, agent):
        """The messages as the snapshot's epoch lays them out (its compacted part made once per epoch)."""
        key = (json.dumps(held["snap"].get("epoch"), sort_keys=True), id(messages[0]))
        if held.get("window", (None,))[0] != key:
            toolset = self._toolset(ref, agent, schemas=held["snap"]["tools"])   # no MCP server opened for it
            toolset.close()                        # only its declarations are read
            held["window"] = (key, context.Window.from_dict(held["snap"].get("epoch"), messages), toolset.tool)
        _, window, tool_of = held["window"]
        return window.request(messages, tool_of, agent.say)

    def _held(self, path):
        """What this worker holds of a run: its newest snapshot (read from the file when it holds none, or
        when the file is not the one it wrote or read last: another worker wrote it since)."""
        with self.lock:
            held = self.held.get(path)
            if held is not None and held["stamp"] != _stamp(path):
                held = None
            if held is None:
                stamp = _stamp(path)
                held = self.held[path] = {"snap": audit.load(path), "writer": audit.Writer(path), "stamp": stamp}
                while len(self.held) > HELD:
                    self.held.popitem(last=False)
            self.held.move_to_end(path)
            return held

    @activity.defn(name="agent.tool")
    async def tool(self, request):
        return pack(await self._blocking(self._tool, unpack(request), activity.info().attempt))

    def _tool(self, request, attempt):
        ref = request["run"]
        toolset = self._toolset(ref, schemas=request.get("tools"))
        try:
            call, say = toolset.prepare([request["call"]])[0], toolset.agent.say
            if attempt > 1 and call.kind == "write" and call.args is not None:
                receipt = toolset.reconcile(call)     # an attempt before this one may have written: its key decides
                if receipt is not None:
                    return dataclasses.asdict(executor.settle(dict(wrapped(receipt), reconciled=True), None,
                                                                  request["limit"], say))
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
                self._apply(path, unpack(request["snapshot"]))
        except audit.AuditError as exc:        # a process on this machine holds the run: try again later
            raise ApplicationError(texts.told(exc, texts.ZH_TEXTS), type="Busy") from None

    def _apply(self, path, delta):
        """Write the snapshot a save's delta makes of the one before (held, or read from the file; a
        file that has more than the delta starts from, from a lost attempt of this save, is cut back:
        messages and trace records are only appended, so what came before is the same)."""
        held = self._held(path)
        before = held["snap"]
        if len(before["messages"]) < delta["from"] or len(before["trace"]) < delta["trace_from"]:
            with self.lock:
                self.held.pop(path, None)
            held = self._held(path)            # another worker wrote it since: read it again
            before = held["snap"]
            if len(before["messages"]) < delta["from"] or len(before["trace"]) < delta["trace_from"]:
                raise ApplicationError(f"{path} holds less than the run's workflow wrote", type="AuditLost",
                                       non_retryable=True)
        messages = before["messages"][:delta["from"]] + delta["messages"]
        if "first" in delta:
            messages[0] = delta["first"]
        snap = dict(delta["head"], messages=messages, trace=before["trace"][:delta["trace_from"]] + delta["trace"])
        held["writer"].write(snap)
        held["snap"], held["stamp"] = snap, _stamp(path)

    @activity.defn(name="agent.checkpoint")
    async def checkpoint(self, request):
        return pack(await self._blocking(self._checkpoint, unpack(request)))

    def _checkpoint(self, request):
        """A reference to the run's state as its audit file holds it (see reference)."""
        return reference(request["path"], self._held(request["path"])["snap"])


def _stamp(path):
    """What tells one write of the audit file from another (each write links a new spare at the path)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size


def _begun_by(path, workflow_run):
    """Whether the run's file was begun by this very workflow run (a local begin whose worker was lost after
    it wrote the file: the next worker begins again, as attempt 1); an unreadable file is not ours."""
    try:
        temporal = audit.load(path).get("temporal")
    except (audit.AuditError, OSError, ValueError):
        return False
    return workflow_run is not None and isinstance(temporal, dict) and temporal.get("begun_by") == workflow_run


def reference(path, snap):
    """The run's snapshot for a workflow to start from: inline when small, else as a checkpoint file
    beside the audit file, named by its digest and never changed (older ones of the run removed,
    but for the newest one before it: the workflow that is still to continue from it)."""
    text = pack(snap)
    if len(text) <= INLINE:
        return {"snapshot": text}
    data = text.encode()
    name, folder = digest(data), os.path.join(os.path.dirname(path) or ".", ".checkpoints")
    stem = os.path.basename(path)[:-len(".json")]
    target = os.path.join(folder, f"{stem}.{name[:20]}.json")
    os.makedirs(folder, exist_ok=True)
    if os.path.islink(folder):
        raise audit.AuditError(texts.Said("audit.link", path=folder))
    if not os.path.exists(target):
        audit.replace(target, data)
    named = re.compile(re.escape(stem) + r"\.[0-9a-f]{20}\.json")
    mine = sorted((os.path.getmtime(os.path.join(folder, n)), n) for n in os.listdir(folder)
                  if named.fullmatch(n) and n != os.path.basename(target))
    for _, old in mine[:-1]:
        try:
            os.remove(os.path.join(folder, old))
        except OSError:
            pass
    return {"checkpoint": target, "digest": name}


async def serve(address, queue, env, ready=None, stop=None, sandboxed=True):
    """A worker on `queue` until `stop` is set (or SIGINT/SIGTERM in the main thread); its workflows in
    Temporal's sandbox unless `sandboxed` is false (see workflow.runner)."""
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
        async with Worker(client, task_queue=queue, workflows=[AgentRun], workflow_runner=runner(sandboxed),
                          activities=[work.begin, work.ask, work.tool, work.save, work.checkpoint],
                          max_concurrent_activities=64, graceful_shutdown_timeout=datetime.timedelta(seconds=5),
                          sticky_queue_schedule_to_start_timeout=datetime.timedelta(seconds=STICKY)):
            if ready:
                ready()
            await stop.wait()
    finally:
        work.close()
        _traced()


def _traced():
    """The spans this worker still holds, sent (when it traces: trace/temporal.py)."""
    import sys
    live = sys.modules.get("handloop.trace.temporal")
    if live is not None:
        live.flush()

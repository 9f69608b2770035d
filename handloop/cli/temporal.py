"""The command line's side of Temporal: --worker (a worker on the task queue), --temporal (a new run
started as a workflow, or the user's part sent to its workflow, then the usual summary and, when asked for,
the stretch's trace exported from the audit file the workflow wrote, Temporal's own spans its children), and
whether a run that lives on Temporal may be taken by this machine. Nothing else.

Invariant: the Temporal side (durable/client.py, durable/worker.py and the workflow, durable/workflow.py: with
trace/temporal.py, the only modules that import temporalio) is imported here, lazily, and only when one of these is asked
for; a missing temporalio is a usage error, never a traceback.
"""
import os
import sys
import time

from .. import texts
from .exits import UsageError, error_line, exit_code
from .printout import summary, traced


def not_on_temporal(audit_dir, run_id, agent):
    """A run that lives on Temporal is answered through its workflow, never by this process while
    that workflow runs. Returns True when the run was on Temporal and its workflow has ended
    (terminated, failed, or the service no longer knows it): this machine takes it back. Whether it
    runs is asked of the service; when that cannot be told (no temporalio, no service), no."""
    import asyncio
    from .. import audit
    try:
        snap = audit.load(audit.path_for(audit_dir, run_id))
    except audit.AuditError:
        return False                           # session.reopen says what is wrong with it
    if not isinstance(snap.get("temporal"), dict):
        return False
    say = _recorded_say(snap, agent)
    lives = say("temporal.lives", run_id=run_id, queue=snap["temporal"].get("queue"))
    try:
        client = _temporal(say, "handloop.durable.client")
    except UsageError as exc:                  # no temporalio here: nothing can tell
        raise UsageError(lives + say("temporal.unknown", error=str(exc))) from None
    try:
        if asyncio.run(client.running(client.where()[0], run_id)):
            raise UsageError(lives)
    except UsageError:
        raise
    except Exception as exc:                   # the service cannot say: the run is not taken here
        raise UsageError(lives + say("temporal.unknown", error=str(exc)[:200] or type(exc).__name__)) from None
    return True


def _resumable(path, run_id, say):
    """Where the run of a workflow that ended in failure stands in its audit file, and how it goes on."""
    from .. import audit
    try:
        snap = audit.load(path)
    except audit.AuditError:
        return ""
    if snap["status"] not in ("running", "error", "suspended"):
        return ""
    how = "--confirm" if snap["status"] == "suspended" else "--resume"
    return say("temporal.resumable", turn=snap["turn"], status=snap["status"], how=how, run_id=run_id)


def _recorded_say(snap, agent=None):
    """The language of `agent`, else of the agent a run's snapshot records, else Chinese."""
    if agent is not None:
        return agent.say
    recorded = snap.get("agent") if isinstance(snap.get("agent"), dict) else {}
    return texts.of(recorded["language"]) if recorded.get("language") in texts.LANGUAGES else texts.ZH_TEXTS


def _declaration_said(session, audit_dir, run_id, agent):
    """Where the run's agent now differs from the declaration its audit file records, said before the
    user's part goes to its workflow; a change that would weaken a recorded write is refused here,
    as on one machine (session.reopen)."""
    r, toolset, warnings = session.reopen(audit_dir, run_id, None, agent=agent)
    toolset.close()
    for said in warnings:
        if isinstance(said, texts.Said):
            print(said(r.say), file=sys.stderr)


def _temporal(say, side):
    """`side` (durable_client or durable_worker), imported only now (it imports temporalio);
    UsageError when temporalio is missing."""
    import importlib.util
    if importlib.util.find_spec("temporalio") is None:
        raise UsageError(say("temporal.missing"))
    try:
        return importlib.import_module(side)
    except ImportError:                        # a broken install: as good as missing
        raise UsageError(say("temporal.missing")) from None


def worker(env, named):
    """--worker: a Temporal worker on the task queue until Ctrl-C or SIGTERM."""
    import asyncio
    say = named.say if named else texts.ZH_TEXTS
    try:
        client, work = _temporal(say, "handloop.durable.client"), _temporal(say, "handloop.durable.worker")
    except UsageError as exc:
        print(error_line(exc, named), file=sys.stderr)
        return 2
    address, queue = client.where()
    banner = (say,) if named else tuple(texts.of(language) for language in texts.LANGUAGES)   # it serves any agent
    try:
        asyncio.run(work.serve(address, queue, env, ready=lambda: print(
            "\n".join(told("temporal.worker", queue=queue, address=address) for told in banner), flush=True),
            sandboxed=client.sandboxed()))
    except client.Unreachable as exc:
        print(error_line(UsageError(say("temporal.unreachable", address=address, error=exc)), named), file=sys.stderr)
        return 3
    return 0


def _on_temporal(client, args, how, start, path, say, agent, policy):
    """Start the run's workflow (how None) or send it the user's part; where the run stands then."""
    import asyncio
    from .. import audit
    from .. import runs
    from . import session
    (address, queue), run_id = client.where(), start["run_id"]
    if how is None:
        if os.path.exists(path):
            raise audit.AuditError(say("resume.exists", run_id=run_id, path=path))
        goal = args.goal or (agent or session.agent_for(start["audit_dir"])).goal
        start.update(goal=goal, policy=runs.start_policy(policy, agent, args.max_turns).to_dict())
        return asyncio.run(client.start(address, queue, start, started=lambda: print(
            say("cli.new_run", run_id=run_id, goal=goal) + "\n"
            + say("temporal.started", run_id=run_id, queue=queue, address=address), flush=True)))
    text = args.reply[0] if args.reply else None
    opening = dict(start, open=True) if os.path.exists(path) else None
    return asyncio.run(client.answer(address, queue, run_id, how, text, opening))


def on_temporal(args, how, run_id, audit_dir, agent, policy):
    """--temporal: a new run started as a workflow, or the user's part sent to its workflow; then
    where the run stands, as a run on this machine ends (the summary, from its audit file)."""
    from .. import audit
    from .. import runs
    from . import session
    say = agent.say if agent else texts.ZH_TEXTS
    client = _temporal(say, "handloop.durable.client")
    address, queue = client.where()
    path = audit.path_for(audit_dir, run_id)
    start = {"run_id": run_id, "audit_dir": audit_dir, "agent": session.origin(agent, audit_dir),
             "offline": args.offline, "model": args.model, "limits": client.limits(), "mcp": bool(args.mcp)}
    started = time.perf_counter()
    before, created = 0, (runs.stamp() if how is None else None)
    if how and os.path.exists(path):           # what one machine refuses, refused in the same words
        snap = audit.load(path)
        say = _recorded_say(snap, agent)
        session.accept(how, snap, say)
        _declaration_said(session, audit_dir, run_id, agent)
        before, created = snap["turn"], snap.get("created")
    from ..trace.send import Stretch
    stretch = Stretch(path, before, how or "")  # the workflow's stretch, exported from its audit file
    try:
        with stretch.within(run_id, created):  # Temporal's own spans, children of the stretch's
            state = _on_temporal(client, args, how, dict(start, created=created), path, say, agent, policy)
    except client.Unreachable as exc:
        print(error_line(UsageError(say("temporal.unreachable", address=address, error=exc)), agent), file=sys.stderr)
        return 3
    except client.WorkflowFailed as exc:          # terminated by the server (history too large...) or failed
        print(error_line(UsageError(say("temporal.failed", run_id=run_id, error=exc) + _resumable(path, run_id, say)),
                         agent), file=sys.stderr)
        return 3
    if state.get("status") == "refused":
        raise audit.AuditError(state["detail"])
    if not os.path.exists(path):               # the workers' storage is not this machine's
        print(say("temporal.state", **{k: state.get(k, "") for k in ("run_id", "status", "reason", "turn", "tokens",
                                                                       "path")}))
        return exit_code(state["status"], state.get("reason", ""))
    r, toolset, _ = session.reopen(audit_dir, run_id, None, agent=agent)
    say = r.say
    try:
        if how in ("confirm", "reply"):
            print(say("cli.user", text=args.reply[0] if args.reply else r.agent.confirm[0]))
        if r.answer:                             # the turns were the workers': the model's last words
            print("   " + say("cli.answer", text=r.answer.replace("\n", "\n   ")))
        summary(r, time.perf_counter() - started, toolset, " --temporal", cmd=getattr(args, "hint", getattr(args, "prog", "handloop")))
    finally:
        toolset.close()
    traced(stretch, say)
    return exit_code(r.status, r.reason)

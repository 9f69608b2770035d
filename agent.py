"""Command line: parse arguments, pick the mode, print what happens. Nothing else.

Exit codes: 0 done or suspended (awaiting the user); 1 stopped (guard, budget, max turns) or a
check or self-test failed; 2 bad usage or input; 3 the model service failed; 130 interrupted
(Ctrl-C or SIGTERM: the run is recorded stopped/interrupted). No traceback reaches the user for
any of these. What happens while a reply streams is shown by live.py.
"""
import argparse
import json
import os
import sys
import time

import config
import texts

EXIT = {"done": 0, "suspended": 0, "stopped": 1, "error": 3, "running": 3}
MARK = {"ok": "✓", "error": "✗", "timeout": "⏱", "unknown": "?", "blocked": "⛔"}


class UsageError(Exception):
    """Bad usage the user can fix (exit 2)."""


def parse(argv, agent=None):
    """The arguments; usage errors and --help in the language of `agent` (the one --agent names)."""
    say = agent.say if agent else texts.ZH_TEXTS
    h = {k: say("help." + k) for k in ("confirm", "reply", "resume", "check", "selftest", "json", "strict", "run_id",
                                        "audit_dir", "offline", "model", "goal", "policy", "mcp", "mcp_server",
                                        "agent", "mcp_url", "no_stream", "temporal", "worker")}
    p = argparse.ArgumentParser(prog="agent.py", allow_abbrev=False,
                                description=say("help.description", agent=agent.name if agent else "xian-hotel"))
    modes = p.add_mutually_exclusive_group()
    modes.add_argument("--confirm", nargs="?", const="", metavar="RUN_ID", help=h["confirm"])
    modes.add_argument("--reply", nargs="+", metavar="TEXT", help=h["reply"])
    modes.add_argument("--resume", nargs="?", const="", metavar="RUN_ID", help=h["resume"])
    modes.add_argument("--check", nargs="*", metavar="RUN_ID_OR_PATH", help=h["check"])
    modes.add_argument("--selftest", action="store_true", help=h["selftest"])
    modes.add_argument("--worker", action="store_true", help=h["worker"])
    p.add_argument("--json", action="store_true", help=h["json"])
    p.add_argument("--strict", action="store_true", help=h["strict"])
    p.add_argument("--run-id", help=h["run_id"])
    p.add_argument("--audit-dir", help=h["audit_dir"])
    p.add_argument("--offline", action="store_true", help=h["offline"])
    p.add_argument("--model", help=h["model"])
    p.add_argument("--goal", help=h["goal"])
    p.add_argument("--max-turns", type=int, metavar="N", help=say("help.max_turns", limit=config.MAX_TURNS))
    p.add_argument("--policy", metavar="FILE", help=h["policy"])
    p.add_argument("--mcp", action="store_true", help=h["mcp"])
    p.add_argument("--mcp-server", metavar="CMD", help=h["mcp_server"])
    p.add_argument("--agent", metavar="FILE", help=h["agent"])
    p.add_argument("--mcp-url", metavar="URL", help=h["mcp_url"])
    p.add_argument("--no-stream", action="store_true", help=h["no_stream"])
    p.add_argument("--temporal", action="store_true", help=h["temporal"])
    args = p.parse_args(argv)
    problem = _usage(args, say)
    if problem:
        p.error(problem)
    return args


def _usage(args, say):
    """What is wrong with a combination of arguments, or None."""
    broken = [k for k, v in vars(args).items() if any(isinstance(x, str) and not config.utf8(x)
                                                      for x in (v if isinstance(v, list) else [v]))]
    run_only = [f for f, v in (("--run-id", args.run_id), ("--goal", args.goal), ("--max-turns", args.max_turns),
                              ("--model", args.model), ("--offline", args.offline), ("--policy", args.policy)) if v]
    problems = [
        (args.reply is not None and len(args.reply) > 2, lambda: say("usage.reply")),
        (args.max_turns is not None and not 1 <= args.max_turns <= 1000, lambda: say("usage.max_turns")),
        (broken, lambda: say("usage.utf8", flag="--" + broken[0].replace("_", "-"))),
        (args.goal is not None and not args.goal.strip(), lambda: say("usage.goal")),
        (args.json and args.check is None, lambda: say("usage.check_only", flag="--json")),
        (args.strict and args.check is None, lambda: say("usage.check_only", flag="--strict")),
        ((args.check is not None or args.selftest) and run_only, lambda: say("usage.no_run", flags=" ".join(run_only))),
        (args.mcp_server is not None and not _split(args.mcp_server), lambda: say("usage.mcp_server")),
        (args.worker and run_only, lambda: say("usage.no_run", flags=" ".join(run_only))),
        (args.temporal and (args.check is not None or args.selftest or args.worker),
         lambda: say("temporal.usage", flag="--temporal", other="--check / --selftest / --worker")),
        (args.temporal and (args.mcp or args.mcp_url or args.mcp_server),
         lambda: say("temporal.mcp")),
    ]
    return next((text() for wrong, text in problems if wrong), None)


def _named_agent(argv):
    """The agent `--agent FILE` names, loaded before the arguments are parsed (its language is the
    help's); None when there is none or it cannot be loaded (drive() then says why)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    path = next((a.split("=", 1)[1] for a in argv if a.startswith("--agent=")), None)
    if path is None and "--agent" in argv[:-1]:
        path = argv[argv.index("--agent") + 1]
    if not path or not config.utf8(path):
        return None
    import session
    try:
        return session.load_agent(path)
    except session.Refused:
        return None


def _split(command):
    """A command line as argv (POSIX shell quoting); [] when empty or unparseable."""
    import shlex
    try:
        return shlex.split(command)
    except ValueError:
        return []


def main(argv=None):
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    previous = signal.signal(signal.SIGTERM, _terminated)       # SIGTERM stops a run as Ctrl-C does
    try:
        return _main(argv)
    except KeyboardInterrupt:                                   # before or after a run's loop
        print("\n" + texts.ZH_TEXTS("cli.stopped_plain"), file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def _terminated(signum, frame):
    raise KeyboardInterrupt


def _main(argv):
    named = _named_agent(argv)
    args = parse(argv, named)
    args.named = named
    try:
        env = config.settings()
    except ValueError as exc:
        print((named.say if named else texts.ZH_TEXTS)("usage.env", error=exc), file=sys.stderr)
        return 2
    if args.check is not None:                 # the judges import no model client: they start fast
        import check_cli
        declared = None
        if args.agent:                         # the declarations a transcript recording no agent is judged by
            import session
            try:
                declared = (named or session.load_agent(args.agent)).declared()
            except session.Refused as exc:
                print(_error(exc, named), file=sys.stderr)
                return 2
        return check_cli.run(args.check, args.audit_dir or env["audit_dir"], args.json, strict=args.strict,
                             agent=declared)
    if args.selftest:
        import selftest
        return selftest.main(mcp=args.mcp)
    if args.worker:
        return _worker(env, named)
    import audit
    import mcp_tools
    try:
        return drive(args, env)
    except (audit.AuditError, UsageError) as exc:
        print(_error(exc, named), file=sys.stderr)
        return 2
    except mcp_tools.MCPAuthError as exc:      # a remote server refused us: like the model service's auth
        print(_error(exc, named, "cli.mcp_failed"), file=sys.stderr)
        return 3
    except mcp_tools.MCPError as exc:
        print(_error(exc, named, "cli.mcp_failed"), file=sys.stderr)
        return 2
    except OSError as exc:
        print(_error(exc, named, "cli.audit_dir"), file=sys.stderr)
        return 2


def _error(exc, agent=None, what=None):
    """An error line: what the error says, in the agent's language where it carries a texts.Said
    (else as it was said: an English run's refusals are English), with the prefix in the same
    language."""
    say = agent.say if agent else texts.ZH_TEXTS
    told = texts.told(exc, say)
    told = say(what, error=told) if what else told
    return ("错误：" if texts.CJK.search(told) else "error: ") + told


def drive(args, env):
    import audit
    _require("openai", "json5")
    import session
    audit_dir = args.audit_dir or env["audit_dir"]
    how = "confirm" if args.confirm is not None else "reply" if args.reply is not None else \
        "resume" if args.resume is not None else None
    run_id = (_target(args) or audit.latest_run_id(audit_dir)) if how else (args.run_id or audit.new_run_id())
    audit.check_run_id(run_id)
    if not how and args.mcp_server and not args.mcp:
        raise UsageError(texts.Said("cli.mcp_server_alone"))
    command = _split(args.mcp_server or env["mcp_server"] or "") or None
    if command is None and env["mcp_server"]:
        raise UsageError(texts.Said("cli.bad_mcp_env"))
    agent = (args.named or session.load_agent(args.agent)) if args.agent else None    # a bad file: why
    url, token = _mcp_http(args, env, how, (agent.say if agent else texts.ZH_TEXTS))
    policy = session.load_policy(args.policy) if args.policy else None
    if how is None and not os.path.isdir(audit_dir):
        os.makedirs(audit_dir, exist_ok=True)
    elif how and not os.path.isdir(audit_dir) and not args.temporal:
        raise UsageError(texts.Said("resume.no_dir", folder=audit_dir))
    if args.temporal:                          # the run lives in a workflow: no lock here, its activities take it
        return _on_temporal(args, env, how, run_id, os.path.abspath(audit_dir), agent, policy)
    back = _not_on_temporal(audit_dir, run_id, agent) if how else False
    with audit.RunLock(audit_dir, run_id):
        if how is None:
            r, toolset = session.start(audit_dir, run_id, args.goal or "", "mcp" if args.mcp else "local", command,
                                       _with_turns(policy, args, agent), mcp_url=url, mcp_token=token, agent=agent)
            print(r.say("cli.new_run", run_id=r.run_id, goal=r.messages[1]["content"]))
            _mcp_line(toolset, r.say)
        else:
            r, toolset = _reopen(session, args, audit_dir, run_id, how, command, policy, token, agent)
            if back:                           # its workflow ended: the run is this machine's again
                r.temporal = None
                print(r.say("temporal.back", run_id=run_id))
        return _go(session, r, toolset, args, env)


def _mcp_http(args, env, how, say):
    """(URL, token) of the Streamable HTTP MCP server of a new `--mcp` run, (None, token) when it
    spawns one; the token comes from the environment. A resume takes the URL its run recorded.
    Explicit options win over the environment; --mcp-url and --mcp-server together are refused."""
    import mcp_http
    import mcp_tools
    try:
        token = mcp_http.check_token(env["mcp_token"], say)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if how or args.temporal:
        return None, token
    if args.mcp_url and not args.mcp:
        raise UsageError(say("mcp.cli_needs_mcp"))
    if args.mcp_url and args.mcp_server:
        raise UsageError(say("mcp.cli_one_server"))
    url = args.mcp_url or (env["mcp_url"] if args.mcp and not args.mcp_server else None)
    try:
        return (mcp_http.Target(url, say).url if url else None), token
    except mcp_tools.MCPError as exc:
        raise UsageError(str(exc)) from None


def _with_turns(policy, args, agent=None):
    import dataclasses
    import runs
    policy = policy or (runs.agent_policy(agent) if agent else config.policy())
    return dataclasses.replace(policy, max_turns=args.max_turns) if args.max_turns else policy


def _not_on_temporal(audit_dir, run_id, agent):
    """A run that lives on Temporal is answered through its workflow, never by this process while
    that workflow runs. Returns True when the run was on Temporal and its workflow has ended
    (terminated, failed, or the service no longer knows it): this machine takes it back. Whether it
    runs is asked of the service; when that cannot be told (no temporalio, no service), no."""
    import asyncio
    import audit
    try:
        snap = audit.load(audit.path_for(audit_dir, run_id))
    except audit.AuditError:
        return False                           # session.reopen says what is wrong with it
    if not isinstance(snap.get("temporal"), dict):
        return False
    say = _recorded_say(snap, agent)
    lives = say("temporal.lives", run_id=run_id, queue=snap["temporal"].get("queue"))
    try:
        durable = _durable(say)
    except UsageError as exc:                  # no temporalio here: nothing can tell
        raise UsageError(lives + say("temporal.unknown", error=str(exc))) from None
    try:
        if asyncio.run(durable.running(durable.where()[0], run_id)):
            raise UsageError(lives)
    except UsageError:
        raise
    except Exception as exc:                   # the service cannot say: the run is not taken here
        raise UsageError(lives + say("temporal.unknown", error=str(exc)[:200] or type(exc).__name__)) from None
    return True


def _recorded_say(snap, agent=None):
    """The language of `agent`, else of the agent a run's snapshot records, else Chinese."""
    if agent is not None:
        return agent.say
    recorded = snap.get("agent") if isinstance(snap.get("agent"), dict) else {}
    return texts.of(recorded["language"]) if recorded.get("language") in texts.LANGUAGES else texts.ZH_TEXTS


def _durable(say):
    """durable.py, imported only now (it imports temporalio); UsageError when temporalio is missing."""
    import importlib.util
    if importlib.util.find_spec("temporalio") is None:
        raise UsageError(say("temporal.missing"))
    try:
        import durable
    except ImportError:                        # a broken install: as good as missing
        raise UsageError(say("temporal.missing")) from None
    return durable


def _worker(env, named):
    """--worker: a Temporal worker on the task queue until Ctrl-C or SIGTERM."""
    import asyncio
    say = named.say if named else texts.ZH_TEXTS
    try:
        durable = _durable(say)
    except UsageError as exc:
        print(_error(exc, named), file=sys.stderr)
        return 2
    address, queue = durable.where()
    try:
        asyncio.run(durable.serve(address, queue, env,
                                  ready=lambda: print(say("temporal.worker", queue=queue, address=address), flush=True)))
    except durable.Unreachable as exc:
        print(_error(UsageError(say("temporal.unreachable", address=address, error=exc)), named), file=sys.stderr)
        return 3
    return 0


def _on_temporal(args, env, how, run_id, audit_dir, agent, policy):
    """--temporal: a new run started as a workflow, or the user's part sent to its workflow; then
    where the run stands, as a run on this machine ends (the summary, from its audit file)."""
    import asyncio
    import audit
    import session
    say = agent.say if agent else texts.ZH_TEXTS
    durable = _durable(say)
    address, queue = durable.where()
    path = audit.path_for(audit_dir, run_id)
    start = {"run_id": run_id, "audit_dir": audit_dir, "agent_file": agent.file if agent else None,
             "offline": args.offline, "model": args.model, "limits": durable.limits()}
    started = time.perf_counter()
    if how and os.path.exists(path):           # what one machine refuses, refused in the same words
        snap = audit.load(path)
        say = _recorded_say(snap, agent)
        session.accept(how, snap, say)
    try:
        if how is None:
            if os.path.exists(path):
                raise audit.AuditError(say("resume.exists", run_id=run_id, path=path))
            goal = args.goal or (agent or session.agent_for(audit_dir)).goal
            start.update(goal=goal, policy=_with_turns(policy, args, agent).to_dict())
            state = asyncio.run(durable.start(address, queue, start, started=lambda: print(
                say("cli.new_run", run_id=run_id, goal=goal) + "\n"
                + say("temporal.started", run_id=run_id, queue=queue, address=address), flush=True)))
        else:
            text = args.reply[0] if args.reply else None
            opening = dict(start, open=True) if os.path.exists(path) else None
            state = asyncio.run(durable.answer(address, queue, run_id, how, text, opening))
    except durable.Unreachable as exc:
        print(_error(UsageError(say("temporal.unreachable", address=address, error=exc)), agent), file=sys.stderr)
        return 3
    except durable.WorkflowFailed as exc:
        print(_error(UsageError(say("temporal.failed", run_id=run_id, error=exc)), agent), file=sys.stderr)
        return 3
    if state.get("status") == "refused":
        raise audit.AuditError(state["detail"])
    if not os.path.exists(path):               # the workers' storage is not this machine's
        print(say("temporal.state", **{k: state.get(k, "") for k in ("run_id", "status", "reason", "turn", "tokens",
                                                                       "path")}))
        return EXIT[state["status"]]
    r, toolset, _ = session.reopen(audit_dir, run_id, None, agent=agent)
    say = r.say
    try:
        if how in ("confirm", "reply"):
            print(say("cli.user", text=args.reply[0] if args.reply else r.agent.confirm[0]))
        if r.answer:                             # the turns were the workers': the model's last words
            print("   " + say("cli.answer", text=r.answer.replace("\n", "\n   ")))
        summary(r, time.perf_counter() - started, toolset, " --temporal")
    finally:
        toolset.close()
    return EXIT[r.status]


def _mcp_line(toolset, say):
    if toolset.mcp is not None:
        client = toolset.mcp
        print(say("cli.mcp_line", where=client.where, version=client.version, tools=", ".join(sorted(toolset.remote))))


def _require(*packages):
    """The runtime packages a run needs, found before any run state is written."""
    import importlib.util
    missing = [p for p in packages if importlib.util.find_spec(p) is None]
    if missing:
        raise UsageError(texts.Said("cli.missing", packages=", ".join(missing)))


def _target(args):
    if args.reply is not None:
        return args.reply[1] if len(args.reply) > 1 else ""
    return args.confirm if args.confirm is not None else args.resume


def _reopen(session, args, audit_dir, run_id, how, command, policy, token=None, agent=None):
    r, toolset, warnings = session.reopen(audit_dir, run_id, how, command, policy, mcp_token=token, agent=agent)
    say = r.say
    if args.mcp and r.mode != "mcp":
        print(say("cli.keeps_mode", run_id=run_id, mode=r.mode), file=sys.stderr)
    if args.mcp_url and args.mcp_url != r.mcp_url:
        print(say("mcp.cli_keeps_server", run_id=run_id, where=r.mcp_url or say("mcp.cli_local_process")),
              file=sys.stderr)
    for key in warnings:
        print(say("cli.rebuilt", key=key), file=sys.stderr)
    if args.max_turns:
        r.max_turns = args.max_turns
    print(say("cli.resumed", run_id=r.run_id, turn=r.turn, tokens=r.memory.used_tokens))
    try:
        session.answer(r, how, args.reply[0] if args.reply else None)
    except BaseException:
        toolset.close()
        raise
    if how != "resume":
        print(say("cli.user", text=r.messages[-1]["content"]))
    return r, toolset


def _go(session, r, toolset, args, env):
    import live
    import loop
    say = r.say
    console = live.Console(sys.stdout, lang=r.agent.language)

    def on_retry(attempt, total, wait, error):
        console.note(say("cli.retry", kind=error.kind, wait=wait, attempt=attempt, total=total), sys.stderr)

    def shown(kind, **data):                    # live events as they come; the rest once the console is settled
        if not console.event(kind, **data):
            report(kind, streamed=console.settle(), **data)
    try:
        ask, closer, what = session.chat(env, args.offline, args.model, on_retry, r.agent, stream=not args.no_stream)
    except BaseException:
        toolset.close()
        raise
    print(what)
    r.model = ask.model
    started = time.perf_counter()
    try:
        loop.run(r, ask, toolset, shown)
    except KeyboardInterrupt:
        console.close()
        loop.finish(r, "stopped", "interrupted", say("stop.interrupted", signal="Ctrl-C / SIGTERM"))
        print("\n" + say("cli.interrupted", run_id=r.run_id), file=sys.stderr)
        return 130
    finally:
        console.close()
        closer()
        toolset.close()
    summary(r, time.perf_counter() - started, toolset)
    return EXIT[r.status]


def report(kind, run, reply=None, calls=(), outcomes=None, text="", streamed=False, **_):
    """Print one turn, the model's answer, or the loop's nudge, once it is over (under the turn's
    header, after the text live.py showed as it came: `streamed`)."""
    say = run.say
    if kind == "nudge":
        print("   " + say("cli.nudge", text=text))
        return
    if kind not in ("turn", "answer"):
        return
    trace = run.trace[-1]
    print("   " + say("cli.stats", seconds=reply.seconds, tokens=reply.tokens,
                        estimated=say("cli.estimated") if reply.estimated else "", total=run.memory.used_tokens,
                        sent=trace["chars_sent"], full=trace["chars_full"]))
    if kind == "answer":
        if not streamed:
            print("   " + say("cli.answer", text=run.answer.replace("\n", "\n   ")))
        for claimed in run.memory.unbacked(run.answer):     # what it says it did, and nothing of the kind ran
            print("   " + say(f"cli.unbacked.{claimed}"))
        return
    if reply.message.get("content") and not streamed:
        print("   " + say("cli.model", text=reply.message["content"].strip().replace("\n", " ")[:200]))
    together = [c.name for c in calls if outcomes[c.id].concurrent]
    if together:
        print("   " + say("cli.together", names=", ".join(together)))
    for call in calls:
        outcome = outcomes[call.id]
        where = say("cli.blocked", guard=outcome.guard) if outcome.status == "blocked" else f"{outcome.seconds:.3f}s"
        print(f"   {MARK.get(outcome.status, '?')} {call.name} {call.arguments[:160]} → "
              + say("cli.outcome", gist=_gist(call, outcome.result, say), where=where))


def _gist(call, result, say):
    """One line of a result: what its tool's declaration says, or the start of its JSON."""
    if "error" in result:
        return say("cli.error", error=str(result["error"])[:120])
    gist = call.tool.gist if call.tool else None
    return gist(result) if gist else json.dumps(result, ensure_ascii=False)[:120]


def _proposal_lines(r, toolset):
    """What the user is asked to confirm, and why a second confirmation when there is one."""
    memory, p, say = r.memory, r.memory.proposal, r.say
    if r.reason == "confirmed_no_write":
        offer = " ".join(memory.offer.split())[:300] if memory.offer else ""
        return say("cli.confirmed_no_write") + ("\n   " + say("cli.confirmed_offer", offer=offer) if offer else "")
    if p is None:
        return say("cli.offer_above")
    line = say("cli.proposal", tool=p.get("tool"), shown=_shown(toolset, p.get("tool"), p))
    return line + ("\n   " + say("cli.why", why=p["why"]) if p.get("why") else "")


def _shown(toolset, name, values):
    tool = toolset.tool(name) if name else None
    shown = {k: v for k, v in values.items() if k not in ("tool", "why")}
    return tool.gist(shown) if tool and tool.gist else json.dumps(shown, ensure_ascii=False)


def summary(r, seconds, toolset, more=""):
    """How the run ended, and what the user can do next (`more`: options the next command needs)."""
    say, agent = r.say, (f" --agent {r.agent.file}" if r.agent.file else "")
    where = say("cli.audit_file", path=r.path)
    head = say("cli.head", run_id=r.run_id, turns=r.turn, tokens=r.memory.used_tokens, seconds=seconds)
    if r.status == "suspended" and r.reason in ("awaiting_confirmation", "confirmed_no_write"):
        print("\n" + say("cli.wait_confirm", head=head, proposal=_proposal_lines(r, toolset), run_id=r.run_id + more,
                         confirm=r.agent.confirm[0], where=where))
    elif r.status == "suspended":
        print("\n" + say("cli.wait_reply", head=head, run_id=r.run_id + more, where=where))
    elif r.status == "done":
        made = say("list.sep").join(say("cli.made", tool=w["tool"], shown=_shown(toolset, w["tool"], w["receipt"]))
                                    for w in r.memory.writes) or (say("cli.no_write") if r.memory.writable else "")
        print("\n" + say("cli.done", head=head, made=made, where=where))
    elif r.status == "stopped":
        print("\n" + say("cli.stopped", reason=r.reason, detail=r.detail, head=head, where=where))
    else:
        print("\n" + say("cli.failed", reason=r.reason, detail=r.detail, head=head, run_id=r.run_id + more, where=where),
              file=sys.stderr)


if __name__ == "__main__":
    code = main()
    if "durable" in sys.modules:      # temporalio's runtime threads can crash CPython's teardown (sdk-python
        sys.stdout.flush()            # issue 300: a short-lived client's process dies at exit): all is said and
        sys.stderr.flush()            # written, so leave without it
        os._exit(code)
    sys.exit(code)

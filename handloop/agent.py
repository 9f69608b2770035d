"""Command line: parse arguments, pick the mode, and run on this machine (a new run, or the user's
part given to a recorded one). Nothing else.

What a run prints is cli/printout.py's (and, while a reply streams, cli/live.py's); --worker and
--temporal are cli/temporal.py's, imported only for them; exit codes and error lines are cli/exits.py's;
--trace is cli/view.py's. A stretch of work run here is exported as OpenTelemetry spans once it is over, when the
environment asks for it (trace/send.py).
"""
import argparse
import os
import sys
import time

from . import config
from . import texts
from .calls import HookError, Interrupted
from .cli.exits import INTERNAL, UsageError, error_line, exit_code
from .cli.printout import mcp_line, report, summary, traced
from .trace.send import Stretch


def parse(argv, agent=None, prog="handloop"):
    """The arguments; usage errors in the language of `agent` (the one --agent names; Chinese
    without one), --help in its language, or in every language when no agent is named. Flags go
    anywhere on the line: a run id or file left after them belongs to the mode that takes it
    (`--check --strict RUN`, `--confirm --temporal RUN`); `prog`: the command as the user ran it."""
    say = agent.say if agent else texts.ZH_TEXTS
    helps = agent.say if agent else _every_language
    h = {k: helps("help." + k) for k in ("confirm", "reply", "resume", "check", "selftest", "json", "strict", "run_id",
                                         "audit_dir", "offline", "model", "goal", "policy", "mcp", "mcp_server",
                                         "agent", "mcp_url", "no_stream", "temporal", "worker", "trace",
                                         "help", "approve", "decline")}
    p = argparse.ArgumentParser(prog=prog, allow_abbrev=False, add_help=False,
                                description=helps("help.description", agent=agent.name if agent else "xian-hotel"))
    p.add_argument("-h", "--help", action="help", help=h["help"])
    modes = p.add_mutually_exclusive_group()
    modes.add_argument("--confirm", nargs="?", const="", metavar="RUN_ID", help=h["confirm"])
    modes.add_argument("--reply", nargs="+", metavar="TEXT", help=h["reply"])
    modes.add_argument("--resume", nargs="?", const="", metavar="RUN_ID", help=h["resume"])
    modes.add_argument("--check", nargs="*", metavar="RUN_ID_OR_PATH", help=h["check"])
    modes.add_argument("--selftest", action="store_true", help=h["selftest"])
    modes.add_argument("--worker", action="store_true", help=h["worker"])
    modes.add_argument("--trace", nargs="?", const="", metavar="RUN_ID", help=h["trace"])
    p.add_argument("--approve", metavar="N,N", help=h["approve"])
    p.add_argument("--decline", metavar="N,N", help=h["decline"])
    p.add_argument("--json", action="store_true", help=h["json"])
    p.add_argument("--strict", action="store_true", help=h["strict"])
    p.add_argument("--run-id", help=h["run_id"])
    p.add_argument("--audit-dir", help=h["audit_dir"])
    p.add_argument("--offline", action="store_true", help=h["offline"])
    p.add_argument("--model", help=h["model"])
    p.add_argument("--goal", help=h["goal"])
    p.add_argument("--max-turns", type=int, metavar="N", help=helps("help.max_turns", limit=config.MAX_TURNS))
    p.add_argument("--policy", metavar="FILE", help=h["policy"])
    p.add_argument("--mcp", action="store_true", help=h["mcp"])
    p.add_argument("--mcp-server", metavar="CMD", help=h["mcp_server"])
    p.add_argument("--agent", metavar="FILE", help=h["agent"])
    p.add_argument("--mcp-url", metavar="URL", help=h["mcp_url"])
    p.add_argument("--no-stream", action="store_true", help=h["no_stream"])
    p.add_argument("--temporal", action="store_true", help=h["temporal"])
    p.add_argument("rest", nargs="*", help=argparse.SUPPRESS)        # what the modes take, wherever it stands
    args = p.parse_intermixed_args(argv)
    problem = _placed(args, say) or _usage(args, say)
    if problem:
        p.error(problem)
    return args


def _placed(args, say):
    """The words left after the flags given to the mode that takes them (a RUN_ID, a reply's text, files to
    check); what is wrong when no mode takes them, or takes no more, else None."""
    rest, args.rest = args.rest, None
    if not rest:
        return None
    if args.check is not None:
        args.check += rest
    elif args.reply is not None:
        args.reply += rest
    else:
        flag = next((f for f in ("confirm", "resume", "trace") if getattr(args, f) == ""), None)
        if flag is None or len(rest) > 1:
            return say("usage.stray", words=" ".join(rest))
        setattr(args, flag, rest[0])
    return None


def numbers(text):
    """Call numbers as --approve and --decline take them ("1,3"): a tuple of positive ints, or None when the text
    is not that."""
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or not all(p.isascii() and p.isdigit() and int(p) > 0 for p in parts):
        return None
    return tuple(int(p) for p in parts)


def decision(args):
    """What --confirm decides (runs.Decision): the calls --approve and --decline name, or every waiting call."""
    from .runs import Decision
    return Decision(None, numbers(args.approve) if args.approve else None,
                    numbers(args.decline) if args.decline else None)


def invoked(argv0):
    """The command the user ran, as the hints repeat it: `python -m handloop`, `python PATH` for a script
    (the checkout's agent.py; PATH as typed), else `handloop` (the installed command)."""
    import shlex
    name = os.path.basename(argv0 or "")
    if name == "__main__.py" and os.path.basename(os.path.dirname(os.path.abspath(argv0))) == "handloop":
        return "python -m handloop"
    if name.endswith(".py"):
        return "python " + shlex.quote(argv0)
    return "handloop"


def _every_language(name, **values):
    """A help text said in every language of the catalogue, one after another."""
    return " / ".join(texts.of(language)(name, **values) for language in texts.LANGUAGES)


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
        *((getattr(args, f) is not None and args.confirm is None, lambda f=f: say("usage.confirm_only", flag="--" + f))
          for f in ("approve", "decline")),
        *((getattr(args, f) is not None and numbers(getattr(args, f)) is None,
           lambda f=f: say("usage.numbers", flag="--" + f)) for f in ("approve", "decline")),
        (args.strict and args.check is None, lambda: say("usage.check_only", flag="--strict")),
        ((args.check is not None or args.selftest or args.trace is not None) and run_only,
         lambda: say("usage.no_run", flags=" ".join(run_only))),
        (args.mcp_server is not None and not _split(args.mcp_server), lambda: say("usage.mcp_server")),
        (args.worker and run_only, lambda: say("usage.no_run", flags=" ".join(run_only))),
        (args.temporal and (args.approve or args.decline),
         lambda: say("temporal.usage", flag="--temporal", other="--approve / --decline")),
        (args.temporal and (args.check is not None or args.selftest or args.worker or args.trace is not None),
         lambda: say("temporal.usage", flag="--temporal", other="--check / --selftest / --worker / --trace")),
        (args.temporal and (args.mcp_url or args.mcp_server),
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
    from .cli import session
    try:
        return session.load_file(path)
    except session.Refused:
        return None


def _split(command):
    """A command line as argv (POSIX shell quoting); [] when empty or unparseable."""
    import shlex
    try:
        return shlex.split(command)
    except ValueError:
        return []


def main(argv=None, prog="handloop"):
    """The command line on `argv` (default: this process's); `prog`: the command as the user ran it, which
    the hints repeat (see invoked). Returns the exit code."""
    import signal
    import threading
    for stream in (sys.stdout, sys.stderr):                     # what is printed never raises for its characters
        _tolerant(stream)
    if threading.current_thread() is not threading.main_thread():
        return _main(argv, prog)
    previous = signal.signal(signal.SIGTERM, _interrupted)      # SIGTERM stops a run as Ctrl-C does
    ctrl_c = signal.getsignal(signal.SIGINT)
    if ctrl_c is signal.default_int_handler:                    # the user's, told apart from a tool's own
        signal.signal(signal.SIGINT, _interrupted)
    try:
        return _main(argv, prog)
    except KeyboardInterrupt:                                   # before or after a run's loop
        print("\n" + texts.ZH_TEXTS("cli.stopped_plain"), file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        if ctrl_c is signal.default_int_handler:
            signal.signal(signal.SIGINT, ctrl_c)


def _interrupted(signum, frame):
    raise Interrupted


def _tolerant(stream):
    """A text stream that writes what its encoding cannot carry as replacement characters."""
    try:
        stream.reconfigure(errors="replace")
    except (AttributeError, ValueError, OSError):
        pass


class _Unpiped:
    """A standard stream whose reader may go away: once a write or a flush finds the pipe closed
    (BrokenPipeError), the stream's descriptor is pointed at the null device and everything later is
    dropped, so printing never stops a run halfway (its audit file left `running`)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._silence()
            return len(text)

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._silence()

    def _silence(self):
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())
            os.close(null)
        except (OSError, ValueError, AttributeError):
            self._stream = open(os.devnull, "w")
            return
        try:                                   # what the closed pipe's buffer still held is dropped
            self._stream.flush()
        except OSError:
            self._stream = open(os.devnull, "w")

    def __getattr__(self, name):
        return getattr(self._stream, name)


def carried(args):
    """The flags a printed next step repeats, as given: --audit-dir and --agent (quoted for a shell), so the command
    it shows works where this one did."""
    import shlex
    flags = [("--audit-dir", getattr(args, "audit_dir", None)), ("--agent", getattr(args, "agent", None))]
    return "".join(f" {flag} {shlex.quote(value)}" for flag, value in flags if value)


def _main(argv, prog="handloop"):
    named = _named_agent(argv)
    args = parse(argv, named, prog)
    args.named, args.prog = named, prog
    args.hint = prog + carried(args)           # what every printed next step starts with
    try:
        env = config.settings()
    except ValueError as exc:
        print((named.say if named else texts.ZH_TEXTS)("usage.env", error=exc), file=sys.stderr)
        return 2
    if args.check is not None:                 # the judges import no model client: they start fast
        from .cli import check as check_cli
        declared, rules = None, None
        if args.agent:                         # the declarations a transcript recording no agent is judged by,
            from .cli import session           # and the code of its rules (the audit file records only their names)
            try:
                given = named or session.load_file(args.agent)
            except session.Refused as exc:
                print(error_line(exc, named), file=sys.stderr)
                return 2
            declared, rules = given.declared(), given.rule_checks()
        return check_cli.run(args.check, args.audit_dir or env["audit_dir"], args.json, strict=args.strict,
                             agent=declared, cmd=prog, rules=rules)
    if args.selftest:
        from . import selftest
        return selftest.main(mcp=args.mcp)
    if args.trace is not None:
        from .cli import view as view_cli
        return view_cli.run(args.trace, args.audit_dir or env["audit_dir"], named, cmd=prog)
    if args.worker:
        from .cli import temporal as cli_temporal
        return cli_temporal.worker(env, named)
    from . import audit
    from . import mcp_tools
    try:
        return drive(args, env)
    except (audit.AuditError, UsageError) as exc:
        print(error_line(exc, named), file=sys.stderr)
        return 2
    except HookError as exc:                   # reopening a run folds its record again: the agent's code failed
        print(error_line(exc, named), file=sys.stderr)
        return 2
    except mcp_tools.MCPAuthError as exc:      # a remote server refused us: like the model service's auth
        print(error_line(exc, named, "cli.mcp_failed"), file=sys.stderr)
        return 3
    except mcp_tools.MCPError as exc:
        print(error_line(exc, named, "cli.mcp_failed"), file=sys.stderr)
        return 2
    except OSError as exc:
        print(error_line(exc, named, "cli.audit_dir"), file=sys.stderr)
        return 2
    except Exception as exc:                   # a fault of our own before or after a run's loop: one line
        from .loop import one_line
        print(error_line(RuntimeError(texts.Said("cli.internal_line", error=one_line(exc))), named), file=sys.stderr)
        return INTERNAL


def drive(args, env):
    from . import audit
    _require("openai", "json5")
    from .cli import temporal as cli_temporal
    from . import runs
    from .cli import session
    audit_dir = args.audit_dir or env["audit_dir"]
    how = "confirm" if args.confirm is not None else "reply" if args.reply is not None else \
        "resume" if args.resume is not None else None
    run_id = (_target(args) or audit.latest_run_id(audit_dir, args.prog)) if how else (args.run_id or audit.new_run_id())
    audit.check_run_id(run_id)
    args.mcp = args.mcp or args.mcp_server is not None or args.mcp_url is not None    # either names the MCP server
    command = _split(args.mcp_server or env["mcp_server"] or "") or None
    if command is None and env["mcp_server"]:
        raise UsageError(texts.Said("cli.bad_mcp_env"))
    agent = (args.named or session.load_file(args.agent)) if args.agent else None    # a bad file: why
    url, token = _mcp_http(args, env, how, (agent.say if agent else texts.ZH_TEXTS))
    policy = session.load_policy(args.policy) if args.policy else None
    if how is None and not os.path.isdir(audit_dir):
        os.makedirs(audit_dir, exist_ok=True)
    elif how and not os.path.isdir(audit_dir) and not args.temporal:
        raise UsageError(texts.Said("resume.no_dir", folder=audit_dir))
    if agent is not None and not how and (args.mcp or args.mcp_server or url) and not agent.mcp:
        raise UsageError(agent.say("mcp.cli_no_server", name=agent.name))
    if args.temporal:                          # the run lives in a workflow: no lock here, its activities take it
        return cli_temporal.on_temporal(args, how, run_id, os.path.abspath(audit_dir), agent, policy)
    back = cli_temporal.not_on_temporal(audit_dir, run_id, agent) if how else False
    say = agent.say if agent else session.recorded_say(audit_dir, run_id) if how else texts.ZH_TEXTS
    with audit.RunLock(audit_dir, run_id, say):
        if how is None:
            mode = "mcp" if args.mcp or (agent is not None and agent.servers()) else "local"
            r, toolset = session.start(audit_dir, run_id, args.goal or "", mode, command,
                                       runs.start_policy(policy, agent, args.max_turns), mcp_url=url, mcp_token=token,
                                       agent=agent)
            print(r.say("cli.new_run", run_id=r.run_id, goal=r.messages[1]["content"]))
            mcp_line(toolset, r.say)
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
    from .mcp import http as mcp_http
    from . import mcp_tools
    try:
        token = mcp_http.check_token(env["mcp_token"], say)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if how or args.temporal:
        return None, token
    if args.mcp_url and args.mcp_server:
        raise UsageError(say("mcp.cli_one_server"))
    url = args.mcp_url or (env["mcp_url"] if args.mcp and not args.mcp_server else None)
    try:
        return (mcp_http.Target(url, say).url if url else None), token
    except mcp_tools.MCPError as exc:
        raise UsageError(str(exc)) from None


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
    for said in warnings:                      # memory rebuilt from the messages; the declaration's changes
        print(said(say) if isinstance(said, texts.Said) else say("cli.rebuilt", key=said), file=sys.stderr)
    if args.max_turns:
        r.max_turns = args.max_turns
    print(say("cli.resumed", run_id=r.run_id, turn=r.turn, tokens=r.memory.used_tokens))
    try:
        session.answer(r, how, args.reply[0] if args.reply else None, decision(args) if how == "confirm" else None)
    except BaseException:
        toolset.close()
        raise
    if how != "resume":
        print(say("cli.user", text=r.messages[-1]["content"]))
    return r, toolset


def _go(session, r, toolset, args, env):
    from .cli import live
    from . import loop
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
    r.model = ask.name
    started = time.perf_counter()
    stretch = Stretch(r.path, r.turn, _opened(args))
    try:
        loop.run(r, ask, toolset, shown, export=False)     # the stretch below is exported, Ctrl-C included
    except KeyboardInterrupt:
        console.close()
        loop.finish(r, "stopped", "interrupted", say("stop.interrupted", signal="Ctrl-C / SIGTERM"))
        print("\n" + say("cli.interrupted", run_id=r.run_id, cmd=args.hint), file=sys.stderr)
        traced(stretch, say)
        return 130
    finally:
        console.close()
        closer()
        toolset.close()
    summary(r, time.perf_counter() - started, toolset, cmd=args.hint)
    traced(stretch, say)
    return exit_code(r.status, r.reason)


def _opened(args):
    """How this stretch of work began: "" (a new run), "confirm", "reply" or "resume"."""
    return "confirm" if args.confirm is not None else "reply" if args.reply is not None else \
        "resume" if args.resume is not None else ""


def command(argv=None):
    """The `handloop` command (and `python -m handloop`, `python agent.py`): main(), then leave. What it
    prints goes to a reader that may stop reading (`handloop --check --json | head`): the work goes on and
    is recorded as if nobody watched, and the exit code is the work's."""
    sys.stdout, sys.stderr = _Unpiped(sys.stdout), _Unpiped(sys.stderr)
    code = main(argv, invoked(sys.argv[0] if sys.argv else ""))
    if "temporalio" in sys.modules:      # temporalio's runtime threads can crash CPython's teardown (sdk-python
        sys.stdout.flush()            # issue 300: a short-lived client's process dies at exit): all is said and
        sys.stderr.flush()            # written, so leave without it
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    command()

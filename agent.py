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

EXIT = {"done": 0, "suspended": 0, "stopped": 1, "error": 3, "running": 3}
MARK = {"ok": "✓", "error": "✗", "timeout": "⏱", "unknown": "?", "blocked": "⛔"}


class UsageError(Exception):
    """Bad usage the user can fix (exit 2)."""


def parse(argv):
    p = argparse.ArgumentParser(prog="agent.py", allow_abbrev=False,
                                description="手写 Agent 循环：西安订酒店（计划、护栏、并发、压缩、审计、挂起与续跑）")
    modes = p.add_mutually_exclusive_group()
    modes.add_argument("--confirm", nargs="?", const="", metavar="RUN_ID", help="确认挂起运行的提案并续跑（默认最近一次运行）")
    modes.add_argument("--reply", nargs="+", metavar="TEXT", help="用其他答复续跑挂起的运行：--reply TEXT [RUN_ID]；答复永远不算确认")
    modes.add_argument("--resume", nargs="?", const="", metavar="RUN_ID", help="从最后一次审计继续被中断的运行")
    modes.add_argument("--check", nargs="*", metavar="RUN_ID_OR_PATH", help="离线检查审计文件或消息数组（默认最近一次运行）")
    modes.add_argument("--selftest", action="store_true", help="不连模型、不联网的机制自检（临时目录，不留文件）")
    p.add_argument("--json", action="store_true", help="与 --check 合用：以 JSON 输出检查结果")
    p.add_argument("--strict", action="store_true", help="与 --check 合用：除非每项检查都通过，否则退出码为 1（待定也算）")
    p.add_argument("--run-id", help="新运行的 id（默认自动生成）")
    p.add_argument("--audit-dir", help="审计目录（环境变量 AGENT_AUDIT_DIR，默认 ./audit）")
    p.add_argument("--offline", action="store_true", help="强制使用内置离线模型")
    p.add_argument("--model", help="模型名（环境变量 AGENT_MODEL）")
    p.add_argument("--goal", help="任务目标（默认：西安订酒店）")
    p.add_argument("--max-turns", type=int, metavar="N", help=f"整个运行最多的模型轮数（默认 {config.MAX_TURNS}）")
    p.add_argument("--policy", metavar="FILE", help="运行策略（JSON：max_turns、token_budget、deadline、result_max_chars、"
                   "compact_budget、final_prompt、tools）；续跑时给出则替换记录的策略")
    p.add_argument("--mcp", action="store_true", help="天气改由 MCP 服务提供（search_location + get_weather）；续跑沿用运行开始时的模式")
    p.add_argument("--mcp-server", metavar="CMD", help="MCP 服务的启动命令（环境变量 AGENT_MCP_SERVER；默认用本 Python 运行 mcp_tools.py）")
    p.add_argument("--no-stream", action="store_true", help="不流式接收模型回复，整段收到后再显示（环境变量 AGENT_STREAM=0）")
    args = p.parse_args(argv)
    if args.reply is not None and len(args.reply) > 2:
        p.error("--reply 只接受 TEXT 和可选的 RUN_ID 两个值")
    if args.max_turns is not None and not 1 <= args.max_turns <= 1000:
        p.error("--max-turns 应在 1 到 1000 之间")
    if args.goal is not None and not args.goal.strip():
        p.error("--goal 不能为空")
    if args.json and args.check is None:
        p.error("--json 只能与 --check 一起用")
    if args.strict and args.check is None:
        p.error("--strict 只能与 --check 一起用")
    run_only = [f for f, v in (("--run-id", args.run_id), ("--goal", args.goal), ("--max-turns", args.max_turns),
                              ("--model", args.model), ("--offline", args.offline), ("--policy", args.policy)) if v]
    if (args.check is not None or args.selftest) and run_only:
        p.error(f"--check/--selftest 不运行任务，不接受 {' '.join(run_only)}")
    if args.mcp_server is not None and not _split(args.mcp_server):
        p.error("--mcp-server 不能为空")
    return args


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
        print("\n已中断。", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def _terminated(signum, frame):
    raise KeyboardInterrupt


def _main(argv):
    args = parse(argv)
    try:
        env = config.settings()
    except ValueError as exc:
        print(f"错误：环境变量不合法：{exc}", file=sys.stderr)
        return 2
    if args.check is not None:                 # the judges import no model client: they start fast
        import checks
        return checks.run(args.check, args.audit_dir or env["audit_dir"], args.json, strict=args.strict)
    if args.selftest:
        import selftest
        return selftest.main(mcp=args.mcp)
    import audit
    import mcp_tools
    try:
        return drive(args, env)
    except (audit.AuditError, UsageError) as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 2
    except mcp_tools.MCPError as exc:
        print(f"错误：MCP 模式无法运行：{exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"错误：无法读写审计目录：{exc}", file=sys.stderr)
        return 2


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
        raise UsageError("--mcp-server 只在 MCP 模式下有用：新运行请同时加 --mcp")
    command = _split(args.mcp_server or env["mcp_server"] or "") or None
    if command is None and env["mcp_server"]:
        raise UsageError("环境变量 AGENT_MCP_SERVER 不是合法的命令行")
    policy = session.load_policy(args.policy) if args.policy else None
    if how is None and not os.path.isdir(audit_dir):
        os.makedirs(audit_dir, exist_ok=True)
    elif how and not os.path.isdir(audit_dir):
        raise UsageError(f"审计目录 {audit_dir} 不存在")
    with audit.RunLock(audit_dir, run_id):
        if how is None:
            r, toolset = session.start(audit_dir, run_id, args.goal or config.DEFAULT_GOAL,
                                       "mcp" if args.mcp else "local", command, _with_turns(policy, args))
            print(f"新运行 {r.run_id}\n目标：{r.messages[1]['content']}")
            _mcp_line(toolset)
        else:
            r, toolset = _reopen(session, args, audit_dir, run_id, how, command, policy)
        return _go(session, r, toolset, args, env)


def _with_turns(policy, args):
    import dataclasses
    policy = policy or config.policy()
    return dataclasses.replace(policy, max_turns=args.max_turns) if args.max_turns else policy


def _mcp_line(toolset):
    if toolset.mcp is not None:
        client = toolset.mcp
        print(f"MCP 模式：天气由 MCP 服务提供（{' '.join(client.command)}，协议 {client.version}，"
              f"工具 {', '.join(sorted(toolset.remote))}）")


def _require(*packages):
    """The runtime packages a run needs, found before any run state is written."""
    import importlib.util
    missing = [p for p in packages if importlib.util.find_spec(p) is None]
    if missing:
        raise UsageError(f"缺少依赖 {', '.join(missing)}：请先运行 pip install -r requirements.txt")


def _target(args):
    if args.reply is not None:
        return args.reply[1] if len(args.reply) > 1 else ""
    return args.confirm if args.confirm is not None else args.resume


def _reopen(session, args, audit_dir, run_id, how, command, policy):
    r, toolset, warnings = session.reopen(audit_dir, run_id, how, command, policy)
    if args.mcp and r.mode != "mcp":
        print(f"注意：运行 {run_id} 以 {r.mode} 模式开始，续跑沿用该模式（忽略 --mcp）", file=sys.stderr)
    for key in warnings:
        print(f"注意：审计文件中 memory.{key} 与 messages 记录不一致，已按 messages 重建", file=sys.stderr)
    if args.max_turns:
        r.max_turns = args.max_turns
    print(f"续跑运行 {r.run_id}（第 {r.turn} 轮之后，已用 {r.memory.used_tokens} tokens）")
    try:
        session.answer(r, how, args.reply[0] if args.reply else None)
    except BaseException:
        toolset.close()
        raise
    if how != "resume":
        print(f"用户：{r.messages[-1]['content']}")
    return r, toolset


def _go(session, r, toolset, args, env):
    import live
    import loop
    console = live.Console(sys.stdout)

    def on_retry(attempt, total, wait, error):
        console.note(f"   模型请求失败（{error.kind}），{wait:.1f} 秒后重试（{attempt}/{total}）", sys.stderr)

    def shown(kind, **data):                    # live events as they come; the rest once the console is settled
        if not console.event(kind, **data):
            report(kind, streamed=console.settle(), **data)
    ask, closer, what = session.chat(env, args.offline, args.model, on_retry, stream=not args.no_stream)
    print(what)
    r.model = ask.model
    started = time.perf_counter()
    try:
        loop.run(r, ask, toolset, shown)
    except KeyboardInterrupt:
        console.close()
        loop.finish(r, "stopped", "interrupted", "被中断（Ctrl-C 或 SIGTERM）")
        print(f"\n已中断。继续：python agent.py --resume {r.run_id}", file=sys.stderr)
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
    if kind == "nudge":
        print("   循环提示（不是用户答复）：" + text)
        return
    if kind not in ("turn", "answer"):
        return
    trace = run.trace[-1]
    print(f"   模型 {reply.seconds:.2f}s · 本轮 {reply.tokens} tokens"
          f"{'（估算）' if reply.estimated else ''} · 累计 {run.memory.used_tokens} tokens"
          f" · 发送 {trace['chars_sent']} 字符（全量历史 {trace['chars_full']}）")
    if kind == "answer":
        if not streamed:
            print("   模型答复：" + run.answer.replace("\n", "\n   "))
        return
    if reply.message.get("content") and not streamed:
        print("   模型：" + reply.message["content"].strip().replace("\n", " ")[:200])
    together = [c.name for c in calls if outcomes[c.id].concurrent]
    if together:
        print(f"   并发执行：{', '.join(together)}")
    for call in calls:
        outcome = outcomes[call.id]
        where = f"拦截[{outcome.guard}]" if outcome.status == "blocked" else f"{outcome.seconds:.3f}s"
        print(f"   {MARK.get(outcome.status, '?')} {call.name} {call.arguments[:160]} → {_gist(call, outcome.result)}"
              f"（{where}）")


def _gist(call, result):
    """One line of a result: what its tool's declaration says, or the start of its JSON."""
    if "error" in result:
        return "错误：" + str(result["error"])[:120]
    gist = call.tool.gist if call.tool else None
    return gist(result) if gist else json.dumps(result, ensure_ascii=False)[:120]


def _proposal_lines(r, toolset):
    """What the user is asked to confirm, and why a second confirmation when there is one."""
    memory, p = r.memory, r.memory.proposal
    if r.reason == "confirmed_no_write":
        return ("你已确认，但模型没有下单，而是答复了文字（见上方模型答复）。可以再次确认让它下单，或用 --reply 说明。\n"
                "   确认过的方案：" + " ".join(memory.offer.split())[:300] if memory.offer else "你已确认，但模型没有下单。")
    if p is None:
        return "提案：见上方模型答复。确认后，模型下的单必须是这段话写明的酒店和房型（日期、晚数也要对得上），否则不会执行"
    line = f"提案（{p.get('tool')}）：{_shown(toolset, p.get('tool'), p)}"
    return line + (f"\n   需要再次确认：{p['why']}" if p.get("why") else "")


def _shown(toolset, name, values):
    tool = toolset.tool(name) if name else None
    shown = {k: v for k, v in values.items() if k not in ("tool", "why")}
    return tool.gist(shown) if tool and tool.gist else json.dumps(shown, ensure_ascii=False)


def summary(r, seconds, toolset):
    """How the run ended, and what the user can do next."""
    where = f"审计文件：{r.path}"
    head = f"运行 {r.run_id} · {r.turn} 轮 · {r.memory.used_tokens} tokens · 本次用时 {seconds:.2f}s"
    if r.status == "suspended" and r.reason in ("awaiting_confirmation", "confirmed_no_write"):
        print(f"\n⏸ 已挂起，等待你确认。{head}\n   {_proposal_lines(r, toolset)}\n   确认预订：python agent.py --confirm {r.run_id}\n"
              f"   不订或修改：python agent.py --reply \"不订了\" {r.run_id}\n   {where}")
    elif r.status == "suspended":
        print(f"\n⏸ 已挂起，等待你答复。{head}\n   答复：python agent.py --reply \"...\" {r.run_id}\n   {where}")
    elif r.status == "done":
        made = "；".join(f"已完成 {w['tool']}：{_shown(toolset, w['tool'], w['receipt'])}" for w in r.memory.writes) \
            or "没有执行任何写操作"
        print(f"\n✔ 完成。{head}\n   {made}\n   {where}")
    elif r.status == "stopped":
        print(f"\n■ 已停止（{r.reason}）：{r.detail}\n   {head}\n   {where}")
    else:
        print(f"\n✖ 模型服务失败（{r.reason}）：{r.detail}\n   {head}\n   运行已保存，稍后可继续："
              f"python agent.py --resume {r.run_id}\n   {where}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())

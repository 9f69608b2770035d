"""A run's parts, put together for the command line: the tool set (the task's declarations over
the demo hotel system's store, local or MCP), the model client (online or the built-in offline
model), a new or reopened run, and which states each way of resuming accepts.

Invariants: nothing here prints or parses arguments (agent.py does); every refusal is a Refused
with a message the user can act on; a run is touched only after it was accepted; what is built
here is released by `close()` of what it returns.
"""
import os

import audit
import config
import loop
import model
import tools
import toolset


class Refused(audit.AuditError):
    """The run is not in a state this way of resuming accepts, or the request is not usable."""


# how each way of resuming treats each state: None accepts it, a text refuses it with that hint
ACCEPTS = {
    "confirm": {"suspended": None, "done": "已经完成，不能再确认或答复，也不会产生新的写操作",
                "running": "被中断过而不是在等待答复，请用 --resume 继续",
                "error": "因模型服务失败而中断，请用 --resume 继续（或用 --reply 补充说明）",
                "stopped": "已停止（{reason}），不能再续跑"},
    "reply": {"suspended": None, "error": None, "done": "已经完成，不能再确认或答复，也不会产生新的写操作",
              "running": "被中断过而不是在等待答复，请用 --resume 继续", "stopped": "已停止（{reason}），不能再续跑"},
    "resume": {"running": None, "error": None, "suspended": "正在等待你的答复：用 --confirm 确认，或 --reply 答复",
               "done": "已经完成", "stopped": "已停止（{reason}），不能续跑"},
}
RESUMABLE_STOPS = ("interrupted", "deadline")      # a stopped run that --resume may continue


def accept(how, snap):
    """Raise Refused unless a run in this state may be resumed this way."""
    status, reason = snap["status"], snap.get("reason") or ""
    if how == "resume" and status == "stopped" and reason in RESUMABLE_STOPS:
        return
    hint = ACCEPTS[how].get(status)
    if hint is not None:
        raise Refused(f"运行 {snap['run_id']} {hint.format(reason=reason)}")


def tool_set(audit_dir, run_id, mode, mcp_command=None, schemas=None, visible=None):
    """The run's tool set; in MCP mode it connects now, unless recorded `schemas` spare it that."""
    store = tools.BookingStore(os.path.join(audit_dir, "bookings.db"))
    return toolset.ToolSet(run_id, store, mode, mcp_command=mcp_command if mode == "mcp" else None,
                           schemas=schemas if mode == "mcp" else None, visible=visible)


def start(audit_dir, run_id, goal, mode, mcp_command=None, policy=None):
    """A new run, its first snapshot written: (run, tool set)."""
    os.makedirs(audit_dir, exist_ok=True)
    policy = policy or config.policy()
    ts = tool_set(audit_dir, run_id, mode, mcp_command, visible=policy.tools)
    try:
        return loop.begin(audit_dir, run_id, goal, ts, "", policy=policy), ts
    except BaseException:
        ts.close()
        raise


def reopen(audit_dir, run_id, how, mcp_command=None, policy=None):
    """A recorded run, accepted for `how` ("confirm", "reply", "resume"): (run, tool set, warnings).
    `policy` replaces the recorded one when given."""
    if not os.path.isdir(audit_dir):
        raise Refused(f"审计目录 {audit_dir} 不存在")
    r, ts, warnings = loop.reopen(
        audit_dir, run_id,
        lambda snap: tool_set(audit_dir, run_id, snap["mode"], mcp_command, snap["tools"],
                              (policy.tools if policy else (snap.get("policy") or {}).get("tools"))),
        lambda snap: accept(how, snap))
    if policy is not None:
        r.policy = policy
    return r, ts, warnings


def answer(r, how, text=None):
    """The user's part of a resume: 「确认」, another reply, or nothing (a plain --resume)."""
    if how == "confirm":
        loop.add_user(r, config.CONFIRM_TEXT)
    elif how == "reply":
        text = (text or "").strip()
        if not text or text == config.CONFIRM_TEXT:
            raise Refused("--reply 不能为空，也不能用来确认；确认请用 --confirm")
        loop.add_user(r, text)
    else:
        r.status = "running"


def chat(env, offline=False, name=None, on_retry=None, stream=True):
    """The model: (ask, close, what it is). Online when a key is set and not `offline`; else the
    built-in offline model behind the loopback endpoint, through the same client. Streamed
    unless `stream` is false or the environment turns it off (AGENT_STREAM=0)."""
    limits = {"stream": stream and env.get("stream", True),
              "max_seconds": env.get("model_max_seconds", config.MODEL_MAX_SECONDS)}
    if env["api_key"] and not offline:
        name = name or env["model"]
        ask = model.connect(env["base_url"], env["api_key"], name, env["model_timeout"], env["model_retries"],
                            on_retry=on_retry, **limits)
        return ask, ask.close, f"模型：{name} @ {env['base_url'] or 'https://api.openai.com/v1'}"
    import offline as offline_model
    from endpoint import Endpoint
    endpoint = Endpoint(offline_model.respond)
    ask = model.connect(endpoint.url, "offline-no-key", config.OFFLINE_MODEL, env["model_timeout"],
                        env["model_retries"], on_retry=on_retry, loopback=True, **limits)
    why = "--offline" if offline else "未设置 OPENAI_API_KEY"
    return ask, lambda: (ask.close(), endpoint.close()), \
        f"离线模式：使用内置离线模型（{why}），经 openai 客户端访问 {endpoint.url}"


def load_policy(path):
    """A policy from a JSON file, over the defaults and the environment; Refused when unusable."""
    import json
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return config.Policy.from_dict(data, base=config.policy())
    except OSError as exc:
        raise Refused(f"无法读取策略文件 {path}：{exc.strerror or exc}") from None
    except ValueError as exc:
        raise Refused(f"策略文件 {path} 不可用：{exc}") from None


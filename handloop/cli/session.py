"""A run's parts, put together for the command line: the agent (the Xi'an agent over the demo
hotel system's store, or one loaded from a file), its tool set (local or MCP), the model client
(online, the agent's own offline model, or the built-in one), a new or reopened run.

Invariants: nothing here prints or parses arguments (agent.py and cli/printout.py do); every refusal is a Refused
with a message the user can act on; a run is touched only after it was accepted; what is built
here is released by `close()` of what it returns.
"""
import os

from .. import audit
from .. import config
from .. import runs
from .. import model
from .. import parts
from .. import texts
from .. import tools
from .. import toolset
from ..values import redacted_url


Refused = runs.Refused
accept = runs.accept           # which states each way of resuming accepts: the loop's rules
load_file = parts.load_file  # the agent an agent file declares (below the command line: durable/ loads it too)


def agent_for(audit_dir, given=None, recorded=None):
    """The agent of a run: the one given (--agent), else the one its audit file recorded (loaded
    again from its file), else the Xi'an agent over the demo store in `audit_dir`."""
    if given is not None:
        if recorded and recorded.get("name") not in (None, given.name):
            raise Refused(f"--agent {given.file}: the run is {recorded.get('name')!r}'s, not {given.name!r}'s")
        return given
    if recorded and recorded.get("file"):
        return load_file(recorded["file"])
    return tools.xian_agent(tools.BookingStore(os.path.join(audit_dir, "bookings.db")))


def recorded_say(audit_dir, run_id):
    """The language of the agent a run's audit file records (Chinese when it cannot be read: reopen
    says why), for what is said before the run is reopened."""
    try:
        snap = audit.load(audit.path_for(audit_dir, run_id))
    except audit.AuditError:
        return texts.ZH_TEXTS
    return runs.language_of(snap)


def tool_set(audit_dir, run_id, mode, mcp_command=None, schemas=None, visible=None, mcp_url=None, mcp_token=None,
             agent=None):
    """The run's tool set; in MCP mode it connects now, unless recorded `schemas` spare it that.
    `mcp_url`: the MCP server over HTTP instead of a process (`mcp_token`: its bearer token)."""
    agent = agent or agent_for(audit_dir)
    return toolset.ToolSet(run_id, agent, mode, mcp_command=mcp_command if mode == "mcp" else None,
                           schemas=schemas if mode == "mcp" else None, visible=visible, mcp_url=mcp_url,
                           mcp_token=mcp_token)


def start(audit_dir, run_id, goal, mode, mcp_command=None, policy=None, mcp_url=None, mcp_token=None, agent=None):
    """A new run of `agent` (default: the Xi'an agent), its first snapshot written: (run, tool set)."""
    os.makedirs(audit_dir, exist_ok=True)
    agent = agent or agent_for(audit_dir)
    policy = policy or runs.agent_policy(agent)
    ts = tool_set(audit_dir, run_id, mode, mcp_command, visible=policy.tools, mcp_url=mcp_url, mcp_token=mcp_token,
                  agent=agent)
    try:
        return runs.begin(audit_dir, run_id, goal, ts, "", policy=policy), ts
    except BaseException:
        ts.close()
        raise


def reopen(audit_dir, run_id, how, mcp_command=None, policy=None, mcp_token=None, agent=None):
    """A recorded run, accepted for `how` ("confirm", "reply", "resume"; None: as it is, to be shown):
    (run, tool set, warnings).
    `policy` replaces the recorded one when given. A run started over HTTP goes back to its recorded
    URL; a run of an agent from a file reopens that agent (or `agent`, when given)."""
    if not os.path.isdir(audit_dir):
        raise Refused((agent.say if agent else texts.ZH_TEXTS)("resume.no_dir", folder=audit_dir))
    r, ts, warnings = runs.reopen(
        audit_dir, run_id,
        lambda snap: tool_set(audit_dir, run_id, snap["mode"], mcp_command, snap["tools"],
                              (policy.tools if policy else (snap.get("policy") or {}).get("tools")),
                              mcp_url=snap.get("mcp_url"), mcp_token=mcp_token,
                              agent=agent_for(audit_dir, agent, snap.get("agent"))),
        lambda snap: accept(how, snap) if how else None)
    if policy is not None:
        r.policy = policy
    return r, ts, warnings


answer = runs.answer


def chat(env, offline=False, name=None, on_retry=None, agent=None, stream=True):
    """The model: (ask, close, what it is). Online when a key is set and not `offline`; else the
    agent's own offline model (the built-in one for the Xi'an agent) behind the loopback endpoint,
    through the same client. Streamed unless `stream` is false or the environment turns it off
    (AGENT_STREAM=0)."""
    say = agent.say if agent else texts.ZH_TEXTS
    limits = {"stream": stream and env.get("stream", True),
              "max_seconds": env.get("model_max_seconds", config.MODEL_MAX_SECONDS)}
    if env["api_key"] and not offline:
        name = name or env["model"]
        ask = model.connect(env["base_url"], env["api_key"], name, env["model_timeout"], env["model_retries"],
                            on_retry=on_retry, **limits)
        return ask, ask.close, say("cli.online", model=name, url=redacted_url(env["base_url"] or "https://api.openai.com/v1"))
    respond = agent.offline if agent is not None and agent.offline else None
    if respond is None and agent is not None and agent.file is not None:
        raise Refused(say("cli.no_offline", name=agent.name))
    if respond is None:
        from ..demo import offline as offline_model
        respond = offline_model.respond
    ask = model.offline_model(respond, timeout=env["model_timeout"], retries=env["model_retries"],
                              on_retry=on_retry, **limits)
    why = "--offline" if offline else say("cli.no_key")
    return ask, ask.close, say("cli.offline", why=why, url=ask.url)


def load_policy(path):
    """A policy from a JSON file, over the defaults and the environment; Refused when unusable."""
    import json
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return config.Policy.from_dict(data, base=config.policy())
    except OSError as exc:
        raise Refused(texts.Said("policy.unreadable", path=path, error=exc.strerror or exc)) from None
    except ValueError as exc:
        raise Refused(texts.Said("policy.unusable", path=path, error=texts.said_of(exc))) from None
    except RecursionError:
        raise Refused(texts.Said("policy.unusable", path=path, error=texts.Said("call.nested"))) from None


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
from .. import parts
from .. import texts
from .. import tools


Refused = runs.Refused
accept = runs.accept           # which states each way of resuming accepts: the loop's rules
load_file = parts.load_file  # the agent an agent file declares (below the command line: durable/ loads it too)


def agent_for(audit_dir, given=None, recorded=None):
    """The agent of a run: the one given (--agent), else the one its audit file recorded, loaded again the way the
    record says (its file, or its importable module: parts.recorded; Refused, in one line, saying --agent FILE is
    needed when that fails), else, for a record that names no agent or the Xi'an agent with no way to load it, the
    Xi'an agent over the demo store in `audit_dir`. Another agent the record cannot load is never replaced by the
    demo: Refused, --agent FILE is needed."""
    if given is not None:
        if recorded and recorded.get("name") not in (None, given.name):
            raise Refused(f"--agent {given.file}: the run is {recorded.get('name')!r}'s, not {given.name!r}'s")
        return given
    found = parts.recorded(audit_dir, recorded)
    if found is not None:
        return found
    if isinstance(recorded, dict) and recorded.get("name") not in (None, tools.NAME):
        raise parts.cannot_load(recorded)
    return tools.agent_in(audit_dir)


def origin(agent, audit_dir):
    """How a starter on another machine (a Temporal worker) loads the run's agent: parts.origin of the one given,
    else of the Xi'an agent."""
    return parts.origin(agent or agent_for(audit_dir))


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
    """The run's tool set (parts.tool_set), of the Xi'an agent when no agent is given."""
    return parts.tool_set(run_id, mode, agent or agent_for(audit_dir), mcp_command=mcp_command, schemas=schemas,
                          visible=visible, mcp_url=mcp_url, mcp_token=mcp_token)


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
    """The model (parts.chat): online when a key is set and not `offline`; else the agent's own offline model (the
    Xi'an agent's, the built-in one, when no agent is given)."""
    return parts.chat(env, offline, name, on_retry, agent or tools.agent_in("."), stream)


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


"""A run's life between its turns: begun with its first snapshot on disk, reopened from its audit
file (the resume point), accepted for a way of resuming, and given the user's part before
loop.run goes on.

Invariants: the audit file is the only resume point: `reopen` rebuilds memory from the recorded
messages (memory's own fold) and reports where the stored memory disagrees; `accept(how, snap)`
holds the command line's rules for every state, and refuses with a Refused the user can act on;
a confirmation is the agent's first confirm reply added as the user's message, never a flag; the
confirm replies a run recorded are the ones its record is read with; a declaration that differs
from the recorded one is said (`changes`), and `reopen` refuses one that would let a recorded write
run with less than the run required (no longer a write, fewer requirements or sources, another
effect). Imports loop.py (the run and its save), never the other way round.

The library's way to a run is here too: `start` a new run of an agent, and `confirm`, `reply` or `resume` a
recorded one (each reopens it from its audit file, checks its state and adds the user's part); `loop.run`
drives it. Each takes the run's lock first, as the command line does (audit.RunLock: a run held by another
program, or by another part of this one, is refused with an AuditError), and hands it to the tool set it
returns: the run is the caller's until `toolset.close()`.
"""
from __future__ import annotations

import dataclasses
import enum
import json
import os
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable

from . import audit
from . import config
from . import context
from . import texts
from .agents import located
from .loop import Run, save, system_message
from .memory import Memory, rebuild

if TYPE_CHECKING:
    from .agents import Agent
    from .toolset import ToolSet


class Resume(str, enum.Enum):
    """How a recorded run goes on: the user confirms, the user replies, or the run resumes where it was cut off."""

    CONFIRM = "confirm"
    REPLY = "reply"
    RESUME = "resume"


def way(how: Resume | str) -> Resume:
    """`how` as a Resume; ValueError naming the ways for anything else (a user's words are not a way)."""
    try:
        return Resume(how)
    except ValueError:
        raise ValueError(f"{how!r} is not a way of resuming a run: use one of "
                         f"{', '.join(w.value for w in Resume)} (the user's words go with reply(..., text))") from None


def start(agent: Agent, run_id: str | None = None, *, audit_dir: str = "audit", goal: str = "", model: str = "",
          policy: config.Policy | None = None) -> tuple[Run, ToolSet]:
    """A new run of `agent` (its first snapshot on disk): (run, its tool set). `run_id`: a fresh one when None;
    `goal`: the agent's own when empty; `model`: the name the audit file records. Drive it with loop.run;
    close the tool set when done with it (that releases the run's lock). AuditError when the run is another's."""
    from .toolset import ToolSet
    agent = located(agent)                 # the record says how to load it again (handloop --confirm RUN)
    run_id = run_id or audit.new_run_id()
    os.makedirs(audit_dir, exist_ok=True)
    lock = audit.RunLock(audit_dir, run_id, agent.say).acquire()
    try:
        toolset = ToolSet(run_id, agent=agent, visible=policy.tools if policy else None)
    except BaseException:
        lock.give_up()
        raise
    toolset.lock = lock
    try:
        return begin(audit_dir, run_id, goal, toolset, model, policy=policy), toolset
    except BaseException:
        toolset.lock = None
        toolset.close()
        lock.give_up()
        raise


@dataclasses.dataclass(frozen=True)
class Decision:
    """What a confirmation decides of the waiting proposal: `proposal`, the number of the proposal the user was
    shown (None: whichever waits); `approve`, the numbers of the calls approved (None: every waiting call not
    declined); `decline`, those declined (None: every waiting call not approved)."""
    proposal: int | None = None
    approve: tuple[int, ...] | None = None
    decline: tuple[int, ...] | None = None

    @property
    def names(self) -> bool:
        """Whether it names a proposal or calls (else it approves whatever waits)."""
        return self.proposal is not None or self.approve is not None or self.decline is not None


def confirm(agent: Agent, run_id: str, *, audit_dir: str = "audit", proposal: int | None = None,
            approve: Iterable[int] | None = None, decline: Iterable[int] | None = None) -> tuple[Run, ToolSet]:
    """The recorded run `run_id` of `agent`, suspended on a proposal, with the user's confirmation added: (run, tool
    set), ready for loop.run, which then runs exactly the approved calls, as held, once each. By default every
    waiting call is approved; `approve` names the calls approved (by their numbers, `Run.proposal["calls"][i]["n"]`;
    the others are declined), `decline` the calls declined (the others approved); `proposal` the number of the
    proposal the user was shown. Refused when nothing waits and a proposal or a call is named, or when what is
    named is not what waits (a proposal that was replaced, a call already decided)."""
    decision = Decision(proposal, _tuple(approve), _tuple(decline))
    return _go_on(agent, run_id, audit_dir, Resume.CONFIRM, decision=decision)


def _tuple(numbers):
    return None if numbers is None else tuple(numbers)


def reply(agent: Agent, run_id: str, text: str, *, audit_dir: str = "audit") -> tuple[Run, ToolSet]:
    """The recorded run `run_id` with the user's reply `text` added (never a confirmation): (run, tool set)."""
    return _go_on(agent, run_id, audit_dir, Resume.REPLY, text)


def resume(agent: Agent, run_id: str, *, audit_dir: str = "audit") -> tuple[Run, ToolSet]:
    """The recorded run `run_id`, cut off (crash, kill, outage, deadline), ready to go on from its last
    audited turn, adding no message: (run, tool set)."""
    return _go_on(agent, run_id, audit_dir, Resume.RESUME)


def _go_on(agent, run_id, audit_dir, how, text=None, decision=None):
    from .toolset import ToolSet
    agent = located(agent)
    if not os.path.isdir(audit_dir):
        raise audit.AuditError(agent.say("resume.no_dir", folder=audit_dir))
    lock = audit.RunLock(audit_dir, run_id, agent.say).acquire()        # as the command line: one driver at a time
    try:
        r, toolset, warnings = reopen(audit_dir, run_id, lambda snap: ToolSet(     # the recorded mode, MCP tools, URL
            run_id, agent=agent, mode=snap["mode"], schemas=snap["tools"], mcp_url=snap.get("mcp_url")),
            lambda snap: accept(how, snap))
    except BaseException:
        lock.give_up()
        raise
    toolset.lock = lock
    r.warnings = warnings
    try:
        answer(r, how, text, decision)
    except BaseException:
        toolset.close()
        raise
    return r, toolset


def begin(audit_dir, run_id, goal, toolset, model, max_turns=None, budget=None, fsync=True, policy=None,
          created=None):
    """A new run of `toolset.agent` under `policy` (default: the agent's, else config.policy();
    `max_turns`, `budget` override it): its first snapshot is on disk before the model is asked
    anything. `goal` empty: the agent's default goal. `created`: its creation stamp when the starter chose it
    (a run started on Temporal: its trace id is made from it), else now."""
    agent, path = toolset.agent, audit.path_for(audit_dir, run_id)
    if os.path.exists(path):
        raise audit.AuditError(agent.say("resume.exists", run_id=run_id, path=path))
    goal = goal or agent.goal
    memory = Memory(agent=agent).declare(toolset.tools.values())
    memory.absorb_user(goal)
    policy = dataclasses.replace(policy or agent_policy(agent))
    policy.max_turns, policy.token_budget = max_turns or policy.max_turns, budget or policy.token_budget
    r = Run(run_id, path, toolset.mode, model, [{"role": "system", "content": ""}, {"role": "user", "content": goal}],
            memory, toolset.schemas, policy=policy, created=created or stamp(), fsync=fsync,
            mcp_url=getattr(toolset, "mcp_url", None), agent=agent, declared=agent.declared(toolset.tools.values()))
    r.messages[0] = system_message(agent, memory, 0)
    save(r)
    return r


def stamp():
    """A run's creation stamp, now."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def agent_policy(agent):
    """The policy an agent's runs start with: its own (over the environment's), or the environment's."""
    if agent.policy is None:
        return config.policy()
    if isinstance(agent.policy, config.Policy):
        return agent.policy
    return config.Policy.from_dict(agent.policy, base=config.policy())


def start_policy(policy=None, agent=None, max_turns=None):
    """The policy a new run starts with: `policy` (a --policy file's), else `agent`'s, else the
    environment's; `max_turns` (the command line's --max-turns) over it."""
    policy = policy or (agent_policy(agent) if agent else config.policy())
    return dataclasses.replace(policy, max_turns=max_turns) if max_turns else policy


def reopen(audit_dir, run_id, toolset_for, accept):
    """A run loaded from its audit file, memory rebuilt from its messages.

    `accept(snapshot)` raises AuditError when the run is not in a state the caller can use (for the
    command line's ways: `lambda snap: accept("confirm", snap)`); `toolset_for(snapshot)` makes the
    tool set of the recorded mode, for the recorded agent (snap["agent"]: its name, file, confirm
    replies, language). The confirm replies the run recorded are the ones its record is read with.
    Returns (run, toolset, warnings).
    """
    path = audit.path_for(audit_dir, run_id)
    snap = audit.load(path)
    if snap["run_id"] != run_id:
        raise audit.CorruptAuditError(language_of(snap)("resume.wrong_id", path=path, recorded=snap["run_id"]))
    accept(snap)
    r, toolset, warnings = restore(path, snap, toolset_for)
    weakened = [w for w in warnings if isinstance(w, Changed) and w.weakens]
    if weakened:
        toolset.close()
        raise Refused(r.say("resume.weakened", run_id=run_id, what=r.say.join(r.say("resume.weakens", **w.values) for w in weakened)))
    return r, toolset, warnings


def restore(path, snap, toolset_for):
    """The run a loaded, checked snapshot records (its file at `path`), memory rebuilt from its
    messages; no file is read here (a workflow restores the snapshot an activity loaded).
    Returns (run, toolset, warnings): a warning is a memory field (str) that disagreed with the
    messages, or a Changed: where the agent's declaration differs from the one the run recorded."""
    toolset = toolset_for(snap)
    changed = changes(snap.get("agent"), toolset.agent.declared(toolset.tools.values()))
    agent = toolset.agent = _recorded_agent(toolset.agent, snap)
    memory = rebuild(snap["messages"], toolset.prepare, toolset.tools.values(), agent)
    memory.used_tokens = sum(t.get("tokens", 0) for t in snap["trace"] if isinstance(t, dict))
    warnings = _disagreements(snap["memory"], memory) + changed
    r = Run(snap["run_id"], path, snap["mode"], snap.get("model", ""), snap["messages"], memory, snap["tools"],
            trace=snap["trace"], status=snap["status"], reason=snap.get("reason", ""), turn=snap["turn"],
            policy=_recorded_policy(snap, agent), created=snap.get("created", ""), answer=snap.get("answer", ""),
            window=context.Window.from_dict(snap.get("epoch"), snap["messages"]),
            elapsed=float(snap.get("elapsed") or 0.0), mcp_url=snap.get("mcp_url"), agent=agent,
            temporal=snap["temporal"] if isinstance(snap.get("temporal"), dict) else None,
            declared=agent.declared(toolset.tools.values()))
    return r, toolset, warnings


def _recorded_agent(agent, snap):
    """The agent with the confirm replies its run recorded (what confirmed then confirms now)."""
    recorded = (snap.get("agent") or {}).get("confirm") if isinstance(snap.get("agent"), dict) else None
    if isinstance(recorded, list) and recorded and all(isinstance(c, str) and c.strip() for c in recorded) \
            and tuple(recorded) != agent.confirm:
        return dataclasses.replace(agent, confirm=tuple(recorded))
    return agent


class Changed(texts.Said):
    """One way the agent's declaration differs from the one its run recorded, to be said before the
    run goes on; `weakens`: the change would let a recorded write tool run with less than the run
    required of it (reopen refuses such a run)."""

    def __init__(self, name, /, weakens=False, **values):
        super().__init__(name, **values)
        self.weakens = weakens


def changes(recorded, now):
    """How the declaration `now` (agents.Agent.declared) differs from the `recorded` one: Changed,
    each naming what changed, in the order of the recorded tools. Confirm replies: the recorded ones
    stay (_recorded_agent). A recorded write tool weakens when it is no longer a write, or drops a
    requirement or a source, or changes its effect (which defines both what a confirmation
    authorises and the write's idempotency key); a recorded outside tool weakens when it is no longer outside or
    drops a source; a recorded write weakens when it drops a rule its calls kept (a run that recorded rules); any
    other change is only said. An audit file that
    recorded no tools (older ones) is not compared."""
    if not isinstance(recorded, dict) or not isinstance(recorded.get("tools"), dict):
        return []
    said = []
    if recorded.get("confirm") and list(recorded["confirm"]) != list(now["confirm"]):
        said.append(Changed("resume.changed_confirm", recorded=_shown(recorded["confirm"]),
                            now=_shown(now["confirm"])))
    if "planning" in recorded and recorded["planning"] != now["planning"]:
        said.append(Changed("resume.changed_planning", recorded=_shown(recorded["planning"]),
                            now=_shown(now["planning"])))
    for name, before in recorded["tools"].items():
        after = now["tools"].get(name)
        if after is None:
            said.append(Changed("resume.tool_gone", tool=name))
            continue
        said += [Changed("resume.changed", weakens=_weakens(before, after, field), tool=name, field=field,
                         recorded=_shown(before.get(field)), now=_shown(after.get(field)))
                 for field in ("kind", "requires", "sources", "effect", "outside") + (("rules",) if "rules" in before else ())
                 if before.get(field) != after.get(field)]
    said += [Changed("resume.tool_added", tool=name, kind=after["kind"])
             for name, after in now["tools"].items() if name not in recorded["tools"]]
    return said


def _weakens(before, after, field):
    """Whether changing `field` of a recorded tool lets its writes (or, declared outside, its reads) run with less
    than before."""
    if field == "outside" or (before.get("outside") and field == "sources"):
        return bool(before.get("outside")) and (field == "outside" or
                                                 any(item not in (after.get(field) or []) for item in before.get(field) or []))
    if before.get("kind") != "write":
        return False
    if field in ("kind", "effect"):
        return True
    return any(item not in (after.get(field) or []) for item in before.get(field) or [])


def _shown(value):
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


# how each way of resuming treats each state: None accepts it, a text key refuses it with that hint
ACCEPTS = {
    "confirm": {"suspended": None, "done": "resume.done", "running": "resume.running",
                "error": "resume.error_confirm", "stopped": "resume.stopped"},
    "reply": {"suspended": None, "error": None, "done": "resume.done", "running": "resume.running",
              "stopped": "resume.stopped"},
    "resume": {"running": None, "error": None, "suspended": "resume.waiting", "done": "resume.finished",
               "stopped": "resume.stopped"},
}
RESUMABLE_STOPS = ("interrupted", "deadline", "hook", "model_code")   # a stopped run that "resume" may continue


class Refused(audit.AuditError):
    """The run is not in a state this way of resuming accepts (a second `confirm` of a run already done), or the
    user's part is not usable (a confirmation in words that are not a confirm reply), or the agent's declaration
    changed so that a recorded write would run with less than the run required. Exported as handloop.Refused;
    an AuditError, so a HandloopError."""


def accept(how: Resume | str, snap: dict[str, Any], say: Callable[..., str] | None = None) -> None:
    """Raise Refused unless a run in this state (an audit snapshot) may be resumed `how`: "confirm"
    (the user confirms the proposal), "reply" (any other reply; also after a model-service error),
    "resume" (a run cut off: crash, kill, model outage, Ctrl-C, deadline). A done run takes nothing."""
    how = way(how).value
    say = say or language_of(snap)
    status, reason = snap["status"], snap.get("reason") or ""
    if how == "resume" and status == "stopped" and reason in RESUMABLE_STOPS:
        return
    hint = ACCEPTS[how].get(status)
    if hint is not None:
        raise Refused(say("resume.refused", run_id=snap["run_id"], hint=say(hint, reason=reason)))


def language_of(snap):
    """The catalogue of the language the run's recorded agent speaks (Chinese when it records none)."""
    agent = snap.get("agent") if isinstance(snap.get("agent"), dict) else {}
    return texts.of(agent.get("language") if agent.get("language") in texts.LANGUAGES else "zh")


def answer(r: Run, how: Resume | str, text: str | None = None, decision: Decision | None = None) -> None:
    """The user's part of a resume: a confirmation (CONFIRM: the agent's first confirm reply, and the `decision` it
    records on its message when calls wait), another reply (REPLY: never empty, never one of the confirm replies
    while calls wait for a decision), or nothing (RESUME). Any other `how` is a ValueError."""
    how = way(how)
    if how is Resume.CONFIRM:
        if text is not None and not r.agent.confirms(text):
            raise Refused(r.say("resume.bad_confirm", words=", ".join(r.agent.confirm)))
        word = text.strip() if text is not None else r.agent.confirm[0]
        add_user(r, *_decided(r, word, decision or Decision()))
    elif how is Resume.REPLY:
        text = (text or "").strip()
        if not text or (r.agent.confirms(text) and r.memory.waiting()):
            raise Refused(r.say("resume.bad_reply"))
        add_user(r, text)
    else:
        r.status = "running"


def _decided(r, word, decision):
    """The confirmation's message text and the decision it records, checked against what waits: (text, decision
    dict or None). With nothing waiting a confirmation approves nothing (an ordinary reply), and naming a proposal
    or calls is Refused; a proposal or a call named that does not wait is Refused."""
    say, current, waiting = r.say, r.memory.current, [c["n"] for c in r.memory.waiting()]
    if not waiting:
        if decision.names:
            raise Refused(say("resume.nothing_held"))
        return word, None
    number, shown = current["number"], ", ".join(f"#{n}" for n in waiting)
    if decision.proposal is not None and decision.proposal != number:
        raise Refused(say("resume.not_waiting", what=say("resume.what_proposal", number=decision.proposal),
                          number=number, numbers=shown))
    named = [n for n in (*(decision.approve or ()), *(decision.decline or ())) if n not in waiting]
    if named or set(decision.approve or ()) & set(decision.decline or ()):
        bad = ", ".join(f"#{n}" for n in named or sorted(set(decision.approve or ()) & set(decision.decline or ())))
        raise Refused(say("resume.not_waiting", what=say("resume.what_calls", numbers=bad), number=number,
                          numbers=shown))
    yes = [n for n in waiting if (n in decision.approve if decision.approve is not None else
                                  n not in (decision.decline or ()))]
    no = [n for n in waiting if n not in yes]
    text = word if not no else say("proposal.decision", approved=", ".join(f"#{n}" for n in yes) or say("proposal.none"),
                                   declined=", ".join(f"#{n}" for n in no))
    return text, {"proposal": number, "approve": yes, "decline": no}


def _recorded_policy(snap, agent):
    """The policy an audit file records (older files: their limits)."""
    limits = snap.get("limits") or {}
    recorded = snap.get("policy") or {"max_turns": limits.get("max_turns", config.MAX_TURNS),
                                      "token_budget": limits.get("budget", config.TOKEN_BUDGET)}
    try:
        return config.Policy.from_dict(recorded)
    except ValueError as exc:
        raise audit.AuditError(agent.say("resume.bad_policy", error=texts.told(exc, agent.say))) from None


def _disagreements(stored, rebuilt):
    """Fields where the stored memory says something the messages do not."""
    fresh = rebuilt.to_dict()
    return [key for key in fresh if key in stored and key not in ("used_tokens", "spins") and stored[key] != fresh[key]]


def add_user(r, text, decision=None):
    """Append the user's reply and take it into memory; the audit file has it before any model call. `decision`:
    what a confirmation decides of the waiting calls ({"proposal", "approve", "decline"}), kept on the message
    (never sent to the model: context.py leaves it out) so that the record alone says what was approved."""
    r.messages.append({"role": "user", "content": text, **({"decision": decision} if decision else {})})
    r.memory.absorb_user(text, decision)
    r.status, r.reason = "running", ""
    save(r)

"""Decide, before anything runs, which calls of a turn may execute.

Invariants: guards see only the calls and memory, never a tool's effect; they never change the
run's memory (the proposal a blocked write becomes is carried in its result and enters memory
through absorb); every decision is a named Decision, and every blocked call gets an Outcome,
hence a tool message. They name no tool: they read each call's declaration (kind,
prerequisites, sources, effect). Checks, in order: duplicate (the same call earlier in this
turn), repeated (blocked before), arguments, calls per turn, budget, spin, plan first, plan order,
provenance (every source of the call holds, for each element of a list argument on its own, from any one of a
source's alternatives: texts/stated.py, as the judge reads it), rule, unconfirmed write. `rule`: a call that breaks
one of the agent's rules (calls.Rule, its tool's or the agent's: `check(args, facts)` over the run's facts as of the
decision, texts/rules.py) is blocked with the rule's reason before it can become a proposal, so the user is never
asked to confirm it; a rule decides over what would have run: the run's successful calls so far and the writes
decided before it in the same turn, in the order they would run (allowed, or put to the user in the same proposal:
a batch is judged as a whole, when it is proposed and when the confirmed calls run); it is given deep, read-only
copies of the arguments and facts (what runs is what was held, whatever a rule does); a rule's code that fails (one
that changes what it was given included) is the agent's fault (a HookError, as a hook's).

Calls earlier in the same turn count as they will have happened: each decision is made against
a fork of memory into which the calls decided before it were folded by memory's own fold (a
state call with the result its pure tool will give, `preview`; any other allowed call as run,
outcome unknown; a blocked call as blocked). A write whose prerequisites or sources run earlier
in the same turn is decided after they ran, with their outcomes folded in: `screen` yields the
calls in batches, and the caller executes each batch before the next is decided. A spin is
repetition across turns: a call that already ran SPIN_REPEATS times since the last user
message, an A-B-A-B alternation, or a call blocked before and sent again unchanged with nothing
new in between; the same call twice in one turn is a duplicate, answered by pointing to the
first. A write runs only as a call the user approved: a held call of the proposal they were shown, the same call
by its digest (confirmation/held.py: the tool and every argument), each approved call once; any other write is held
for the user as a proposal, exactly as the model made it (`proposal_for`: the tool and every argument, and what a
describe hook adds beside them). This very write made already is refused with its receipt. No words are read here.
Provenance reads each declared Source before any call runs, whatever its kind: a tool's results, or the user's own
messages (`Source.user`: a value the user typed whole, not a part of a longer run they typed, texts/stated.py
`typed`; the model is told which
tool's result it came from instead). A write refused so never becomes a proposal; a tool declared `outside` has a
Source on every argument that can carry text (calls.py refuses it otherwise), so no value a read brought in leaves.
"""
import copy
import dataclasses

from . import config
from .calls import HookError, Outcome, hooked
from .confirmation.held import call_digest
from .texts import rules, stated

@dataclasses.dataclass(frozen=True)
class Decision:
    guard: str
    allowed: bool
    reason: str = ""
    propose: bool = False       # the blocked write is held: the proposal put to the user
    rule: str = ""              # the name of the agent's rule the call breaks (guard "rule")


ALLOW = Decision("all", True)


def screen(pending, memory, budget=None, preview=None, outcomes=None):
    """Yield a turn's calls in batches (allowed, blocked id → Outcome). A write that depends on a
    call allowed earlier in the turn waits for the next batch: before deciding it, the outcomes the
    caller put in `outcomes` for the batch before are folded in. `preview(call, view)`: the result a
    state call's pure tool will give, or None."""
    turn, waiting = _Turn(memory, pending), list(pending)
    while waiting:
        allowed, blocked, waiting = _batch(turn, waiting, budget, preview)
        yield allowed, blocked
        for call in turn.unknown:                 # ran in that batch: now their outcomes are known
            if outcomes is not None and call.id in outcomes:
                turn.view.absorb(call, outcomes[call.id].result, counted=True)
        turn.beside = [c for c in turn.beside if all(c is not u for u in turn.unknown)]   # now facts, if they succeeded
        turn.unknown = []


def _batch(turn, calls, budget, preview):
    allowed, blocked, later = [], {}, []
    for call in calls:
        if turn.depends(call):
            later.append(call)
            continue
        decision = turn.decide(call, budget)
        if call.kind == "write" and (decision.allowed or decision.propose):
            turn.beside.append(call)                  # it will run (or, confirmed, would): the next rules see it
        if decision.allowed:
            allowed.append(call)
            result = preview(call, turn.view) if preview and call.kind == "state" else None
            if result is None:
                turn.view.ran(call)                   # it will have run; its outcome is not known yet
                turn.unknown.append(call)
            else:
                turn.view.absorb(call, result)
        else:
            extra = turn.proposal_for(call) if decision.propose else {}
            extra.update({"rule": decision.rule} if decision.rule else {})
            outcome = Outcome({"error": decision.reason, "blocked_by": decision.guard, **extra},
                              status="blocked", guard=decision.guard)
            blocked[call.id] = outcome
            turn.view.absorb(call, outcome.result)
    return allowed, blocked, later


class _Turn:
    """One turn's decisions: `view` is memory with the calls decided so far folded in."""

    def __init__(self, memory, pending):
        self.memory, self.view, self.say = memory, memory.fork(), memory.say
        self.taken = set()                           # the numbers of the approved calls this turn runs
        self.place = {id(c): i for i, c in enumerate(pending, 1)}   # a call's place in the request
        self.signatures = {}                         # signature -> the place of its first call
        self.unknown = []                            # calls of this batch whose outcome is not known yet
        self.beside = []                             # writes decided to run (or put to the user) whose outcome
                                                     # is not known yet, in the order they would run

    def depends(self, call):
        """Whether this write needs the outcome of a call allowed in the current batch."""
        needs = {*call.tool.requires,
                 *(o.tool for s in call.tool.sources for o in s.options() if o.tool != stated.USER)} \
            if call.kind == "write" and call.tool else ()
        return any(c.name in needs for c in self.unknown)

    def decide(self, call, budget):
        place = self.place[id(call)]
        first = self.signatures.setdefault(call.signature, place)
        if first != place:
            return Decision("duplicate", False, self.say("guard.duplicate", first=first))
        return self._checked(call, budget)

    def _checked(self, call, budget):
        for check in (self.repeated, self.arguments, self.too_many, self.budget, self.spin, self.plan_first,
                      self.plan_order, self.provenance, self.rule, self.unconfirmed_write):
            decision = check(call, budget)
            if not decision.allowed:
                return decision
        return ALLOW

    def arguments(self, call, budget):
        return ALLOW if call.problem is None else Decision("arguments", False, call.problem)

    def too_many(self, call, budget):
        if self.place[id(call)] <= config.MAX_CALLS_PER_TURN:
            return ALLOW
        return Decision("too_many_calls", False, self.say("guard.too_many", limit=config.MAX_CALLS_PER_TURN))

    def budget(self, call, budget):
        if budget is None or self.memory.used_tokens <= budget:
            return ALLOW
        return Decision("budget", False, self.say("guard.budget", used=self.memory.used_tokens, budget=budget))

    def spin(self, call, budget):
        sig, runs = call.signature, self.view.runs
        if runs.get(sig, 0) >= config.SPIN_REPEATS:
            return Decision("spin", False, self.say("guard.spin", times=runs[sig]))
        last = self.view.recent[-3:]
        if len(last) == 3 and last[0] == last[2] != sig == last[1]:
            return Decision("spin", False, self.say("guard.alternation"))
        return ALLOW

    def repeated(self, call, budget):
        """A call blocked before, sent again unchanged with nothing new since: a spin, whatever
        blocked it (checked first, so that bad arguments sent again are counted too)."""
        if self.view.blocked.get(call.signature):
            return Decision("spin", False, self.say("guard.repeated"))
        return ALLOW

    def plan_first(self, call, budget):
        if call.kind == "state" or self.view.plan or not self.view.agent.planning:
            return ALLOW
        return Decision("plan_first", False, self.say("guard.plan_first"))

    def plan_order(self, call, budget):
        view = self.view
        if call.kind == "state":
            return ALLOW
        missing = [t for t in call.tool.requires if t not in view.done_tools]
        if missing:
            return Decision("plan_order", False, self.say("guard.requires", tool=call.name, missing=", ".join(missing)))
        steps = [s for s in view.plan if s.get("tool") == call.name]
        step = next((s for s in steps if view.step_status(s["index"]) != "done"), steps[-1] if steps else None)
        undone = [d for d in (step or {}).get("after", []) if 1 <= d <= len(view.plan)
                  and view.step_status(d) != "done"]
        if step is None or not undone:
            return ALLOW
        return Decision("plan_order", False, self.say("guard.plan_order", index=step["index"], undone=undone))

    def provenance(self, call, budget):
        """Each source of the call holds (every one: two sources naming one argument must both hold), for every
        element of a list argument, from one of its alternatives."""
        for source in call.tool.sources:
            missing = self.view.unsourced(source, call.args)
            if missing:
                return Decision("provenance", False, self._unsourced(source, *missing[0]))
        return ALLOW

    def _unsourced(self, source, at, row):
        """Why these values are refused (the element of a list argument, by its place), and what may be used
        instead (or what is missing)."""
        say, view = self.say, self.view
        shown = say.join(f"{a.replace('[]', f'[{at}]')}={v!r}" for a, v in zip(source.args, row))
        if source.from_user:
            return self._not_typed(shown, row)
        offered = view.sourced_values(source) if len(source.args) == 1 else []
        tools = say.join(dict.fromkeys(o.tool for o in source.options() if o.tool != stated.USER))
        user = any(o.tool == stated.USER for o in source.options())
        if offered:
            hint = say("guard.provenance_offered", offered=", ".join(offered[:20]))
        elif any(view.results.get(o.tool) for o in source.options()):   # it ran, yet nothing is where it looks
            hint = say.join(say("guard.provenance_path", source=o.tool, path=o.path, field=o.fields[0])
                            for o in source.options() if view.results.get(o.tool))
        else:
            hint = say("guard.provenance_first", source=tools)
        key = "guard.provenance_or_user" if user else "guard.provenance_any" if source.alternatives else "guard.provenance"
        return say(key, values=shown, source=tools) + self._brought(row, source) + hint

    def _brought(self, row, source):
        """Where refused values came from when another tool's result holds them (a link in a fetched page): said, so
        the model and the user see that the value was found, not invented, and why it still may not be used."""
        sources = {o.tool for o in source.options()}
        brought = sorted({t for v in row for t in self.view.brought(v) if t not in sources})
        return self.say("guard.provenance_brought", tools=", ".join(brought)) if brought else ""

    def _not_typed(self, shown, row):
        """Why values that must come from the user's own words are refused, and which tool's result they came from
        instead (text a tool brought in is not the user's word)."""
        say, view = self.say, self.view
        brought = sorted({t for v in row if not stated.typed(v, view.said) for t in view.brought(v)})
        hint = say("guard.not_typed_brought", tools=", ".join(brought)) if brought else ""
        return say("guard.not_typed", values=shown) + hint + say("guard.not_typed_next")

    def rule(self, call, budget):
        """The first of the agent's rules over this call that it breaks, by the rule's own reason (the model can
        correct the call); the facts are the run's as of this decision, the turn's earlier calls included, and the
        writes decided before it in this turn that would run with it (allowed, or put to the user: `beside`), with
        no result yet."""
        for rule in self.view.agent.rules_for(call.tool):
            reason = self._broken(call, rule)
            if reason:
                return Decision("rule", False, reason, rule=rule.name)
        return ALLOW

    def _broken(self, call, rule):
        """Why `call` breaks `rule` ('' when it keeps it): the rule's own code, run as a hook of the tool."""
        label = f"rule {rule.name}"
        value = hooked(call.name, label, rule.check, rules.read_only(call.args or {}),
                       self.view.facts_for_rules([(c.name, c.args, None) for c in self.beside]))
        try:
            return rules.reason_of(value)
        except TypeError as exc:
            raise HookError(call.name, label, str(exc)) from None

    def unconfirmed_write(self, call, budget):
        """A write runs only as a held call the user approved (confirmation/ledger.py): the same call, by its digest,
        each approved call once. This very write made already is refused with its receipt; any other write is held
        for the user as a proposal (several of one turn make one proposal)."""
        if call.kind != "write":
            return ALLOW
        done = self.view.written(call)
        if done is not None:
            return Decision("unconfirmed_write", False, self.say("guard.written", receipt=str(done["receipt"])[:200]))
        held = self.view.ledger.take(call_digest(call), self.taken)
        if held is not None:
            self.taken.add(held["n"])
            return ALLOW
        return Decision("unconfirmed_write", False, self.say("guard.unconfirmed"), propose=True)

    def proposal_for(self, call):
        """The held write as the proposal the user will be asked to confirm: its tool and every argument that will
        run (free text whole), and apart from them what its declaration's describe hook says the user should see."""
        shows = hooked(call.name, "describe", call.tool.describe, copy.deepcopy(call.args), self.view.facts, returns=dict) \
            if call.tool.describe else {}
        return {"proposal": {"tool": call.name, "args": dict(call.args), **({"shows": shows} if shows else {})}}

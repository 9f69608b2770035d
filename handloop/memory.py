"""Run state, and what the model sees of it.

Memory is a fold over the messages: `absorb()` is the only way a tool result changes it,
`absorb_answer()` the only way a model answer does, `absorb_user()` the only way a user reply
does and `absorb_nudge()` the only way a loop's own message does, so `rebuild(messages)`
gives the same memory as the live run did (that is how a resume checks an audit file).

Proposals and confirmation (confirmation/): a proposal is the write calls of one turn the guard held for the user,
each an exact call with its own record in the ledger (confirmation/ledger.py); this module folds the run into it:
a held call's tool message holds it, the user's reply decides it (one of the agent's confirm replies, or the
decision a confirmation recorded on its message, approves; any other reply declines what waits), and a write's
outcome spends its approval (`ran`). Approvals live one tool round: what the loop did not run right after the
confirmation is spent. Words never enter the ledger. They only steer (texts/words.py): an answer that offers a write
or asks the user to confirm while nothing is held makes the loop ask for the call (`offering`, the "offer" nudge, which
forces that write), and a reply that declines ends the run's need to write (`declined`).
An agent without a write tool has nothing to confirm: its answer ends the run.
What the loop does after an answer is steer.py's (`verdict`), read from this state: the next step (`next_step`: the
plan's first ready step, or a write's prerequisites and then the write itself, for a write the run wants: `wanted`,
the plan names it or the user's own messages ask for it), pushed once per user message (`pushed`); an answer that
only gives a tool result back (`echoed`) is nudged like a call written as text, and a call written as text is asked
for again as that call (`written_tools`: its tool, or that tool's first prerequisite that can run).
`render()` projects memory into the system message (context.py lays out what is sent), in the
agent's language. What the agent's rules read of the run is every successful call so far (`done`, given to a rule as
texts/rules.Facts), then the writes decided before the call in its turn (the guards give them), and an answer that
ends the run is read against the writes' receipts (`contradicted`: another room, id, date, amount or count than a
receipt says), both as the judge reads them (texts/rules.py).
"""
import json

from . import steer
from .steer import FORCING, LOOP_NAME, NUDGES
from . import steps
from .texts import rules, stated, words
from .agents import Agent
from .calls import HookError, declared_tool, hooked
from .confirmation import Ledger, call_digest, effects_of, identity, shown
from .llm.replies import written_calls

DEFAULT_AGENT = Agent("default", "default", ())        # Chinese, 「确认」, planning on, no tools


class Memory:
    def __init__(self, goal="", agent=None):
        self.agent = agent or DEFAULT_AGENT    # its confirm replies, language and planning rule the fold
        self.say = self.agent.say
        self.writable = True      # the run has a write tool (declare() tells)
        self.write_tools: tuple = ()     # the declared write tools
        self.tool_names = ()      # the declared tools' names (a tag named after one is markup, not words)
        self.goal = goal
        self.said = []            # the user's own messages, the goal first
        self.facts = {}           # namespace -> the facts tools' absorb hooks keep ("plan": steps, marks)
        self.results = {}         # tool -> its successful results, in order (a tuple: shared safely by forks)
        self.done: tuple = ()     # (tool, args, result) of every successful call, in order: what rules read (facts)
        self.hooks = {}           # namespace -> the render hook of the tool that wrote it
        self.done_tools = set()   # tools that succeeded in this run
        self.progress = 0         # successful read and write calls: the task moved
        self.names = {}           # any id a read result gave -> the name beside it (None: no name)
        self.ledger = Ledger()    # one record per proposal, each held call with its state (confirmation/)
        self.declined = False     # the user's last reply declined the write (words: it only steers)
        self.offering = None      # the write tool the last answer offers or asks to confirm (words: steers only)
        self.written_tools = []   # the tools the last answer wrote a call of into its text (never run: steers only)
        self.words = None         # the model's own words beside its calls of the round being absorbed
        self.forced = None        # the tool the last nudge to act named (True: any call): the next request forces it
        self.writes = []          # [{"tool", "args" (its effect), "call" (every argument), "receipt"}] of the writes made
        self.runs = {}            # call signature -> times it ran since the last user message
        self.recent = []          # signatures of the last calls that ran, newest last
        self.blocked = {}         # call signature -> times blocked since anything new happened
        self.nudged = set()       # kinds of loop nudges sent since the last user message
        self.pushed = set()       # tools a forcing nudge named since the last user message (one push each)
        self.needs = {}           # tool -> the tools that must have succeeded before it (requires, sources; a
                                  # tuple of a source's alternatives: any one of them)
        self.kinds = {}           # tool -> its declared kind
        self.params = {}          # tool -> the names of its parameters (steps.py: what the user's words point at)
        self.spins = 0            # calls blocked as spins
        self.used_tokens = 0
        self.ahead = False        # a fork folding a turn ahead of the run (fork): a failing hook is left
                                  # for the run's own fold of the turn to raise, once the turn is recorded

    def declare(self, tools):
        """Start the facts of these tools' namespaces with their declared initial facts."""
        tools = list(tools)
        self.writable = any(t.kind == "write" for t in tools) if tools else self.writable
        self.write_tools = tuple(t for t in tools if t.kind == "write") or self.write_tools
        self.tool_names = tuple(t.name for t in tools) or self.tool_names
        self.kinds.update((t.name, t.kind) for t in tools)
        self.needs.update((t.name, _needs(t)) for t in tools)
        self.params.update((t.name, steps.parameters(t.parameters)) for t in tools)
        for tool in tools:
            if tool.initial:
                self.facts.setdefault(tool.namespace, {k: _copy(v) for k, v in tool.initial.items()})
        return self

    def fork(self):
        """A copy to fold a turn's calls into ahead of the run (guards, executor): what absorb may
        change in place is copied, what it only replaces or extends is shared."""
        other = Memory.__new__(Memory)
        other.__dict__ = dict(self.__dict__)
        other.facts = {ns: dict(f) for ns, f in self.facts.items()}
        other.results, other.hooks, other.names = dict(self.results), dict(self.hooks), dict(self.names)
        other.said, other.writes, other.recent = list(self.said), list(self.writes), list(self.recent)
        other.ledger = self.ledger.copy()
        other.runs, other.blocked, other.done_tools = dict(self.runs), dict(self.blocked), set(self.done_tools)
        other.nudged, other.pushed = set(self.nudged), set(self.pushed)
        other.ahead = True
        return other

    def fact(self, key, default=None):
        """A fact some tool's absorb keeps under `key` (the first namespace that has it)."""
        return next((f[key] for f in self.facts.values() if key in f), default)

    # ---- the proposals: the ledger's records (confirmation/ledger.py), and the one in force ----
    @property
    def proposals(self):
        """Every proposal of the run in order, each with its held calls and their states."""
        return self.ledger.records

    @property
    def current(self):
        """The proposal in force: the last record still proposed or confirmed (a dict, see ledger.py), or None."""
        return self.ledger.current

    @property
    def proposal(self):
        """The first held call of the proposal in force that waits for the user or, approved, to run (a dict: "n",
        "tool", "args", "digest", "state"), or None."""
        pending = self.pending()
        return pending[0] if pending else None

    def pending(self):
        """The held calls of the proposal in force that wait for the user, or approved, to run."""
        return self.ledger.waiting() or self.ledger.approved()

    def waiting(self):
        """The held calls the user has been shown and not yet answered."""
        return self.ledger.waiting()

    @property
    def confirmed(self):
        """The user approved held calls of the proposal in force that have not all run yet."""
        return self.ledger.confirmed

    @property
    def plan(self):
        """[{"index", "title", "tool", "after"}] as set_plan returned it."""
        return self.facts.get("plan", {}).get("steps", [])

    @property
    def marks(self):
        return self.facts.get("plan", {}).get("marks", {})

    # ---- the fold ----
    def absorb_turn(self, calls, results, words=None):
        """Take one tool round into memory: the blocked calls first, then those that ran, so a call
        blocked beside a call that brought news is not "blocked with nothing new since". `words`: the model's
        own text beside its calls (shown with a proposal they make). An approval not used in this round is spent:
        the loop runs approved calls in the round right after the confirmation, and never later."""
        self.ledger.new_turn()                 # this turn's held writes form one proposal
        self.words = " ".join(words.split()) if isinstance(words, str) and words.strip() else None
        pairs = list(zip(calls, results))
        blocked = [(c, r) for c, r in pairs if "blocked_by" in r]
        for call, result in blocked + [p for p in pairs if p not in blocked]:
            self.absorb(call, result)
        self.ledger.spend()
        self.words = None

    def absorb(self, call, result, counted=False):
        """Take one call's result (the JSON object its tool message holds) into memory; `counted`:
        its run was already counted (`ran`, while the turn was screened)."""
        if "blocked_by" in result:
            self._absorb_blocked(call, result)
            return
        if not counted:
            count_run(self.runs, self.recent, call.signature)
        if "error" in result:
            if call.kind == "write":
                self._spend(call)
            return
        self.done_tools.add(call.name)
        self.blocked = {}
        self.nudged.discard("idle")            # something new happened: the task may be nudged again
        self.results[call.name] = (*self.results.get(call.name, ()), result)
        self.done = (*self.done, (call.name, call.args or {}, result))
        if call.kind in ("read", "write"):
            self.progress += 1
            _names(result, self.names)
        if call.kind == "write":
            self.writes.append({"tool": call.name, "args": _effect(call), "call": dict(call.args or {}),
                                "receipt": stated.returned(result)})
            self.ledger.ran(call_digest(call), True)
        tool = call.tool
        if tool is not None and tool.absorb is not None:
            try:
                hooked(tool.name, "absorb", tool.absorb, self.facts.setdefault(tool.namespace, {}), call.args or {},
                       stated.returned(result))
            except HookError:
                if not self.ahead:
                    raise
                return
            if tool.render is not None:
                self.hooks[tool.namespace] = (tool.name, tool.render)

    def _spend(self, call):
        """A write ran and did not succeed (an error, an unknown outcome): the approval that let it run is
        spent all the same. Any later write, this same call included, is a new proposal for the user; the
        loop does not push this write again before the user speaks."""
        self.ledger.ran(call_digest(call), False)
        self.pushed.add(call.name)

    def ran(self, call):
        """A call that will have run by the time the next call runs, its outcome not known yet."""
        count_run(self.runs, self.recent, call.signature)

    def _absorb_blocked(self, call, result):
        """A blocked call. A duplicate within one turn changes nothing (the first call stands for it); a write
        the guard held for the user becomes a held call of this turn's proposal, exactly as the model made it."""
        if result["blocked_by"] == "duplicate":
            return
        self.blocked[call.signature] = self.blocked.get(call.signature, 0) + 1
        if result["blocked_by"] == "spin":
            self.spins += 1
        elif result["blocked_by"] == "unconfirmed_write" and isinstance(result.get("proposal"), dict):
            shows = result["proposal"].get("shows")
            self.ledger.hold(call.name, dict(call.args or {}), call_digest(call), call.id, self.words,
                             shows if isinstance(shows, dict) else None)
            self.declined = False

    def absorb_answer(self, text):
        """A model answer without tool calls. It changes no proposal: words are never a proposal. It only steers:
        the write tool it offers or asks the user to confirm, while nothing is held (`offering`), and the tools it
        wrote a call of into its text (`written_tools`: the "written_call" nudge forces the first that can run)."""
        self.offering = steer.offering(self, text) if self.writable and not self.ledger.current else None
        self.written_tools = written_calls(text, self.params or self.tool_names)

    def records(self, tool, path):
        """The records at `path` of `tool`'s successful results so far (where sourced values come from); for the
        user's words (stated.USER, Source.user) the user's own messages, never a tool's result, the model's text or
        a loop message (texts/stated.py reads them)."""
        if tool == stated.USER:
            return list(self.said)
        return [r for result in self.results.get(tool, ()) for r in stated.records_at(result, path)]

    def facts_for_rules(self, beside=()):
        """The run's facts as the agent's rules read them (texts/rules.py): every successful call so far, then
        `beside`, the (tool, arguments, None) of the writes decided before the call in its turn, not run yet."""
        return rules.Facts((*self.done, *beside))

    def contradicted(self, text):
        """[(tool, argument, {values named}, {values written})] where an answer names a value the receipts of the
        writes made contradict (texts/rules.py): another room, id, date, amount or count than the write's. Read once
        the answer is absorbed: an answer that left a proposal in force speaks of the next write, and contradicts
        nothing."""
        if self.current is not None:
            return []
        declared = {t.name: t for t in self.write_tools}
        writes = [(w["tool"], _declared(declared[w["tool"]]), w["args"], w["receipt"]) for w in self.writes
                  if w["tool"] in declared]
        return rules.contradicted(words.plain(text), writes, self.records, self.names)

    def unbacked(self, text):
        """The kinds of action ("read", "write") an answer says were done while none of that kind
        succeeded in the run: the model claims work it did not do."""
        did = {"write"} if self.writes else set()
        did |= {"read"} if self.progress > len(self.writes) else set()
        return sorted(words.claims(text) - did)

    def next_step(self):
        """The tool the task needs next and can call now: set_plan while a planning agent has no plan; else, for the
        first pending plan step whose dependencies are done, or else (as for an agent without planning) for a write
        the run wants (`wanted`, and only while no write was made: after one, only the plan names further writes),
        that tool once its prerequisites (requires, sources) succeeded, or the first prerequisite that can run,
        followed down its own prerequisites (steps.first: bounded, the one the user's words point at first, never
        a call that would repeat one that answered). None when nothing is ready."""
        if self.agent.planning and not self.plan and "set_plan" in self.tool_names:
            return "set_plan"
        ready = [s.get("tool") for s in self._pending() if self._ready(s)]
        writes = [] if self.writes else [w.name for w in self.write_tools if self.wanted(w.name)]
        return steps.first([*ready, *writes], self._graph())

    def toward(self, tool):
        """The tool to call now on the way to `tool`: itself once its prerequisites succeeded, else the first of them
        that can run, followed down (steps.first); None when nothing is ready."""
        return steps.first([tool], self._graph())

    def _graph(self):
        bare = {sig.split(":", 1)[0] for sig in self.runs}
        return steps.Graph(self.needs, frozenset(self.done_tools),
                           frozenset(t for t, kind in self.kinds.items() if kind in ("read", "write")),
                           frozenset(t for t in bare if t in self.params and not self.params[t]),
                           tuple(self.said), self.params)

    def wanted(self, tool):
        """Whether the run asks for the write `tool`: the plan names it, or the user's own messages ask for it
        (`asked`). Only a wanted write is pushed (next_step); a run that wants none ends with its answer."""
        return any(step.get("tool") == tool for step in self.plan) or self.asked(tool)

    def asked(self, tool):
        """Whether the user's own messages (never the model's, a tool's or the loop's) ask for the write `tool`:
        a verb of its name or description (texts/words.asks_for), not a question of how to do it themselves."""
        write = next((t for t in self.write_tools if t.name == tool), None)
        return write is not None and words.asks_for(self.said, write.name, write.description)

    def step_of(self, tool):
        """The first pending plan step that names `tool` (a dict as in `plan`), or None."""
        return next((s for s in self.plan if s.get("tool") == tool and self.step_status(s["index"]) == "pending"), None)

    def absorb_user(self, text, decision=None):
        """A user reply. While held calls wait for the user, the reply decides them: the `decision` a confirmation
        recorded on its message (the calls it approves and declines, of the proposal it names), else one of the
        agent's confirm replies approves every waiting call, and any other reply declines them all. With nothing
        waiting a reply approves nothing, whatever it says. Either way it is new information, so repeating a call
        after it is not a spin, and the loop may nudge again; a reply that declines in words only steers."""
        self.runs, self.recent, self.blocked, self.nudged, self.pushed = {}, [], {}, set(), set()
        self.said.append(text)
        if not self.goal:
            self.goal = text
            return
        self.declined = words.declines(text)
        if isinstance(decision, dict) and self.ledger.waiting():
            if decision.get("proposal") not in (None, self.current["number"]) or \
                    not self.ledger.decide(_numbers(decision.get("approve")), _numbers(decision.get("decline"))):
                self.ledger.decline()
        elif self.agent.confirms(text) and self.ledger.waiting():
            self.ledger.decide()
            self.declined = False
        else:
            self.ledger.decline()

    def absorb_nudge(self, text):
        """A message the loop itself sent the model: which nudge it was (never a user reply); a nudge to
        act pushes the tool it named (`target`, as of this message), which the next request forces."""
        kinds = {kind for kind in NUDGES if text.startswith(self.say(f"nudge.{kind}"))}
        self.nudged.update(kinds)
        forcing = kinds & set(FORCING)
        self.forced = self.target(next(iter(forcing))) if forcing else None
        if isinstance(self.forced, str):
            self.pushed.add(self.forced)

    def target(self, kind):
        """The tool a nudge to act of `kind` names and forces: for "offer", the write the last answer offered, or
        its first prerequisite that can run (True: any call); for the others, the first tool the last answer wrote a
        call of into its text that leads somewhere and was not pushed since the user spoke (itself, or its first
        prerequisite that can run: the model asked for it, it is sent again as a call), else the next step (None:
        no tool)."""
        if kind == "offer":
            return self.offering if self.offering is True else self.toward(self.offering)
        written = self._written_target()
        return written if written is not None else self.next_step()

    def _written_target(self):
        """The first tool the last answer wrote a call of, or its first prerequisite, that can run now, was not pushed
        since the user spoke and is not a plan step still waiting for others (a planning agent without a plan sets
        it first); None if none can."""
        if self.agent.planning and not self.plan:
            return None
        pending = self._pending()
        waiting = {s.get("tool") for s in pending} - {s.get("tool") for s in pending if self._ready(s)}
        return next((t for t in map(self.toward, self.written_tools)
                     if t is not None and t not in waiting and t not in self.pushed), None)

    def _pending(self):
        return [s for s in self.plan if self.step_status(s["index"]) == "pending"]

    def _ready(self, step):
        """Whether a plan step's dependencies are all done."""
        return all(self.step_status(d) == "done" for d in step["after"] if d <= len(self.plan))

    # ---- what the guards ask ----
    def step_status(self, index):
        """'done', 'failed' or 'pending' for a 1-based plan step: the one definition."""
        step, mark = self.plan[index - 1], self.marks.get(str(index), {})
        if mark.get("status") == "failed":
            return "failed"
        if mark.get("status") == "done" or step.get("tool") in self.done_tools:
            return "done"
        return "pending"

    def written(self, call):
        """This very write already made (the same call, confirmation/held.py: the same tool and every argument the
        same, as its idempotency key covers them): {"receipt": what it returned}, or None. An effect's list is the
        same whatever the order of its elements, unless its tool declares it `ordered`."""
        effects = effects_of(call.tool)
        this = identity(call.args, effects)
        return next(({"receipt": w["receipt"]} for w in self.writes if w["tool"] == call.name and
                     identity(w["call"], effects) == this), None)

    def unsourced(self, source, args):
        """The rows of `args` (one per element of a list argument) that no alternative of a source gives, in the
        successful results of its tool at its path: [(index, row)] (texts/stated.py, as the judge reads it)."""
        return stated.unsourced(args, source.declared(), self.records)

    def sourced_values(self, source):
        """What a source offers (each alternative's first field), for a message saying what may be used."""
        return sorted({str(r.get(o.fields[0])) for o in source.options() for r in self.records(o.tool, o.path)
                       if isinstance(r, dict) and o.fields[0] in r})

    def brought(self, value):
        """The tools whose successful results hold `value` (as the user's words are read, `stated.typed`): where a
        value that is not the user's came from."""
        return [tool for tool, results in self.results.items()
                if stated.typed(value, [json.dumps(r, ensure_ascii=False) for r in results])]

    # ---- projections ----
    def render(self, turn=0):
        """The memory block of the system message, as of `turn`: what the run has settled, which the
        messages may no longer show in full once compacted. Not the goal: the user's messages are
        never compacted away, and the goal is the first of them, right below. Nothing settled yet
        (a new run): "", no block at all (nothing to say costs nothing)."""
        say = self.say
        lines = [say("memory.step", index=s["index"], title=s["title"], status=self.step_status(s["index"]),
                     tool=say("memory.step_tool", tool=s["tool"]) if s.get("tool") else "",
                     after=say("memory.step_after", after=s["after"]) if s.get("after") else "") for s in self.plan]
        for namespace, (tool, render) in self.hooks.items():
            lines += _lines(tool, hooked(tool, "render", render, self.facts.get(namespace, {}), returns=list))
        state = say("memory.proposal_confirmed") if self.confirmed else say("memory.waiting")
        lines += [say("memory.proposal", proposal=shown.one_line(held), state=state) for held in self.pending()]
        lines += [say("memory.written", tool=w["tool"], receipt=json.dumps(w["receipt"], ensure_ascii=False))
                  for w in self.writes]
        if not lines:
            return ""
        unplanned = [say("memory.no_plan")] if self.agent.planning and not self.plan else []
        return "\n".join([say("memory.header", turn=turn), *unplanned, *lines])

    def to_dict(self):
        facts = {k: v for ns, f in self.facts.items() if ns != "plan" for k, v in f.items()}
        return {"goal": self.goal, **facts,
                "plan": [dict(s, status=self.step_status(s["index"])) for s in self.plan],
                "proposal": self.proposal, "confirmed": self.confirmed,
                "proposals": self.proposals,
                "declined": self.declined, "writes": self.writes, "spins": self.spins, "used_tokens": self.used_tokens}


def _needs(tool):
    """The tools that must have succeeded before `tool` runs: its requires, each source's tool, and for a source of
    alternatives a tuple of their tools (any one of them); none for a source the user's words may give."""
    found = [*tool.requires]
    for source in tool.sources:
        tools = tuple(dict.fromkeys(o.tool for o in source.options()))
        if stated.USER in tools:          # the user's words are there from the goal on: nothing to run first
            continue
        found.append(tools[0] if len(tools) == 1 else tools)
    return tuple(dict.fromkeys(found))


def _lines(tool, lines):
    """A render hook's lines, each a string (anything else is the hook's fault, named as such)."""
    for line in lines:
        if not isinstance(line, str):
            raise HookError(tool, "render", f"returned a {type(line).__name__} among its lines, not only str")
    return lines


def _numbers(value):
    """The call numbers a recorded decision names (None when it names none)."""
    if not isinstance(value, list):
        return None
    return [n for n in value if isinstance(n, int) and not isinstance(n, bool)]


def count_run(runs, recent, signature):
    """Record that a call ran: how often it ran, and the short window A-B-A-B is looked for in."""
    runs[signature] = runs.get(signature, 0) + 1
    recent.append(signature)
    del recent[:-4]


_names = stated.ids_in


def _copy(value):
    return json.loads(json.dumps(value))


def _effect(call):
    """The arguments that define a write's effect, as a dict (all of them when none are declared)."""
    keys = [k for k, _ in call.tool.effect] if call.tool and call.tool.effect else sorted(call.args or {})
    return {k: (call.args or {}).get(k) for k in keys}




_DECLARED: dict[int, tuple] = {}


def _declared(tool):
    """A tool's declaration as runs record it and texts/stated.py reads it (a Tool is frozen: kept by identity)."""
    hit = _DECLARED.get(id(tool))
    if hit is None or hit[0] is not tool:
        if len(_DECLARED) > 512:
            _DECLARED.clear()
        hit = _DECLARED[id(tool)] = (tool, declared_tool(tool))
    return hit[1]


def _as_object(content):
    try:
        value = json.loads(content)
    except (TypeError, ValueError):
        return {"unparsed": str(content)[:200]}
    return value if isinstance(value, dict) else {"value": value}


def echoed(text, messages):
    """Whether an answer gives a tool result back instead of words for the user: nothing but result
    blocks (<tool_response>...: a result pasted or made up, it is not an answer either way), or one
    JSON value (code fences aside) equal to the content of a tool message of `messages`."""
    tagged, bodies = words.pasted(text)
    if tagged:
        return True
    given = [_canonical(b) for b in bodies]
    return bool(given) and given[0] is not None and \
        any(_canonical(m.get("content")) == given[0] for m in messages if m.get("role") == "tool")


def _canonical(text):
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return None


def rebuild(messages, prepare, declared=(), agent=None):
    """Memory as the messages record it: the same fold the live run performed.

    `prepare` turns an assistant message's raw tool calls into Calls (the tool set's); `declared`:
    the tool set's declarations (for their initial facts); `agent`: whose run it is.
    """
    memory, calls = Memory(agent=agent).declare(declared), {}
    round_: list[tuple] = []          # (call, result) of the tool messages of the round being read
    beside = None                     # the model's own text beside the calls of that round
    for message in [*messages, {}]:
        role = message.get("role")
        if round_ and role != "tool":
            memory.absorb_turn([c for c, _ in round_], [m for _, m in round_], beside)
            round_ = []
        if role == "user" and message.get("name") == LOOP_NAME:
            memory.absorb_nudge(message.get("content") or "")
        elif role == "user":
            memory.absorb_user(message.get("content") or "", message.get("decision"))
        elif role == "assistant" and message.get("tool_calls"):
            calls = {c.id: c for c in prepare(message["tool_calls"])}
            beside = message.get("content") if message.get("name") != LOOP_NAME else None
        elif role == "assistant":
            memory.absorb_answer((message.get("content") or "").strip())
        elif role == "tool" and message.get("tool_call_id") in calls:
            round_.append((calls[message["tool_call_id"]], _as_object(message.get("content"))))
    return memory

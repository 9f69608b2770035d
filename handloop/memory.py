"""Run state, and what the model sees of it.

Memory is a fold over the messages: `absorb()` is the only way a tool result changes it,
`absorb_answer()` the only way a model answer does, `absorb_user()` the only way a user reply
does and `absorb_nudge()` the only way a loop's own message does, so `rebuild(messages)`
gives the same memory as the live run did (that is how a resume checks an audit file).

Proposals and confirmation: a proposal is a blocked write (its exact arguments) or, while the
task's write has not happened, a model answer after the task made progress that is an offer
(a proposal in words: words for the user that propose it, texts/words.proposes, not a mention of a write nor
how the user may make it; no tool markup or pasted result, no claim of a write
that never ran, naming exactly one id the reads gave and one declared choice for each of a
write's id and choice effects, at least one for a list effect: texts/stated.py); any other answer leaves the run waiting for the user's reply, and one that looks like a proposal says why it is none
(`why_not_offer`, kept as `unoffered` until the next answer: the argument, the values it named or could take). Confirmation comes only from a user message that is one of the agent's confirm replies
(「确认」 for the Xi'an agent) after a proposal, never from model, tool or loop text; it authorises the proposed write (for words: the ids and
choices the text named, the dates and counts it or the user stated; the tool it showed) and is used up by it, or
by the write's failure (`_spend`: it ran and did not succeed; any later write is a new proposal). Any
other user reply withdraws the proposal; a reply that declines ends the task's need to write. The records
themselves (one per proposal, its state and each write's fate) are proposals.py's: this module decides when one
opens, is confirmed or closes.
An agent without a write tool has nothing to confirm: its answer ends the run.
What the loop does after an answer (`verdict`) follows from this state: an answer that moves nothing
(no offer, no question to the user, the user did not decline, no write made) is nudged with the task's
next step forced (`next_step`: the plan's first ready step, or a write's prerequisites and then the write
itself, for a write the run wants: `wanted`, the plan names it or the user's own messages ask for it), each step
once per user message (`pushed`), so a run always comes back to the user; a run that wants no write (a question
only) ends with its answer, as a run of an agent without a write tool does; an answer
that only gives a tool result back (`echoed`) is never an offer, and is nudged like a call written as text.
`render()` projects memory into the system message (context.py lays out what is sent), in the
agent's language. What the agent's rules read of the run is every successful call so far (`done`, given to a rule as
texts/rules.Facts), then the writes decided before the call in its turn (the guards give them), and an answer that
ends the run is read against the writes' receipts (`contradicted`: another room, id, date, amount or count than a
receipt says), both as the judge reads them (texts/rules.py).
"""
import json

from . import texts
from .texts import rules, stated, words
from .agents import Agent
from .calls import HookError, declared_tool, hooked, unordered_effects
from .proposals import Proposals
from .values import cut

LOOP_NAME = "loop"        # the name of the user messages the loop itself sends (never a user reply)
NUDGES = ("written_call", "echo", "idle", "step", "empty_reply", "length")
FORCING = ("idle", "written_call", "echo", "step")      # nudges whose re-ask forces a call of the next step
WHY_VALUES = 10          # the values an argument may take that a refused offer's explanation lists
DEFAULT_AGENT = Agent("default", "default", ())        # Chinese, 「确认」, planning on, no tools


class Memory:
    def __init__(self, goal="", agent=None):
        self.agent = agent or DEFAULT_AGENT    # its confirm replies, language and planning rule the fold
        self.say = self.agent.say
        self.writable = True      # the run has a write tool (declare() tells)
        self.write_tools: tuple = ()     # the declared write tools (what an offer in words must name is theirs)
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
        self.ledger = Proposals()  # one record per proposal, in order, each with its fate (proposals.py)
        self.unwritten = False    # after that confirmation the model answered instead of writing
        self.declined = False     # the user's last reply declined the write
        self.differs = None       # the last write blocked as not what the user confirmed (a Call; the
                                  # confirmation stands; sent again, it becomes the new proposal)
        self.unoffered = None     # why the last answer, which looked like a proposal, is none (why_not_offer)
        self.writes = []          # [{"tool", "args" (its effect), "call" (every argument), "receipt"}] of the writes made
        self.runs = {}            # call signature -> times it ran since the last user message
        self.recent = []          # signatures of the last calls that ran, newest last
        self.blocked = {}         # call signature -> times blocked since anything new happened
        self.nudged = set()       # kinds of loop nudges sent since the last user message
        self.pushed = set()       # tools a forcing nudge named since the last user message (one push each)
        self.needs = {}           # tool -> the tools that must have succeeded before it (requires, sources; a
                                  # tuple of a source's alternatives: any one of them)
        self.kinds = {}           # tool -> its declared kind
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

    # ---- the proposals: one record each (proposals.py), and the one in force ----
    @property
    def proposals(self):
        """Every proposal of the run in order, each a record with its fate (proposals.py)."""
        return self.ledger.records

    @property
    def current(self):
        """The proposal in force: the last record still proposed or confirmed (a dict, see proposals.py), or None."""
        return self.ledger.current

    @property
    def proposal(self):
        """What the user is (or was) shown of the first write of the proposal in force that has not run yet (a
        blocked write's arguments and its tool), or None (none, or a proposal in words)."""
        pending = self.pending()
        return pending[0] if pending else None

    def pending(self):
        """The blocked writes of the proposal in force that have not run yet, as shown to the user."""
        return self.ledger.pending()

    @property
    def offer(self):
        """The proposal in words in force (the model's answer), or None."""
        current = self.current
        return current["offer"] if current else None

    @property
    def confirmed(self):
        """The user confirmed the proposal in force, and what it authorised has not all run yet."""
        return self.ledger.confirmed

    def _propose(self, shown=None, offer=None):
        """A new proposal (a blocked write's `shown` arguments, or an `offer` in words); the one in force before
        it gives way (withdrawn). A blocked write of the same turn joins the turn's proposal (a batch)."""
        if shown is not None and self.ledger.join(shown):
            return
        self._close("withdrawn")
        self.ledger.open(shown, offer)

    def _close(self, state):
        """The proposal in force ends: declined, withdrawn (another took its place), executed or failed."""
        self.ledger.close(state)
        self.unwritten, self.differs = False, None

    def _fate(self, call, fate):
        """A write ran on the authority of the proposal in force: `fate` is "executed" or "failed". The record
        ends once every write it authorised ran; a failure spends its confirmation all the same."""
        ended = self.ledger.fate(call, fate)
        if ended is not None:
            self._close(ended)

    @property
    def plan(self):
        """[{"index", "title", "tool", "after"}] as set_plan returned it."""
        return self.facts.get("plan", {}).get("steps", [])

    @property
    def marks(self):
        return self.facts.get("plan", {}).get("marks", {})

    # ---- the fold ----
    def absorb_turn(self, calls, results):
        """Take one tool round into memory: the blocked calls first, then those that ran, so a call
        blocked beside a call that brought news is not "blocked with nothing new since"."""
        self.ledger.new_turn()                 # this turn's blocked writes form one proposal
        pairs = list(zip(calls, results))
        blocked = [(c, r) for c, r in pairs if "blocked_by" in r]
        for call, result in blocked + [p for p in pairs if p not in blocked]:
            self.absorb(call, result)

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
            self._fate(call, "executed")
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
        """A write ran and did not succeed (an error, an unknown outcome): the confirmation that let it run is
        spent all the same. Any later write, this same call included, is a new proposal for the user; the
        loop does not push this write again before the user speaks."""
        self._fate(call, "failed")
        self.pushed.add(call.name)

    def ran(self, call):
        """A call that will have run by the time the next call runs, its outcome not known yet."""
        count_run(self.runs, self.recent, call.signature)

    def _absorb_blocked(self, call, result):
        """A blocked call. A duplicate within one turn changes nothing (the first call stands for it);
        a write that differs from what the user confirmed leaves the confirmation standing."""
        if result["blocked_by"] == "duplicate":
            return
        if result["blocked_by"] == "unconfirmed_write" and "confirmed" in result:
            self.differs = call
            return
        self.blocked[call.signature] = self.blocked.get(call.signature, 0) + 1
        if result["blocked_by"] == "spin":
            self.spins += 1
        elif result["blocked_by"] == "unconfirmed_write" and isinstance(result.get("proposal"), dict):
            self._propose(shown=result["proposal"])
            self.declined = False

    def absorb_answer(self, text):
        """A model answer without tool calls. While the task's write is still to do, an answer
        after progress is a proposal in words when it is one (`offers`); after a confirmation the
        offer stays as the user confirmed it (a new text is not what they saw when they said
        「确认」). After a write was blocked as not what the user confirmed, an answer that names
        that other write's id or choice proposes it: the confirmation gives way to the new offer."""
        self.unoffered = None
        if self.confirmed and self.differs is not None and self._names_other(words.plain(text)):
            self._close("withdrawn")
        if self.confirmed:
            self.unwritten = True
        elif self.writable and self.proposal is None and not self.declined and self.progress:
            if self.offers(text):
                self._propose(offer=text)
            else:                             # a new answer that offers nothing: the old offer is not in force
                self._close("withdrawn")
                self.unoffered = self.why_not_offer(text)

    def offers(self, text):
        """Whether an answer is an offer the user can confirm: words for the user that propose (a question or a
        statement offering to do it, words.proposes: not a mention of a write, nor how the user may make it), with
        no tool markup, no pasted tool result, no claim of a write that did not happen, and that name, for some write
        tool, exactly one value of each of its `id` effects among the values the reads gave for that
        argument (texts/stated.py), and of each `choice` effect among its schema's enum and aliases;
        other identifiers may be named beside them. A tool-less memory (no declarations) keeps the
        loose rule: any answer that names an id the reads gave, or any at all if none."""
        plain = words.plain(text)
        if not words.proposes(text) or words.markup(text, self.tool_names) or "write" in self.unbacked(text):
            return False
        if not self.write_tools:
            return not self.names or any(words.names_in(plain, i, n) for i, n in self.names.items())
        done = self.done_ids()
        return any(stated.offers(plain, _declared(tool), self.records, self.names, done) for tool in self.write_tools)

    def why_not_offer(self, text):
        """Why an answer that looks like a proposal is not taken as one (`offers`): it names a value of a write's
        id or choice effect, or it asks the user and names the write's verb or an id a read gave; once a write was
        made, only naming an id no write used yet looks like one (an answer reporting the write does not). Returns
        {"tool", "arg" (the effect argument it fails on), "named" (the values of it the answer names: none, or
        more than one), "values" (those it may take, at most WHY_VALUES), "from" (the tools its values come from)},
        or None: the answer offers, looks like no proposal, or is refused for tool markup or a claimed write
        (said otherwise)."""
        plain = words.plain(text)
        if not self.write_tools or words.markup(text, self.tool_names) or "write" in self.unbacked(text):
            return None
        done, found = self.done_ids(), []
        for tool in self.write_tools:
            decl = _declared(tool)
            why = stated.unoffered(plain, decl, self.records, self.names, done)
            if why is None:
                return None
            ids = stated.looks_named(plain, decl, self.records, self.names, done, ("id",))
            found.append((ids, stated.looks_named(plain, decl, self.records, self.names, done), tool.name, decl, why))
        ids, score, name, decl, (arg, _, named, values) = max(found, key=lambda f: f[:2])
        asked = words.asks(text) and (words.names_in(plain, name.split("_")[0]) or
                                      any(words.names_in(plain, str(i)) for i in self.names if str(i) not in done))
        if not ids and (self.writes or not score and not asked):      # after a write, only a new id looks like one
            return None
        return {"tool": name, "arg": arg, "named": named, "values": values[:WHY_VALUES], "from": _from(decl, arg)}

    def offered(self):
        """The names of the write tools the proposal in words states (what its confirmation may write; the most
        specific reading, texts/stated.offered); None for a memory without declarations (any write)."""
        if not self.write_tools:
            return None
        return stated.offered(words.plain(self.offer or ""), {t.name: _declared(t) for t in self.write_tools},
                              self.records, self.names, self.done_ids())

    def done_ids(self):
        """The values of the id effects the run's writes used: an answer that names them reports, not proposes."""
        kinds = {t.name: dict(t.effect) for t in self.write_tools}
        return {str(e) for w in self.writes for k, v in w["args"].items() if kinds.get(w["tool"], {}).get(k) == "id"
                for e in stated.elements(v) if e is not None}

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
        """The tool the task needs next and can call now: set_plan while a planning agent has no plan; else
        the tool (a read or write) of the first pending plan step whose dependencies are done and whose
        prerequisites (requires, sources) succeeded; else, as for an agent without planning, the first of a
        write's prerequisites that has not succeeded and can run, or the write itself once they all did (only for a
        write the run wants, `wanted`, and only while no write was made: after one, only the plan names further
        writes). None when nothing is ready."""
        if self.agent.planning and not self.plan and "set_plan" in self.tool_names:
            return "set_plan"
        for step in self.plan:
            tool = step.get("tool")
            if self.kinds.get(tool) in ("read", "write") and self.step_status(step["index"]) == "pending" and \
                    self._ready(tool) and all(self.step_status(d) == "done" for d in step["after"] if d <= len(self.plan)):
                return tool
        if self.writes:
            return None
        for write in self.write_tools:
            if not self.wanted(write.name):
                continue
            for need in (*self.needs.get(write.name, ()), write.name):
                if self._done(need):
                    continue
                ready = [t for t in (need if isinstance(need, tuple) else (need,)) if self._ready(t)]
                if ready:
                    return ready[0]
        return None

    def wanted(self, tool):
        """Whether the run asks for the write `tool`: the plan names it, or the user's own messages ask for it
        (`asked`). Only a wanted write is pushed (next_step); a run that wants none ends with its answer."""
        return any(step.get("tool") == tool for step in self.plan) or self.asked(tool)

    def asked(self, tool):
        """Whether the user's own messages (never the model's, a tool's or the loop's) ask for the write `tool`:
        a verb of its name or description (texts/words.asks_for), not a question of how to do it themselves."""
        write = next((t for t in self.write_tools if t.name == tool), None)
        return write is not None and words.asks_for(self.said, write.name, write.description)

    def _ready(self, tool):
        return all(self._done(need) for need in self.needs.get(tool, ()))

    def _done(self, need):
        """Whether a prerequisite succeeded in the run (one of them, for a source's alternatives)."""
        return any(t in self.done_tools for t in need) if isinstance(need, tuple) else need in self.done_tools

    def step_of(self, tool):
        """The first pending plan step that names `tool` (a dict as in `plan`), or None."""
        return next((s for s in self.plan if s.get("tool") == tool and self.step_status(s["index"]) == "pending"), None)

    def _names_other(self, plain):
        """Whether a text names what the blocked write `differs` had in place of the confirmed one."""
        call, offer = self.differs, words.plain(self.offer or "")
        if call is None:
            return False
        for arg, how in call.tool.effect if call.tool else ():
            value = (call.args or {}).get(arg)
            other = value != self.proposal.get(arg) if self.proposal is not None else \
                not self._says(offer, call.tool, arg, how, value)
            if other and self._says(plain, call.tool, arg, how, value):
                return True
        return False

    def _says(self, plain, tool, arg, how, value):
        """Whether a plain text states this value of a write's effect argument (each element of a list)."""
        return stated.states(plain, _declared(tool), arg, how, value, self.records, self.names, self.done_ids(),
                             tuple(tool.units.get(arg, ())))

    def absorb_user(self, text):
        """A user reply: 「确认」 confirms a pending proposal or offer; anything else withdraws it
        (and may decline). Either way it is new information, so repeating a call after it is not
        a spin, and the loop may nudge again."""
        self.runs, self.recent, self.blocked, self.nudged, self.differs = {}, [], {}, set(), None
        self.pushed = set()
        self.said.append(text)
        if not self.goal:
            self.goal = text
            return
        self.unwritten = False
        if self.agent.confirms(text) and self.ledger.confirm():   # proposed, or confirmed again
            self.declined = False
        else:
            self.declined = bool(texts.DECLINE.search(text))
            self._close("declined" if self.declined else "withdrawn")

    def absorb_nudge(self, text):
        """A message the loop itself sent the model: which nudge it was (never a user reply); a nudge to
        act pushes the step it named (the next step, as of this message)."""
        kinds = {kind for kind in NUDGES if text.startswith(self.say(f"nudge.{kind}"))}
        self.nudged.update(kinds)
        step = self.next_step() if kinds & set(FORCING) else None
        if step:
            self.pushed.add(step)

    def verdict(self, written_calls=(), text="", echo=False):
        """After a model answer (`text`; `echo`: it only gives a tool result back): ("done" | "suspended",
        reason), or ("nudge", kind) when the loop should tell the model what is wrong and ask again,
        forcing the next step. An answer that moves nothing (no offer, no question to the user, no final
        answer after the write, the user did not decline) is nudged once per ready step and per user
        message; then the run waits for the user, unless the run wants no write (`wanted`: none asked by the
        user nor named by the plan): then the answer ends it, as for an agent without a write tool."""
        if self.current is None and (self.writes or self.declined):
            return "done", "final_answer"
        if written_calls and "written_call" not in self.nudged:
            return "nudge", "written_call"
        if echo and "echo" not in self.nudged:
            return "nudge", "echo"
        if not self.writable:                   # nothing to confirm: the answer is the result
            return ("nudge", "idle") if not self.progress and "idle" not in self.nudged else ("done", "final_answer")
        step = self.next_step()
        push = step is not None and step not in self.pushed
        if self.confirmed:
            return ("nudge", "step") if push and self.kinds.get(step) == "write" else ("suspended", "confirmed_no_write")
        if self.proposal is not None or self.offer:
            return "suspended", "awaiting_confirmation"
        if not echo and words.asks(text):       # a question reaches the user
            return "suspended", "awaiting_reply"
        if push:
            return "nudge", "step" if self.progress else "idle"
        if not self.progress and "idle" not in self.nudged:
            return "nudge", "idle"
        if self.write_tools and not any(self.wanted(t.name) for t in self.write_tools):
            return "done", "final_answer"       # nothing asked to be written: the answer is the result
        return "suspended", "awaiting_reply"

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
        """This very write already made (the same tool and every argument the same, as its idempotency key
        covers them): {"receipt": what it returned}, or None. An effect's list is the same whatever the order of its
        elements (stated.identity), unless its tool declares it `ordered`."""
        effects = unordered_effects(call.tool)
        this = stated.identity(call.args, effects)
        return next(({"receipt": w["receipt"]} for w in self.writes if w["tool"] == call.name and
                     stated.identity(w["call"], effects) == this), None)

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

    def unshown(self, call):
        """The arguments of a write that the confirmed proposal in words did not state (texts/stated.py):
        its id and choice arguments must be the one value of their argument the offer names (an id by
        itself or by the name a read gave it); its date and count may also come from the user's own
        messages. Empty when the write is what the user was shown."""
        if call.tool is None:
            return []
        return stated.unstated(call.args, _declared(call.tool), words.plain(self.offer or ""),
                               [words.plain(t) for t in self.said], self.records, self.names, self.done_ids())

    def unbound(self, call):
        """The arguments of a confirmed write that what the user confirmed neither states nor determines
        (texts/stated.py): sourced from an effect's tool but from another record than that effect's value,
        sourced elsewhere and not stated by the proposal, or free (neither) and stated neither by it nor by the
        user. Empty when the whole write is bound (a blocked proposal shows every argument)."""
        if call.tool is None or self.proposal is not None:
            return []
        offer = words.plain(self.offer or "")
        decl = _declared(call.tool)
        loose = stated.unbound(call.args, decl, self.records, lambda arg, value: stated.names_value(offer, value))
        return loose + [a for a in stated.unstated_free(call.args, decl, offer, [words.plain(t) for t in self.said])
                        if a not in loose]

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
        if self.proposal is not None:
            state = say("memory.proposal_confirmed") if self.confirmed else say("memory.waiting")
            lines += [say("memory.proposal", proposal=json.dumps(shown, ensure_ascii=False), state=state)
                      for shown in self.pending()]
        elif self.offer:
            state = say("memory.offer_confirmed") if self.confirmed else say("memory.waiting")
            lines.append(say("memory.offer", offer=cut(self.offer, 400, say), state=state))
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
                "proposal": self.proposal, "offer": self.offer, "confirmed": self.confirmed,
                "proposals": self.proposals,
                "declined": self.declined, "writes": self.writes, "spins": self.spins, "used_tokens": self.used_tokens}


def why_said(why, say):
    """The one line that says why an answer was not taken as a proposal (Memory.why_not_offer's result), in
    `say`'s language: more than one value named, none of the values the reads gave, or no value a read produced."""
    values = {"tool": why.get("tool"), "arg": why.get("arg"), "named": say.join(why.get("named") or ()),
              "values": say.join(why.get("values") or ())}
    if len(why.get("named") or ()) > 1:
        return say("cli.not_offer.many", **values)
    if why.get("values"):
        return say("cli.not_offer.none", **values)
    where = say("cli.not_offer.where", tools=say.join(why["from"])) if why.get("from") else ""
    return say("cli.not_offer.unread", where=where, **values)


def _from(decl, arg):
    """The tools whose results the values of a write's argument come from (its sources' alternatives), in order."""
    return list(dict.fromkeys(o["tool"] for s in stated.sources(decl) for o in stated.options(s)
                              if arg in o["args"] or arg + "[]" in o["args"]))


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
    for message in [*messages, {}]:
        role = message.get("role")
        if round_ and role != "tool":
            memory.absorb_turn([c for c, _ in round_], [m for _, m in round_])
            round_ = []
        if role == "user" and message.get("name") == LOOP_NAME:
            memory.absorb_nudge(message.get("content") or "")
        elif role == "user":
            memory.absorb_user(message.get("content") or "")
        elif role == "assistant" and message.get("tool_calls"):
            calls = {c.id: c for c in prepare(message["tool_calls"])}
        elif role == "assistant":
            memory.absorb_answer((message.get("content") or "").strip())
        elif role == "tool" and message.get("tool_call_id") in calls:
            round_.append((calls[message["tool_call_id"]], _as_object(message.get("content"))))
    return memory

"""The conversation the rules read: a transcript's normalised messages (judge/formats.py) as turns, tool calls and
their results, proposals and the user's replies to them.

Invariants: imports no project module but the judge's own below it (judge/formats.py, judge/declaration.py, judge/readings.py, its
catalogue judge/texts.py) and the leaves texts/words.py and texts/stated.py (config not included), and shares no
code with what the checks judge but those two, on purpose (stated.py: how a declaration's effects read, as the
guards read them): what an answer claims to have done (words.claims) must read the same in the run's printout
and in the judge's notes; reads, never writes; knows no file shape (judge/formats.py does), reads values on their own
with judge/readings.py and judges nothing (checks.py does).

How the conversation is read (the rules the verdicts rest on; docs/judge.md says them in words):
- Turn N is the N-th model response (an assistant message; in a Responses list, the consecutive
  items of one response). A call is named by turn, tool and call id.
- A call took effect when its result is not an error. In a run of this project that records its agent (strict),
  an error is exactly a result with an `error` key, as the run itself read it. Elsewhere an error is any of: an `error` (or
  `errors`) value, `isError`/`is_error` true, `ok`/`success` false, a status that says it failed (but
  not a status that is a declared tool's own effect, read from the verbs of its name: "cancelled" for
  `cancel_appointment`, judge/readings.effect_words),
  a tool message marked `status: "error"`, an MCP result with `isError`, Anthropic `is_error`, a pydantic-ai
  `retry-prompt` or `outcome` failed/retried/denied, or a text result that says it failed, was blocked or does
  not exist. Our `blocked_by` marker is one such error. A call without a result (pydantic-ai `interrupted`
  too) has an unknown outcome: it never passes a check, and a check it could break is pending.
- A decision recorded by a framework (Call.decision): a rejection ('reject': Agents SDK "Tool execution was
  not approved.", LangChain HITL middleware `lc_source: hitl_interrupt_decision`, pydantic-ai `denied`, or any
  result saying the user did not approve) or the middleware's `respond` (the reviewer's text in the tool's
  place). The call did not take effect; it was a proposal and the decision answers it. A closing answer after
  such a decision (not a question) finishes the run.
- Order: a call comes before another when its turn is earlier. Within one turn only
  set_plan/mark_step count as happening first; business calls of one batch are concurrent.
- A user message whose `name` is "loop" was written by an agent loop, not the user: it never
  answers, confirms or declines anything, nor is it where a value the user typed comes from (`said_before`); nor does a LangChain HumanMessage marked `lc_source` (the harness
  wrote it) or a pydantic-ai retry prompt that answers no call.
- The agent judged is a declaration (judge/declaration.py reads it: Declaration). Its writes are the tools of kind
  "write"; its business calls those of kind read or write.
- A proposal is a write blocked for want of approval (an error result that asks for
  confirmation; it proposes its own arguments), or an assistant answer without tool calls that is
  followed by a user message and speaks of the write (a booking word, the verb of a write's name, an id an
  earlier result of the write's sources gave, or a choice value the judge knows the words of: the Xi'an room
  types). The user's next message answers it: one of the agent's declared confirm replies (compared
  after trimming, case-insensitively), or a confirmation (确认, 确认预订,
  好的，订吧, 可以, yes, confirm... with no negation, change or question), a decline (不订了, 算了,
  no, cancel...), a change request (换成 Standard, or naming a room or hotel the proposal did not),
  a question, or something unclear. A confirmation authorises the booking the user was shown
  (same arguments as a blocked proposal; one of the hotels and room types the text named) and is
  used up by the booking that took effect. A booking after a decline, a change, a question or no
  answer fails; after an unclear answer, or after 「好」 to a question that did not speak of
  booking, it is pending: the text is ambiguous.
"""
import bisect
import json
import re

from ..texts import stated, words
from .texts import Said
from .declaration import Declaration, declaration_of, readable, tool_name
from .formats import read_all
from .readings import choices_in, dicts_in, effect_words, has_token, parse_arguments, read_result

PLAN_TOOLS = ("set_plan", "mark_step")
UNFINISHED = ("running", "suspended", "error")
APPROVAL_BLOCK = re.compile(r"确认|批准|同意|授权|审批|拦截|confirm|approv|consent|authori[sz]|permission|human|"
                            r"blocked|interrupt", re.I)
ASKS = re.compile(r"确认|批准|同意|可以吗|好吗|要订吗|confirm|approv|shall i|should i|want me to|ok to|reply", re.I)
DECLINED = re.compile(r"\bnot (been )?approved\b|(tool call|call|execution|tool use|request|action|booking|it) "
                      r"(was|has been|is) (denied|rejected|declined|refused)|\b(user|human|reviewer|operator|you)\b"
                      r"[^.。\n]{0,30}\b(reject|declin|denied|refus|did ?n[o']t approve|do(es)? ?n[o']t (want|approve))|"
                      r"(用户|人工|审批人)[^。\n]{0,10}(拒绝|驳回|不同意|没有批准|未批准)|未获(用户)?批准|被(用户)?拒绝", re.I)


def load(path, agent=None):
    """The conversation in `path` (its first: load_all gives every one), judged as the agent its audit file records,
    else `agent` (a declaration as a plain dict), else the Xi'an agent; Unreadable (judge/formats.py) with a clear
    message otherwise."""
    return load_all(path, agent)[0]


def load_all(path, agent=None, rules=None):
    """Every conversation in `path` (a trace file may hold several), each a Transcript judged as load() says. `rules`:
    {name: check} of the agent's rules whose code the judge is given (agents.Agent.rule_checks of --agent FILE's
    agent)."""
    found = []
    for messages, meta, fmt, container, notes in read_all(path):
        if "agent" in meta and not readable(meta["agent"]):
            notes.append(Said("note.agent_unreadable",
                              whose=Said("note.whose_given" if readable(agent) else "note.whose_xian")))
        found.append(Transcript(messages, meta, fmt, container, notes, agent=declaration_of(meta, agent)))
        found[-1].rules = dict(rules or {})
    return found


# ---- the conversation: turns, calls, results, asks ----
class Call:
    def __init__(self, turn, pos, order, raw):
        call_id, name, arguments = raw
        self.turn, self.pos, self.order = turn, pos, order
        self.id = str(call_id) if isinstance(call_id, (str, int)) and str(call_id) else f"#{order + 1}"
        self.raw_name = str(name) if isinstance(name, str) else ""
        self.name = tool_name(self.raw_name)
        self.args, self.problem = parse_arguments(arguments)
        self.status, self.result, self.decision = "unanswered", {}, None
        self.write = False          # a write of the agent judged (Transcript sets it)

    @property
    def label(self):
        return Said("call.label", turn=self.turn, name=self.name or Said("call.unnamed"), id=self.id)

    def answer(self, content, failed, decision=None, own=False, done=()):
        """Read the call's result. A result that records a human's decision (the framework's own marker, or text
        saying the user did not approve) means the call did not take effect. `own`: a run of this project, whose
        tool messages say an error exactly by an `error` key (a result's own words, a status "cancelled", are
        its data, as the run read them). `done`: the status words that are this declared tool's own effect
        (readings.effect_words: "cancelled" for a cancel), which say it succeeded."""
        self.result, said_error = read_result(content, done)
        if own:
            said_error = "error" in self.result
        elif decision is None and DECLINED.search(_flat(self._said())):
            decision = "reject"
        self.decision = decision
        self.status = "error" if failed or said_error or decision else "ok"

    def _said(self):
        """What a result says in words: its text, or its error and message fields."""
        return [v for k, v in self.result.items() if k in ("error", "errors", "message", "detail", "reason", "text",
                                                            "blocked_by")]

    @property
    def reply(self):
        """The human's words a decision carries (a rejection's reason, a `respond` text), trimmed."""
        text = self.result["text"] if isinstance(self.result.get("text"), str) else _flat(self._said())
        return text.strip()[:60]

    def arg(self, key):
        return (self.args or {}).get(key)

    def before(self, other):
        """Whether this call had happened when `other` ran."""
        if self.pos != other.pos:
            return self.pos < other.pos
        return self.order < other.order and self.name in PLAN_TOOLS

    @property
    def proposes(self):
        """A write blocked for want of the user's approval: it proposes its own arguments."""
        if not self.write or self.status != "error":
            return False
        if self.decision is not None:
            return True                 # the framework held it for the human's decision: it was a proposal
        if self.result.get("blocked_by") == "rule":
            return False                # one of the agent's rules refused it before anyone was asked
        return isinstance(self.result.get("proposal"), dict) or bool(APPROVAL_BLOCK.search(_flat(self._said())))

    @property
    def proposed(self):
        """The arguments a held write showed: a proposal of ours ({"tool", "args", "shows"?}), one recorded before
        held calls ({"tool", **arguments}), or, for another system's block, the call's own."""
        proposal = self.result.get("proposal")
        if not isinstance(proposal, dict):
            return self.args
        if isinstance(proposal.get("args"), dict) and set(proposal) <= {"tool", "args", "shows"}:
            return proposal["args"]
        return proposal


class Transcript:
    """One file's conversation as turns, calls, user replies and asks, plus what the file says of itself."""

    def __init__(self, messages, meta, fmt, container, notes=(), agent=None):
        self.messages, self.meta, self.format, self.container = messages, meta, fmt, container
        self.agent = Declaration(agent if agent is not None else declaration_of(meta))
        self.calls, self.notes, self.calls_at, self._before = list[Call](), list(notes), {}, {}
        self.rules: dict = {}       # {name: check} of the agent's rules whose code was given (load_all)
        self.turns, waiting, self._own = 0, dict[str, Call](), self.strict
        self._users: list[tuple[int, str]] | None = None      # (pos, text) of the user's own messages, once asked
        for pos, message in enumerate(messages):
            self._read(pos, message, waiting)
        self.notes += [Said("note.unanswered", call=c.label) for c in waiting.values()]
        self.notes += [Said("note.bad_args", call=c.label, problem=c.problem) for c in self.calls if c.problem]
        self.notes += self._unbacked()
        self.spoken = [pos for pos in range(len(messages)) if self.speaks(pos)]
        self.asks = self._asks()
        self.finished = self._finished()

    def _read(self, pos, message, waiting):
        role = message["role"]
        if role == "assistant":
            self.turns += 1
            message["turn"] = self.turns
            for order, raw in enumerate(message["calls"]):
                call = Call(self.turns, pos, order, raw)
                call.write = call.name in self.agent.writes
                self.calls.append(call)
                self.calls_at.setdefault(pos, []).append(call)
                if call.id in waiting:
                    self.notes.append(Said("note.duplicate_id", call=call.label))
                waiting[call.id] = call
            for name in message.get("invalid", []):
                self.notes.append(Said("note.invalid_call", turn=self.turns, name=name))
        elif role == "tool":
            call = waiting.pop(message["call_id"], None)
            if call is None:
                self.notes.append(Said("note.orphan", item=message["item"]))
            elif message["decision"] == "unknown":
                self.notes.append(Said("note.interrupted", call=call.label))
            else:
                call.answer(message["content"], message["failed"], message["decision"], own=self._own,
                            done=effect_words(call.name) if call.name in self.agent.tools else ())

    def _unbacked(self):
        """Notes on answers that claim work of a kind (a lookup, a write) when no call of that kind had
        taken effect before them: the model says it did what it did not (words.claims reads the claim,
        as the run does)."""
        notes, did, taken = [], set(), 0
        done = [c for c in self.calls if c.status == "ok" and c.name in self.agent.business]
        for pos, message in enumerate(self.messages):
            if message["role"] != "assistant" or message["calls"] or not message["text"].strip():
                continue
            while taken < len(done) and done[taken].pos < pos:      # the calls that took effect before it, once each
                did.add("write" if done[taken].name in self.agent.writes else "read")
                taken += 1
            notes += [Said(f"note.unbacked_{kind}", turn=message["turn"]) for kind in
                      sorted(words.claims(message["text"]) - did)]
        return notes

    def ok(self, *names):
        return [c for c in self.calls if c.status == "ok" and c.name in names]

    def unknown(self, *names):
        return [c for c in self.calls if c.status == "unanswered" and c.name in names]

    def speaks(self, pos):
        """Whether messages[pos] is said by someone in the conversation (not system, not the loop)."""
        message = self.messages[pos]
        return message["role"] != "system" and not message["loop"]

    def _asks(self):
        """{user message pos: the assistant answer without tool calls it replies to}. What that answer asks
        is read with every such answer since the user's previous message: the user saw them all."""
        asks, last, seen = {}, None, list[str]()
        for pos, message in enumerate(self.messages):
            if not self.speaks(pos):
                continue
            if message["role"] == "user":
                prev: dict = self.messages[last] if last is not None else {}
                if prev.get("role") == "assistant" and not prev["calls"] and prev["text"].strip():
                    text = "\n".join(seen)
                    asks[pos] = {"pos": last, "turn": prev["turn"], "text": text,
                                 "booking": self.about_write(last, text)}
                seen = []
            elif message["role"] == "assistant" and not message["calls"] and message["text"].strip():
                seen.append(message["text"].strip())
            last = pos
        return asks

    def _prefix(self, key, calls, start, fold):
        """The fold `fold(state, call)` over `calls` (in order) as of a position (see _Prefix), one per `key`."""
        if key not in self._before:
            self._before[key] = _Prefix(calls, start, fold)
        return self._before[key]

    def _names_at(self, pos):
        """The ids (with their names) the successful results before messages[pos] of the tools the writes' id
        arguments come from gave (_Named), folded once in order."""
        wanted = {src for w in self.agent.writes for _, src in self.agent.ids(w)}
        tools = {src[0] for src in wanted}
        searches = [c for c in self.calls if c.status == "ok" and c.name in tools] if "named" not in self._before \
            else ()
        return self._prefix("named", searches, _Named, lambda named, search: named.add(search, wanted)).at(pos)

    def named_before(self, pos):
        """{id: name} from the successful results, before messages[pos], of the tools the writes' id arguments
        come from (their declared sources): the ids a text may name, with the name beside each. Read it at
        once: it is the fold's own state, which a later question about a later position extends."""
        return self._names_at(pos).names

    def shown(self, pos, text):
        """The ids and choice values a text at messages[pos] names: ({ids}, {choices}). An id is named as a
        token (readings.has_token) or by its name (two characters or more) within the text; both are looked
        up from the text's own tokens and substrings, not by trying every id known."""
        ids = self._names_at(pos).named_in(text)
        choices, plain = set(), words.plain(text)
        for w in self.agent.writes:
            for arg in self.agent.choices(w):
                values = self.agent.choice_values(w, arg)
                choices |= stated.named(plain, {v: (v, *n) for v, n in values.items()}) if values else \
                    choices_in(text, arg)
        return ids, choices

    @property
    def strict(self):
        """Whether the file is a run of this project recording its agent's declaration: then confirmations
        and proposals are read exactly as its guards read them (only its confirm replies confirm); another
        system's transcript gets the wider reading of what confirms ("sure, go ahead"). The spans this project
        exported of a run (meta `ours`) are such a run too, when they are judged as the agent they name."""
        if self.meta.get("ours") and self.meta.get("agent_name") in (None, self.agent.name):
            return True
        return self.container == "snapshot" and readable(self.meta.get("agent"))

    def said_before(self, pos):
        """The texts of the user's own messages before messages[pos] (never the loop's, a harness's, a tool's or
        the model's): where a value the user typed appears."""
        if self._users is None:
            self._users = [(p, m["text"]) for p, m in enumerate(self.messages) if m["role"] == "user" and not m["loop"]]
        return [text for p, text in self._users if p < pos]

    def typed_before(self, value, pos):
        """Whether a value appears in what the user wrote before messages[pos] (texts/stated.py `typed`, as the
        guards read a Source of the user's words)."""
        return stated.typed(value, self.said_before(pos))

    def brought(self, value, pos):
        """The tools whose successful results before messages[pos] hold a value (read as `typed_before` reads the
        user's words): where a value that is not the user's came from."""
        return sorted({c.name for c in self.calls if c.status == "ok" and c.pos < pos and
                       stated.typed(value, [_whole(c.result)])})

    def records(self, pos):
        """records(tool, path) of the successful results before messages[pos] (texts/stated.py's callback), each
        tool's and path's folded once in order (read them at once: see _Prefix); for the user's words (stated.USER,
        when no tool has that name) the texts of the user's own messages."""
        def records(tool, path):
            if tool == stated.USER and stated.USER not in self.agent.tools:   # the user's words: their messages
                return self.said_before(pos)
            key = ("records", tool, path)
            calls = [c for c in self.calls if c.status == "ok" and c.name == tool] if key not in self._before else ()
            return self._prefix(key, calls, list, lambda found, c: found.extend(stated.records_at(c.result, path))).at(pos)
        return records

    def done_ids(self, pos):
        """The values of the id effects of the writes that took effect before messages[pos]: a text that names
        them reports those writes, it proposes none (texts/stated.py, as the run's memory reads it)."""
        calls = [c for c in self.calls if c.write and c.status == "ok"] if "done_ids" not in self._before else ()
        return self._prefix("done_ids", calls, set, lambda done, c: done.update(
            str(e) for arg, how in self.agent.effect(c.name) if how == "id" for e in stated.elements(c.arg(arg))
            if e is not None)).at(pos)

    def ids_before(self, pos):
        """{id: name} of every `id`/`*_id` field the successful results before messages[pos] gave."""
        calls = [c for c in self.calls if c.status == "ok" and c.name in self.agent.business] \
            if "ids" not in self._before else ()
        return self._prefix("ids", calls, dict, lambda names, c: stated.ids_in(c.result, names)).at(pos)

    def about_write(self, pos, text):
        """Whether an answer at messages[pos] speaks of a write (a booking word, an id a read gave, a choice value).
        In a run of this project (strict) it must also propose, as the run reads an offer (words.proposes: a
        mention of a write, or how the user may make it, proposes nothing); another system's transcript keeps the
        wider reading."""
        if self.strict and not words.proposes(text):
            return False
        ids, choices = self.shown(pos, text)
        return bool(self.agent.words.search(text) or ids or choices)

    def wanted(self):
        """The agent's writes the run asked for, as the loop reads it (memory.wanted): named by a plan that took
        effect, or asked for by the user's own messages (texts/words.asks_for: a verb of the write's name or of
        its description, when the file records its tools)."""
        said = self.said_before(len(self.messages))
        described = self.meta.get("descriptions") or {}
        planned = {tool_name(str(s.get("tool"))) for c in self.ok("set_plan")
                   for s in (c.arg("steps") if isinstance(c.arg("steps"), list) else []) if isinstance(s, dict)}
        return [w for w in self.agent.writes if w in planned or words.asks_for(said, w, described.get(w, ""))]

    @property
    def unasked(self):
        """Whether the run was a task that asked for no write and ended with its answer: it is finished, the agent
        has writes, none was called (none took effect, none was held as a proposal) and none is `wanted`."""
        return bool(self.finished and self.agent.writes and not any(c.write for c in self.calls)
                    and not self.wanted())

    def open_ask(self, pos):
        """The turn of a booking text before messages[pos] that no user message has answered yet."""
        for p in range(pos - 1, -1, -1):
            message = self.messages[p]
            if message["role"] == "user" and not message["loop"]:
                return None
            if message["role"] == "assistant" and not message["calls"] and self.about_write(p, message["text"]):
                return message["turn"]
        return None

    def _finished(self):
        status = self.meta.get("status")
        if status is not None:
            return status not in UNFINISHED
        spoken = self.spoken
        last = self.messages[spoken[-1]] if spoken else {}
        if last.get("role") != "assistant" or last.get("calls") or any(c.status == "unanswered" for c in self.calls):
            return False
        if self.ok(*self.agent.writes):
            return True
        user = max((p for p in spoken if self.messages[p]["role"] == "user"), default=-1)
        if any(c.decision is not None and c.pos > user for c in self.calls):     # the user decided; this closes the run
            return not last["text"].strip().endswith(("?", "？"))
        return not (last["text"].strip().endswith(("?", "？")) or ASKS.search(last["text"]))


class _Prefix:
    """A fold over calls in order, read as of a position: `fold(state, call)` for every call before it, from
    `start()`. Asked about positions in order (as the conversation is read) it goes on where it stopped, so a
    whole reading folds each call once; asked about an earlier one, it starts again. What `at` returns is the
    fold's own state: read it at once (a question about a later position extends it)."""

    def __init__(self, calls, start, fold):
        self.calls, self.positions, self.start, self.fold = list(calls), [c.pos for c in calls], start, fold
        self.done, self.state = 0, start()

    def at(self, pos):
        upto = bisect.bisect_left(self.positions, pos)
        if upto < self.done:
            self.done, self.state = 0, self.start()
        for call in self.calls[self.done:upto]:
            self.fold(self.state, call)
        self.done = max(self.done, upto)
        return self.state


ID_TOKEN = re.compile(r"[\w-]+")      # has_token's word: an id of these characters is named iff it is such a run


class _Named:
    """The ids the reads gave so far ({id: name}) and how to find those a text names without trying each:
    token-shaped ids by the text's tokens, other ids one by one (has_token), names by the text's substrings of
    each length a name has."""

    def __init__(self):
        self.names, self.odd, self.by_name = {}, {}, {}     # by_name: {length: {name: {ids}}}

    def add(self, search, wanted):
        for field, path in dict.fromkeys((f, p) for tool, f, p in sorted(wanted) if tool == search.name):
            for node in dicts_in(search.result) + [r for r in stated.records_at(search.result, path)
                                                   if isinstance(r, dict)]:
                if isinstance(node.get(field), (str, int)):
                    name = node.get("name", node.get(field.rsplit("_", 1)[0] + "_name"))
                    self._put(str(node[field]), name if isinstance(name, str) else "")

    def _put(self, key, name):
        self.names[key] = name
        if not ID_TOKEN.fullmatch(key):
            self.odd[key] = None
        if len(name) >= 2:
            self.by_name.setdefault(len(name), {}).setdefault(name, set()).add(key)

    def named_in(self, text):
        """The ids `text` names: as a token (readings.has_token) or, for a name of two characters or more, by
        its name anywhere in it."""
        ids = {token for token in ID_TOKEN.findall(text) if token in self.names}
        ids |= {key for key in self.odd if has_token(key, text)}
        for size, names in self.by_name.items():
            for start in range(len(text) - size + 1):
                for key in names.get(text[start:start + size], ()):
                    if self.names[key] == text[start:start + size]:      # still its name (a later read may rename)
                        ids.add(key)
        return ids


def _whole(value):
    """All the text of a result, uncut."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def _flat(value):
    """All the text of a result, for reading what an error says."""
    try:
        return json.dumps(value, ensure_ascii=False)[:2000]
    except (TypeError, ValueError, RecursionError):
        return str(value)[:2000]

"""The rules of the offline judge: what a run did, judged from its conversation alone against what its agent
declared (a Transcript from judge/transcripts.py, which carries the declaration, in; a verdict per check out: pass, fail
or pending, with its reason and, when pending, its cause). Here are the core rules, which checks a declaration
calls for (applicable, AGENT_CHECKS), judge() and progress(); the rule of confirmation is judge/confirm.py's, the
Xi'an agent's own check judge/weather.py's, and what every rule shares in saying its verdict judge/verdicts.py's.

Invariants: imports no project module (config included) but the judge's own below it (judge/confirm.py,
judge/weather.py, judge/verdicts.py, judge/declaration.py, judge/readings.py, its catalogue judge/texts.py) and the leaf
texts/stated.py, and shares no rule code with the guards but the leaves under texts/ (words.py, stated.py: how a
declaration's effects and sources read; rules.py: what an agent's rule is given, and an answer read against a
receipt), so it can
judge a transcript from any system, this one included; reads no file and never asks a model. Files, the report and
exit codes are cli/check.py's. Reasons, names and progress are Said (a catalogue key and its values): cli/check.py
says them in the judged agent's language.

The conversation is read by judge/transcripts.py (how turns, calls, results, proposals and replies are read) from
what judge/formats.py made of the file, and the declaration from the audit file's "agent" (else --agent FILE's,
else the Xi'an agent's: judge/declaration.py). Business calls are calls of the declared tools of kind read or write. The
rules:
- plan_first (only when the agent plans): set_plan took effect before any business call;
- no_skipped_step: each business call's plan dependencies (when planning) and the tools it declares in
  `requires` were done before it; a plan is read as set_plan keeps it: an `after` naming the step itself or a
  later one is dropped, not a failure;
- provenance: each argument a tool declares in `sources` equals (`near`: to within 0.01) the field of a record
  in an earlier successful result of the source tool (a record anywhere in it: other systems shape results
  their own way; or at the source's path, where a record keyed by id has its key as the field "*"; a plain-text
  result must contain the value as a token); the sources read as the guards read them (texts/stated.py): every
  source holds (two naming one argument both), each element of a list argument ("item_ids[]") on its own, from
  any one of a source's alternatives (`any`); an argument sourced from the user's words (Source.user) appears in a
  user message before the call (texts/stated.py `typed`; the reason names the tools whose results held it
  instead); a tool declared outside is judged on every call that took effect, as a write is;
- write_after_confirmation (when the agent has a write; judge/confirm.py): no write took effect before a user
  confirmation (one of the declared confirm replies, or an approval as classify_reply reads it) that came after it
  was proposed, with the arguments the user was shown (its declared effect arguments);
- the agent's own checks, by the names it declares (AGENT_CHECKS): the Xi'an agent's room_type_follows_weather
  (judge/weather.py), rain → Suite, otherwise Standard;
- the agent's rules (calls.Rule), by the names its tools' declarations record (one check each, its id the rule's
  name): each call of a tool that keeps the rule and took effect, given to the rule's own code with the calls that
  took effect before it and the writes of its turn before it (no result: decided beside it, as the guard gave
  them) as its facts (texts/rules.py), read-only, kept it. The code comes with the agent given (--agent FILE:
  Transcript.rules); without it the check is pending (not_declared). A rule named like a check of AGENT_CHECKS is
  that check (the Xi'an agent's rule and its check read the weather with the same code);
- answer_matches_receipt (when the agent has a write): the run's final answer names no other value of a write's
  id, choice or date effect than the receipts of the writes that took effect, nor another number beside the name
  or a declared unit of a number of their receipts (an amount, a count; texts/rules.py, as the printout notes it); pending when no write took effect or no final answer came after it.
A check the declaration gives nothing to judge (no planning, no requires or plan, no sources, no write) is not
applicable: judge() leaves it out and not_applicable() says why; a declaration that leaves no check at all gets
one pending verdict, never an empty pass.
- Nothing to judge is not a pass: a check whose subject never happened (no business call took
  effect, no write took effect) is pending, and progress() says how far the task got. But a run that asked for no
  write (Transcript.unasked: finished, no write called, none asked by the user's own messages nor named by a plan,
  as the loop reads it) has no write to wait for: write_after_confirmation passes, and a check pending for want of
  a write (not_reached) is not applicable to that run.
Cost: each rule is linear in the conversation (up to a log factor), never a scan of the calls before each call:
no_skipped_step walks the calls once, carrying what was done and the plan in force; provenance looks values up
in an index of each source's results (_Seen), built once.
"""
import math
import re
from typing import Any

from .judge.confirm import write_after_confirmation
from .judge.texts import Joined, Said
from .judge.verdicts import ARG_WORDS, WORDS, judge_calls, said_args, said_steps, said_tools, verdict_of
from .judge.weather import room_type
from .judge.declaration import CHOICES, tool_name
from .judge.readings import dicts_in, has_token, plain_result
from .texts.stated import base, records_at, rows
from .texts import rules as rule_reading, words

CHECKS = tuple((cid, Said(f"check.{cid}")) for cid in ("plan_first", "no_skipped_step", "provenance", "room_type",
                                                        "write_after_confirmation", "answer_matches_receipt"))
CAUSES = ("not_reached", "ambiguous", "unknown_outcome", "not_declared")     # why a check is pending
NOT_APPLICABLE = {cid: Said(f"na.{cid}") for cid in ("plan_first", "no_skipped_step", "provenance",
                                                     "write_after_confirmation", "answer_matches_receipt")}
PROGRESS = {"no_business_call": "progress.no_business_call", "no_booking": "progress.no_booking",
            "no_write_asked": "progress.no_write_asked", "booked": None}


# ---- the core checks: each returns (verdict, reason as a Said, cause) ----
def plan_first(t):
    plans, names = t.ok("set_plan"), t.agent.business

    def judge(call):                  # the first plan is before a call when any is (plans are in order)
        plan = plans[0] if plans and plans[0].before(call) else None
        return ("ok", plan.label) if plan else ("fail", Said("plan.before_plan", call=call.label))
    business = t.ok(*names) + t.unknown(*names)
    faults, doubts, fine = judge_calls(sorted(business, key=lambda c: (c.pos, c.order)), judge)
    passes = fine and Said("plan.passes", plan=fine[0], first=t.ok(*names)[0].label)
    nothing = Said("nothing.business", planned=Said("plan.planned", plan=plans[0].label) if plans else "")
    return verdict_of(faults, doubts, passes, nothing)


def no_skipped_step(t):
    names = t.agent.business
    business = sorted(t.ok(*names) + t.unknown(*names), key=lambda c: (c.pos, c.order))
    skipped = _skips(t, {id(c) for c in business})
    faults, doubts, fine = judge_calls(business, lambda c: skipped[id(c)])
    gated = [n for n in names if t.agent.requires(n)]
    if not gated:
        passes = fine and Said("skip.passes_plan", count=len(fine))
        return verdict_of(faults, doubts, passes, Said("nothing.business", planned=""))
    done = t.ok(*gated)
    passes = done and Said("skip.passes", count=len(fine), first=done[0].label,
                           steps=said_steps(t.agent.requires(done[0].name)))
    nothing = Said("skip.nothing_some", count=len(fine), what=said_tools(gated)) if fine else \
        Said("skip.nothing_none", what=said_tools(gated))
    return verdict_of(faults, doubts, passes, nothing)


def _skips(t, judged):
    """{id(call): ('fail', why) or ('ok', '')} for the calls in `judged`, from one walk over the calls in order:
    the tools done before a call's turn (the calls of earlier turns that took effect), and the plan in force when
    it ran with the step marks made since (the set_plan and mark_step before it, its own turn's included)."""
    done_tools: set[str] = set()
    turn_done: list[str] = []
    pos = None
    plan: list[dict] = []
    steps_of: dict[Any, list[dict]] = {}
    marks: dict[int, Any] = {}
    found: dict[int, tuple] = {}
    for call in t.calls:
        if call.pos != pos:                        # a new turn: the one before is done
            done_tools.update(turn_done)
            turn_done, pos = [], call.pos
        if id(call) in judged:
            found[id(call)] = _skipped(t, call, done_tools, plan, steps_of, marks)
        if call.status != "ok":
            continue
        turn_done.append(call.name)
        if call.name == "set_plan":
            plan, marks = _plan_steps(call), {}
            steps_of = {}
            for step in plan:
                steps_of.setdefault(step["tool"], []).append(step)
        elif call.name == "mark_step":
            index = call.result.get("index", call.arg("index"))
            if isinstance(index, int):
                marks[index] = call.result.get("status", call.arg("status"))
    return found


def _skipped(t, call, done_tools, plan, steps_of, marks):
    """('fail', why) when `call` ran with a step skipped (a declared `requires`, or a plan dependency when the
    agent plans), else ('ok', ''); `done_tools`, `plan` (its steps by tool: `steps_of`) and `marks` as of `call`."""
    missing = [tool for tool in t.agent.requires(call.name) if tool not in done_tools]
    if missing:
        return "fail", Said("skip.missing", call=call.label, steps=said_steps(missing))
    if not t.agent.planning:
        return "ok", ""
    steps = steps_of.get(call.name, [])
    done = lambda s: marks.get(s["index"]) == "done" or s["tool"] in done_tools   # noqa: E731
    step = next((s for s in steps if not done(s)), steps[-1] if steps else None)
    undone = [d for d in (step or {}).get("after", []) if 1 <= d <= len(plan) and not done(plan[d - 1])]
    if step is not None and undone:
        return "fail", Said("skip.plan", call=call.label, index=step["index"], undone=Joined(undone))
    return "ok", ""


def _plan_steps(call):
    raw = call.result.get("plan")
    raw = raw if isinstance(raw, list) else call.arg("steps")
    steps = []
    for index, step in enumerate(raw if isinstance(raw, list) else [], 1):
        step = step if isinstance(step, dict) else {}
        after = step["after"] if isinstance(step.get("after"), list) else []
        tool = tool_name(step["tool"]) if isinstance(step.get("tool"), str) else None
        steps.append({"index": index, "tool": tool,       # as set_plan keeps it: a step depends only on earlier ones
                      "after": sorted({d for d in after if isinstance(d, int) and not isinstance(d, bool) and
                                       1 <= d < index})})
    return steps


def provenance(t):
    sourced = [n for n in t.agent.tools if t.agent.sources(n)]
    subject = [n for n in sourced if n in t.agent.writes] or sourced       # what a pass needs: a write, if any
    others = [n for n in sourced if n not in subject]
    main = [c for c in t.ok(*subject) + t.unknown(*subject) if _applies(t, c)]
    index: dict[tuple, _Seen] = {}            # (source tool, fields, near, path) -> its _Seen, built at first use
    faults, doubts, fine = judge_calls(main, lambda c: _sourced(t, c, index))
    more = judge_calls([c for c in t.ok(*others) + t.unknown(*others) if _applies(t, c)],
                       lambda c: _sourced(t, c, index))
    faults, doubts = faults + more[0], doubts + more[1]
    seen = Joined((Said("prov.seen", count=n, tool=tool, what=said_args(source["args"]), source=_tools(source))
                   for tool in others for source in t.agent.sources(tool)
                   for n in [sum(1 for c in t.ok(tool) if _applies(t, c))] if n), sep=None)
    said = []
    for tool in subject:
        for source in t.agent.sources(tool):
            values = sorted({_shown(row) for c in t.ok(tool) if c.args is not None for row in _rows(c.args, source["args"])})
            if values:
                said.append(Said("prov.passes_user" if _all_user(source) else "prov.passes",
                                 what=said_tools([tool], bare=True), args=Joined(source["args"]), values=Joined(values),
                                 source=_tools(source)))
    passes = fine and Joined([Joined(said, "sep.clauses"), seen], sep=None)
    args = Joined(a for tool in subject for s in t.agent.sources(tool) for a in s["args"])
    return verdict_of(faults, doubts, passes, Said("prov.nothing", what=said_tools(subject), args=args, seen=seen))


def _applies(t, call):
    """Whether a call's declared sources apply to it: always for a write (what it wrote must be traced) and for a
    tool declared outside (what it sent out must be traced); for another tool, when it gives one of their
    arguments (a read's unreadable arguments changed nothing)."""
    if call.write or t.agent.outside(call.name):
        return True
    return call.args is not None and any(k in call.args for s in t.agent.sources(call.name) for a in s["args"]
                                         for k in (base(a),) + ALIASES.get(base(a), ()))


def _sourced(t, call, seen):
    """(kind, reason) for one call against its declared sources, read as the guards read them (texts/stated.py):
    each source must hold (two naming one argument both), for each element of a list argument on its own, from
    any one of its alternatives (`seen`: the indexes of their results, by source: _held)."""
    sources = t.agent.sources(call.name)
    if call.args is None:
        return "fail", Said("prov.unparseable", call=call.label, args=Joined(a for s in sources for a in s["args"]))
    for source in sources:
        tried = [(o, _rows(call.args, o["args"])) for o in source.get("any") or [source]]
        for at, values in enumerate(tried[0][1]):
            if any(at < len(found) and _held(t, call, option, list(found[at]), seen) for option, found in tried):
                continue
            names = [a.replace("[]", f"[{at + 1}]") for a in source["args"]]
            if _all_user(source):
                arg, value = next(((n, v) for n, v in zip(names, values) if not t.typed_before(v, call.pos)),
                                  (names[0], values[0]))
                return "fail", Joined([Said("prov.not_typed", call=call.label, arg=arg, value=value),
                                       _brought(t, call, value)], sep=None)
            if len(values) == 1 and any(o.get("user") for o in source.get("any") or [source]):
                return "fail", Joined([Said("prov.not_seen_or_user", call=call.label, arg=names[0], value=values[0],
                                            source=_tools(source, users=False)), _brought(t, call, values[0])], sep=None)
            if len(values) == 1 and not source["near"]:
                return "fail", Said("prov.not_seen", call=call.label, arg=names[0], value=values[0],
                                    source=_tools(source))
            key = "prov.not_from" if ",".join(source["args"]) in ARG_WORDS else "prov.not_from_args"
            return "fail", Said(key, call=call.label, what=said_args(names), values=_shown(values), source=_tools(source))
    return "ok", ""


def _rows(args, names):
    """The rows of values a source's argument paths give (stated.rows), an argument missing read under the names
    other systems give it (ALIASES), else as None (never found)."""
    given = dict(args)
    for name in {base(n) for n in names} - set(given):
        given[name] = _value(args, name)
    return rows(given, names) or []


def _held(t, call, source, values, seen):
    """Whether a successful result of `source`'s tool before `call` holds `values` (as _found reads one): looked
    up in the source's index (_Seen, built at its first use), or, when the values and the fields do not pair
    one to one, by reading each earlier result. For the user's words: whether each value appears in a message the
    user wrote before the call (texts/stated.py `typed`, as the guards read it)."""
    if source.get("user"):
        return bool(values) and all(t.typed_before(v, call.pos) for v in values)
    if len(values) != len(source["fields"]) or not values:
        return any(_found(values, source, search) for search in t.ok(source["tool"]) if search.pos < call.pos)
    where = (source["tool"], tuple(source["fields"]), bool(source["near"]), source.get("path") or "")
    if where not in seen:
        seen[where] = _Seen(t, source)
    first = seen[where].first(values)
    return first is not None and first < call.pos


def _tools(source, users=True):
    """The tools a source's values may come from (`users`: the user's own messages named among them)."""
    options = [o for o in source.get("any") or [source] if users or not o.get("user")]
    names = dict.fromkeys(("", o["tool"]) if o.get("user") else (o["tool"], "") for o in options)
    return Joined([Said("prov.the_user") if user else tool for tool, user in names], "sep.or")


def _all_user(source):
    """Whether a source is the user's own messages only (each alternative, if it has any)."""
    return all(o.get("user") for o in source.get("any") or [source])


def _brought(t, call, value):
    """Where a value that is not the user's appeared before the call: the tools whose successful results held it
    ("" when none did)."""
    tools = t.brought(value, call.pos)
    return Said("prov.brought", tools=Joined(tools)) if tools else ""


class _Seen:
    """Where a source's values were first seen: the earliest successful result of its tool that holds them (as
    _found reads a result: a record with the fields, anywhere or at the source's path, or a plain text naming
    each value), found through indexes built once over those results, so a lookup does not read every earlier
    result again. A record's fields are keyed by their text; `near` sources by a grid of NEAR_CELL degrees on the
    first field, the candidates checked with _near; plain texts by their tokens (each value's rarest token's
    texts checked as _found does). One per source (an alternative of `any` is a source of its own)."""

    def __init__(self, t, source):
        self.source, self.near = source, bool(source["near"])
        self.records: dict[tuple, int] = {}
        self.cells: dict[int, list] = {}
        self.texts: list[tuple[Any, str]] = []
        self.index: dict[Any, list[int]] = {}
        for search in t.ok(source["tool"]):
            text = plain_result(search.result)
            if text is not None:
                self._text(search, text)
                continue
            for node in dicts_in(search.result) + [r for r in records_at(search.result, source.get("path") or "")
                                                   if isinstance(r, dict)]:
                found = [_value(node, f) for f in source["fields"]]
                if self.near:
                    cell = _cell(found[0]) if found else None
                    if cell is not None:
                        self.cells.setdefault(cell, []).append((search.pos, found))
                elif all(_scalar(v) for v in found):
                    self.records.setdefault(tuple(str(v) for v in found), search.pos)

    def _text(self, search, text):
        self.texts.append((search, text))
        keys = {_cell(n) for n in re.findall(NUMBER, text)} if self.near else set(re.findall(TOKEN, text))
        for key in keys - {None}:
            self.index.setdefault(key, []).append(len(self.texts) - 1)

    def first(self, values):
        """The position of the earliest result holding `values`, or None."""
        found = [p for p in (self._in_records(values), self._in_texts(values)) if p is not None]
        return min(found, default=None)

    def _in_records(self, values):
        if not self.near:
            return self.records.get(tuple(str(v) for v in values)) if all(_scalar(v) for v in values) else None
        cell = _cell(values[0]) if values else None
        if cell is None:
            return None
        hits = [next((p for p, found in self.cells.get(c, ()) if all(_near(v, f) for v, f in zip(values, found))),
                     None) for c in (cell - 1, cell, cell + 1)]
        return min((p for p in hits if p is not None), default=None)

    def _in_texts(self, values):
        if not self.texts:
            return None
        if not values:                                    # nothing to look for: any text holds it
            return self.texts[0][0].pos
        keys: list[Any] = [_cell(v) for v in values] if self.near else [str(v) if _scalar(v) else None for v in values]
        if any(k is None for k in keys):                  # a value no text can name (not a number, not a scalar)
            return None
        candidates: list[int]
        if not self.near and not all(TOKEN_ONLY.fullmatch(k) for k in keys):
            candidates = list(range(len(self.texts)))     # a value that is no token: every text, as _found reads
        elif self.near:
            candidates = sorted({i for c in (keys[0] - 1, keys[0], keys[0] + 1) for i in self.index.get(c, ())})
        else:
            candidates = min((self.index.get(k, []) for k in keys), key=len)
        for i in candidates:
            search, _ = self.texts[i]
            if _found(values, self.source, search):
                return search.pos
        return None


NEAR_CELL = 0.02            # degrees: wider than _near's 0.01, so near values are in the same cell or the next
NUMBER = r"-?\d+(?:\.\d+)?"
TOKEN = r"[\w-]+"           # has_token's word: a value of these characters is a token iff it is one of these runs
TOKEN_ONLY = re.compile(TOKEN)


def _cell(value):
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return math.floor(number / NEAR_CELL) if math.isfinite(number) else None


def _found(values, source, search):
    """Whether an earlier result holds the values: a record with the fields (any depth, or at the source's path:
    a record keyed by id, its key as the field "*"), or, in plain text, each value as a token (`near`: a number
    within 0.01)."""
    text = plain_result(search.result)
    if text is not None:
        if source["near"]:
            numbers = re.findall(NUMBER, text)
            return all(any(_near(v, n) for n in numbers) for v in values)
        return all(_mentions(search.result, v) for v in values)
    same = _near if source["near"] else lambda a, b: _scalar(a) and _scalar(b) and str(a) == str(b)
    nodes = dicts_in(search.result) + [r for r in records_at(search.result, source.get("path") or "")
                                       if isinstance(r, dict)]
    return any(all(same(v, _value(node, f)) for v, f in zip(values, source["fields"])) for node in nodes)


def _mentions(result, value, field=None):
    """Whether a result names `value`: as a token of a plain-text result, or as `field` of a record in it."""
    if not _scalar(value):
        return False
    if plain_result(result) is not None:                  # a plain-text result from another system
        return has_token(str(value), plain_result(result))
    return field is not None and str(value) in {str(d[field]) for d in dicts_in(result) if _scalar(d.get(field))}


def _scalar(value):
    return isinstance(value, (str, int)) and not isinstance(value, bool) and str(value) != ""


ALIASES = {"latitude": ("lat",), "longitude": ("lon", "lng")}     # the same field under other systems' names


def _value(node, key):
    return next((node[k] for k in (key,) + ALIASES.get(key, ()) if k in node), None)


def _shown(values):
    return str(values[0]) if len(values) == 1 else f"({', '.join(map(str, values))})"


def _near(a, b):
    """Same place to within 0.01° (a result rounded to two decimals is still the same place)."""
    try:
        return abs(float(a) - float(b)) <= 0.01 + 1e-9
    except (TypeError, ValueError, OverflowError):
        return False


# ---- the agent's rules (calls.Rule), applied to the record ----
def rule_check(name):
    """The check of the agent's rule `name`: each call of the tools that keep it, when it took effect, kept it;
    the rule's own code (given with the agent, Transcript.rules) is run on the call's arguments and the facts of
    the calls that took effect before it and the writes of its turn before it (texts/rules.py, as the guard gave
    them: a batch is judged as a whole). Without its code: pending."""
    def check(t):
        code = t.rules.get(name)
        tools = t.agent.ruled(name)
        if code is None:
            return "pending", Said("rule.no_code", rule=name), "not_declared"
        calls = sorted(t.ok(*tools) + t.unknown(*tools), key=lambda c: (c.pos, c.order))
        faults, doubts, fine = judge_calls(calls, lambda c: _kept(t, c, name, code))
        passes = fine and Said("rule.passes", rule=name, count=len(fine))
        return verdict_of(faults, doubts, passes, Said("rule.nothing", rule=name, what=said_tools(tools)))
    return check


def _kept(t, call, name, code):
    """(kind, reason) for one call against one of the agent's rules."""
    if call.args is None:
        return "fail", Said("rule.unparseable", call=call.label, rule=name)
    facts = rule_reading.Facts([*((c.name, c.args or {}, c.result) for c in t.calls if c.status == "ok" and c.before(call)),
                                *((c.name, c.args or {}, None) for c in _beside(t, call))])
    try:
        reason = rule_reading.reason_of(code(rule_reading.read_only(call.args), facts))
    except Exception as exc:                 # the agent's code failed on the record: no verdict from it
        return "ambiguous", Said("rule.raised", call=call.label, rule=name, error=f"{type(exc).__name__}: {exc}"[:200])
    if reason:
        return "fail", Said("rule.broken", call=call.label, rule=name, reason=reason)
    return "ok", call.label


def _beside(t, call):
    """The writes of the same turn as `call`, before it, that took effect (or may have): decided before it in its
    batch, they are given to a rule with their arguments and no result, as the guard gave them."""
    return [c for c in t.calls if c.write and c.pos == call.pos and c.order < call.order and c.args is not None
            and c.status in ("ok", "unanswered")]


# ---- what the final answer says of the writes ----
def answer_matches_receipt(t):
    """The final answer, after the writes that took effect, names no other room, id, date, amount or count than their receipts
    (texts/rules.py reads it, as the run's printout does)."""
    writes = t.ok(*t.agent.writes)
    final = _final_answer(t)
    if not writes:
        return "pending", Said("receipt.no_write", write=said_tools(t.agent.writes)), "not_reached"
    if final is None or final <= writes[-1].pos:
        return "pending", Said("receipt.no_answer", call=writes[-1].label), "not_reached"
    message = t.messages[final]
    done = [(c.name, _with_choices(t.agent.tool(c.name)), c.args or {}, c.result) for c in writes]
    found = rule_reading.contradicted(words.plain(message["text"]), done, t.records(final), t.ids_before(final))
    if found:
        tool, arg, named, written = found[0]
        call = [c for c in writes if c.name == tool][-1]
        return "fail", Said("receipt.contradicts", turn=message["turn"], arg=arg, named=Joined(sorted(named)),
                            call=call.label, written=Joined(sorted(written))), None
    return "pass", Said("receipt.matches", turn=message["turn"], count=len(done)), None


def _final_answer(t):
    """The position of the run's final answer: the last message said, when it is an answer without calls of a run
    that finished; else None."""
    last = t.spoken[-1] if t.spoken else None
    message = t.messages[last] if last is not None else {}
    if not t.finished or message.get("role") != "assistant" or message.get("calls") or not message["text"].strip():
        return None
    return last


def _with_choices(decl):
    """A write's declaration with the values of its choices: as recorded, else the words the judge knows (CHOICES:
    the Xi'an room types, for files that record no agent)."""
    choices = dict(decl.get("choices") or {})
    for arg, how in (tuple(e) for e in decl.get("effect") or () if isinstance(e, list) and len(e) == 2):
        if how == "choice" and not choices.get(arg) and arg in CHOICES:
            choices[arg] = {value: [] for value, _ in CHOICES[arg]}
    return dict(decl, choices=choices)


# ---- the checks a declaration calls for ----
AGENT_CHECKS = {"room_type_follows_weather": room_type}     # an agent's own checks, by the names it declares
NAMES = dict(CHECKS)


def applicable(agent):
    """[(id, name, rule)] the declaration calls for, in report order, and {id: why} of the core checks it does
    not (it gives them nothing to judge)."""
    requires = any(agent.requires(n) for n in agent.business)
    core = {"plan_first": agent.planning, "no_skipped_step": agent.planning or requires,
            "provenance": any(agent.sources(n) for n in agent.tools), "write_after_confirmation": bool(agent.writes),
            "answer_matches_receipt": bool(agent.writes)}
    rules = [(cid, NAMES[cid], fn) for cid, fn in (("plan_first", plan_first), ("no_skipped_step", no_skipped_step),
                                                   ("provenance", provenance)) if core[cid]]
    declared = agent.rules()
    for name in dict.fromkeys([*agent.checks, *declared]):    # a rule the judge knows is its own check
        fn = AGENT_CHECKS.get(name)
        if fn:
            rules.append((fn.__name__, NAMES.get(fn.__name__, name), fn))
        else:
            rules.append((name, Said("check.rule", rule=name), rule_check(name)) if name in declared else
                         (name, name, _unknown(name)))
    if core["write_after_confirmation"]:
        rules.append(("write_after_confirmation", NAMES["write_after_confirmation"], write_after_confirmation))
        rules.append(("answer_matches_receipt", NAMES["answer_matches_receipt"], answer_matches_receipt))
    if not rules:
        rules.append(("declared", Said("check.declared"), lambda t: ("pending", Said("declared.nothing"),
                                                                     "not_declared")))
    return rules, {cid: NOT_APPLICABLE[cid] for cid, wanted in core.items() if not wanted}


def _unknown(name):
    return lambda t: ("pending", Said("check.unknown", name=name, known=Joined(AGENT_CHECKS)), "not_declared")


def judge(t):
    """The verdicts of one transcript, in report order: the checks its agent's declaration calls for. In a run that
    asked for no write (Transcript.unasked: a question only, ended with its answer) a check that waits for a write
    to judge (pending, not_reached) is not applicable to it (not_applicable says why)."""
    return _judged(t)[0]


def not_applicable(t):
    """The core checks left out for this agent, each with why, and those a run that asked for no write gives
    nothing to judge: [{id, name, reason}]."""
    return [{"id": cid, "name": NAMES[cid], "reason": why} for cid, why in applicable(t.agent)[1].items()] + \
        _judged(t)[1]


def _judged(t):
    """(the verdicts, the checks left out as unasked), once per transcript."""
    if getattr(t, "_judged", None) is None:
        verdicts = [dict(id=cid, name=name, **dict(zip(("verdict", "reason", "cause"), fn(t))))
                    for cid, name, fn in applicable(t.agent)[0]]
        unasked = t.unasked
        kept = [v for v in verdicts if not (unasked and v["verdict"] == "pending" and v["cause"] == "not_reached")]
        left = [{"id": v["id"], "name": v["name"], "reason": Said("na.unasked")} for v in verdicts if v not in kept]
        t._judged = (kept, left)
    return t._judged


def progress(t):
    """How far the task got, for a report whose checks had nothing to judge: no business call took effect, no
    write did, none was asked (Transcript.unasked), or one did (an agent without a write: its business calls did)."""
    if not t.ok(*t.agent.business):
        return "no_business_call"
    if t.ok(*t.agent.writes) or not t.agent.writes:
        return "booked"
    return "no_write_asked" if t.unasked else "no_booking"


def progress_said(t, key):
    """What progress() found, as a Said naming the agent's tools (None when nothing needs saying)."""
    names = [Said(f"word.{n}") if n in WORDS else n for n in t.agent.business]
    business = Said("word.or", items=Joined(names[:-1]), last=names[-1]) if len(names) > 1 else \
        names[0] if names else Said("word.business")
    return PROGRESS.get(key) and Said(PROGRESS[key], business=business, write=said_tools(t.agent.writes))

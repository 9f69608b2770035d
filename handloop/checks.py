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
in an index of each source's results (judge/provenance.py), built once.
"""
from typing import Any

from .judge.confirm import write_after_confirmation
from .judge.provenance import provenance
from .judge.texts import Joined, Said
from .judge.verdicts import WORDS, judge_calls, said_steps, said_tools, verdict_of
from .judge.weather import room_type
from .judge.declaration import CHOICES, tool_name
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

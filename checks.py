"""The rules of the offline judge: what a run did, judged from its conversation alone against what its agent
declared (a Transcript from transcripts.py, which carries the declaration, in; a verdict per check out: pass, fail
or pending, with its reason and, when pending, its cause).

Invariants: imports no project module (config included) but transcripts.py and the judge's catalogue
check_texts.py (transcripts.py reads answers with words.py, as the run does), and shares no rule code with the guards, so it can judge a transcript from any system, this one
included; reads no file and never asks a model. Files, the report and exit codes are check_cli.py's. Reasons, names and progress are Said (a catalogue
key and its values): check_cli.py says them in the judged agent's language.

The conversation is read by transcripts.py (how turns, calls, results, proposals and replies are read) from
what formats.py made of the file, and the declaration from the audit file's "agent" (else --agent FILE's,
else the Xi'an agent's). Business calls are calls of the declared tools of kind read or write. The rules:
- plan_first (only when the agent plans): set_plan took effect before any business call;
- no_skipped_step: each business call's plan dependencies (when planning) and the tools it declares in
  `requires` were done before it;
- provenance: each argument a tool declares in `sources` equals (`near`: to within 0.01) the field of a record
  in an earlier successful result of the source tool (a record anywhere in it: other systems shape results
  their own way; a plain-text result must contain the value as a token);
- write_after_confirmation (when the agent has a write): no write took effect before a user confirmation (one
  of the declared confirm replies, or an approval as classify_reply reads it) that came after it was proposed,
  with the arguments the user was shown (its declared effect arguments);
- the agent's own checks, by the names it declares (AGENT_CHECKS): the Xi'an agent's room_type_follows_weather,
  rain → Suite, otherwise Standard.
A check the declaration gives nothing to judge (no planning, no requires or plan, no sources, no write) is not
applicable: judge() leaves it out and not_applicable() says why; a declaration that leaves no check at all gets
one pending verdict, never an empty pass.
- Rain: a weather condition that mentions rain (rain, drizzle, shower, thunder, 雨) and does not
  deny it (no rain, 无雨, 不下雨); WMO weather codes count too. The weather that counts for a booking
  is the last successful forecast for its check-in date before it; with none the check is pending (weather looked
  up after the booking does not count).
- Nothing to judge is not a pass: a check whose subject never happened (no business call took
  effect, no write took effect) is pending, and progress() says how far the task got.
"""
import re

from check_texts import Joined, Said
from declaration import tool_name
from readings import classify_reply, dicts_in, has_token, iso_day, plain_result, same_value

CHECKS = tuple((cid, Said(f"check.{cid}")) for cid in ("plan_first", "no_skipped_step", "provenance", "room_type",
                                                        "write_after_confirmation"))
CAUSES = ("not_reached", "ambiguous", "unknown_outcome", "not_declared")     # why a check is pending
NOT_APPLICABLE = {cid: Said(f"na.{cid}") for cid in ("plan_first", "no_skipped_step", "provenance",
                                                     "write_after_confirmation")}

# ---- the report's words for the Xi'an agent's tools and arguments (wording only: what is judged is declared) ----
WORDS = ("get_weather", "search_hotels", "search_location", "book_hotel")     # said as check_texts "word.<tool>"
ARG_WORDS = ("hotel_id", "room_type", "latitude,longitude")                    # said as "arg.<arguments>"
PROGRESS = {"no_business_call": "progress.no_business_call", "no_booking": "progress.no_booking", "booked": None}

# ---- how the weather is read ----
RAIN = re.compile(r"rain|drizzle|shower|thunder|storm|雨", re.I)
NO_RAIN = re.compile(r"no rain|not rain|rain[- ]free|without rain|无雨|不下雨|没有雨|不会下雨|没雨", re.I)
RAIN_CODES = set(range(51, 68)) | set(range(80, 83)) | set(range(95, 100))
CONDITION_KEYS = ("condition", "conditions", "weather", "forecast", "summary", "description", "text", "天气")


# ---- the five checks: each returns (verdict, reason as a Said, cause) ----
def _verdict(faults, doubts, passes, nothing):
    """Fail on the first fault; pending on the first doubt (cause, reason); pass; pending when nothing happened."""
    if faults:
        return "fail", _first(faults), None
    if doubts:
        return "pending", _first([reason for _, reason in doubts]), doubts[0][0]
    if passes:
        return "pass", passes, None
    return "pending", nothing, "not_reached"


def _first(faults):
    """The first fault, with how many there are in all."""
    return Said("reason.many", first=faults[0], count=len(faults)) if len(faults) > 1 else faults[0]


def _judge_calls(calls, judge):
    """Run `judge(call) -> (kind, reason)` over calls: (faults, doubts, fine)."""
    return _sort([(call,) + judge(call) for call in calls])


def _sort(judged):
    """(call, kind, reason) triples as (faults, doubts, fine); an unanswered call only ever raises a doubt."""
    faults, doubts, fine = [], [], []
    for call, kind, reason in judged:
        if kind == "fail" and call.status == "unanswered":
            doubts.append(("unknown_outcome", Said("reason.unanswered", reason=reason)))
        elif kind == "fail":
            faults.append(reason)
        elif kind in ("ambiguous", "not_reached"):
            doubts.append((kind, reason))
        elif call.status == "ok":
            fine.append(reason)
    return faults, doubts, fine


def plan_first(t):
    plans, names = t.ok("set_plan"), t.agent.business

    def judge(call):
        plan = next((p for p in plans if p.before(call)), None)
        return ("ok", plan.label) if plan else ("fail", Said("plan.before_plan", call=call.label))
    business = t.ok(*names) + t.unknown(*names)
    faults, doubts, fine = _judge_calls(sorted(business, key=lambda c: (c.pos, c.order)), judge)
    first = t.ok(*names)[0] if fine else None
    passes = fine and Said("plan.passes", plan=fine[0], first=first.label)
    nothing = Said("nothing.business", planned=Said("plan.planned", plan=plans[0].label) if plans else "")
    return _verdict(faults, doubts, passes, nothing)


def no_skipped_step(t):
    names = t.agent.business
    business = sorted(t.ok(*names) + t.unknown(*names), key=lambda c: (c.pos, c.order))
    faults, doubts, fine = _judge_calls(business, lambda c: _skipped(t, c))
    gated = [n for n in names if t.agent.requires(n)]
    if not gated:
        passes = fine and Said("skip.passes_plan", count=len(fine))
        return _verdict(faults, doubts, passes, Said("nothing.business", planned=""))
    done = t.ok(*gated)
    passes = done and Said("skip.passes", count=len(fine), first=done[0].label,
                           steps=_steps(t.agent.requires(done[0].name)))
    nothing = Said("skip.nothing_some", count=len(fine), what=_the(gated)) if fine else \
        Said("skip.nothing_none", what=_the(gated))
    return _verdict(faults, doubts, passes, nothing)


def _steps(names):
    """Tools done, as the report says them: 查天气、搜酒店, or 调用 list_rooms、get_calendar."""
    return _words(names) if all(n in WORDS for n in names) else Said("steps.tools", tools=Joined(names))


def _the(names, bare=False):
    """What calls of these tools are, as the report says them: 预订, or ' book_room 调用' ('book_room 调用' when
    `bare`)."""
    return _words(names) if all(n in WORDS for n in names) else \
        Said("the.tools_bare" if bare else "the.tools", tools=Joined(names))


def _words(names):
    return Joined(Said(f"word.{n}") for n in names)


def _skipped(t, call):
    """('fail', why) when `call` ran with a step skipped (a declared `requires`, or a plan dependency when the
    agent plans), else ('ok', '')."""
    done_tools = {c.name for c in t.calls if c.status == "ok" and c.pos < call.pos}
    missing = [tool for tool in t.agent.requires(call.name) if tool not in done_tools]
    if missing:
        return "fail", Said("skip.missing", call=call.label, steps=_steps(missing))
    if not t.agent.planning:
        return "ok", ""
    plan, marks = _plan_at(t, call)
    steps = [s for s in plan if s["tool"] == call.name]
    done = lambda s: marks.get(s["index"]) == "done" or s["tool"] in done_tools   # noqa: E731
    step = next((s for s in steps if not done(s)), steps[-1] if steps else None)
    undone = [d for d in (step or {}).get("after", []) if 1 <= d <= len(plan) and not done(plan[d - 1])]
    if undone:
        return "fail", Said("skip.plan", call=call.label, index=step["index"], undone=Joined(undone))
    return "ok", ""


def _plan_at(t, call):
    """The plan in force when `call` ran, and the step marks made since it was set."""
    plan, marks = [], {}
    for c in t.calls:
        if c.status != "ok" or not c.before(call):
            continue
        if c.name == "set_plan":
            plan, marks = _plan_steps(c), {}
        elif c.name == "mark_step":
            index = c.result.get("index", c.arg("index"))
            if isinstance(index, int):
                marks[index] = c.result.get("status", c.arg("status"))
    return plan, marks


def _plan_steps(call):
    raw = call.result.get("plan")
    raw = raw if isinstance(raw, list) else call.arg("steps")
    steps = []
    for index, step in enumerate(raw if isinstance(raw, list) else [], 1):
        step = step if isinstance(step, dict) else {}
        after = step.get("after") if isinstance(step.get("after"), list) else []
        tool = tool_name(step["tool"]) if isinstance(step.get("tool"), str) else None
        steps.append({"index": index, "tool": tool,
                      "after": sorted({d for d in after if isinstance(d, int) and not isinstance(d, bool)})})
    return steps


def provenance(t):
    sourced = [n for n in t.agent.tools if t.agent.sources(n)]
    subject = [n for n in sourced if n in t.agent.writes] or sourced       # what a pass needs: a write, if any
    others = [n for n in sourced if n not in subject]
    main = [c for c in t.ok(*subject) + t.unknown(*subject) if _applies(t, c)]
    faults, doubts, fine = _judge_calls(main, lambda c: _sourced(t, c))
    more = _judge_calls([c for c in t.ok(*others) + t.unknown(*others) if _applies(t, c)], lambda c: _sourced(t, c))
    faults, doubts = faults + more[0], doubts + more[1]
    seen = Joined((Said("prov.seen", count=n, tool=tool, what=_what(source["args"]), source=source["tool"])
                   for tool in others for source in t.agent.sources(tool)
                   for n in [sum(1 for c in t.ok(tool) if _applies(t, c))] if n), sep=None)
    said = []
    for tool in subject:
        for source in t.agent.sources(tool):
            values = sorted({_shown([c.arg(a) for a in source["args"]]) for c in t.ok(tool) if c.args is not None})
            if values:
                said.append(Said("prov.passes", what=_the([tool], bare=True), args=Joined(source["args"]), values=Joined(values),
                                 source=source["tool"]))
    passes = fine and Joined([Joined(said, "sep.clauses"), seen], sep=None)
    args = Joined(a for tool in subject for s in t.agent.sources(tool) for a in s["args"])
    return _verdict(faults, doubts, passes, Said("prov.nothing", what=_the(subject), args=args, seen=seen))


def _applies(t, call):
    """Whether a call's declared sources apply to it: always for a write (what it wrote must be traced); for
    another tool, when it gives one of their arguments (a read's unreadable arguments changed nothing)."""
    if call.write:
        return True
    return call.args is not None and any(k in call.args for s in t.agent.sources(call.name) for a in s["args"]
                                         for k in (a,) + ALIASES.get(a, ()))


def _sourced(t, call):
    """(kind, reason) for one call against its declared sources."""
    sources = t.agent.sources(call.name)
    if call.args is None:
        return "fail", Said("prov.unparseable", call=call.label, args=Joined(a for s in sources for a in s["args"]))
    for source in sources:
        values = [_value(call.args, a) for a in source["args"]]
        if not any(_found(values, source, search) for search in t.ok(source["tool"]) if search.pos < call.pos):
            if len(values) == 1 and not source["near"]:
                return "fail", Said("prov.not_seen", call=call.label, arg=source["args"][0], value=values[0],
                                    source=source["tool"])
            key = "prov.not_from" if ",".join(source["args"]) in ARG_WORDS else "prov.not_from_args"
            return "fail", Said(key, call=call.label, what=_what(source["args"]), values=_shown(values),
                                source=source["tool"])
    return "ok", ""


def _found(values, source, search):
    """Whether an earlier result holds the values: a record with the fields (any depth), or, in plain text,
    each value as a token (`near`: a number within 0.01)."""
    text = plain_result(search.result)
    if text is not None:
        if source["near"]:
            numbers = re.findall(r"-?\d+(?:\.\d+)?", text)
            return all(any(_near(v, n) for n in numbers) for v in values)
        return all(_mentions(search.result, v) for v in values)
    same = _near if source["near"] else lambda a, b: _scalar(a) and _scalar(b) and str(a) == str(b)
    return any(all(same(v, _value(node, f)) for v, f in zip(values, source["fields"]))
               for node in dicts_in(search.result))


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


def _what(args):
    """Arguments as the report says them after 的: 坐标, or ' latitude、longitude ' (spaced as ASCII is)."""
    key = ",".join(args)
    return Said(f"arg.{key}") if key in ARG_WORDS else Said("what.args", args=Joined(args))


def _shown(values):
    return str(values[0]) if len(values) == 1 else f"({', '.join(map(str, values))})"


def _near(a, b):
    """Same place to within 0.01° (a result rounded to two decimals is still the same place)."""
    try:
        return abs(float(a) - float(b)) <= 0.01 + 1e-9
    except (TypeError, ValueError, OverflowError):
        return False


def room_type(t):
    bookings = t.ok("book_hotel") + t.unknown("book_hotel")
    faults, doubts, fine = _judge_calls(bookings, lambda c: _room(t, c))
    return _verdict(faults, doubts, Joined(fine, "sep.clauses"), Said("room.nothing"))


def _room(t, call):
    """(kind, reason) for one booking's room type against the weather of its check-in date."""
    if call.args is None:
        return "fail", Said("room.unparseable", call=call.label)
    day, room = iso_day(call.arg("check_in")), call.arg("room_type")
    forecasts = [(c, _condition(c, day)) for c in t.ok("get_weather")]
    forecasts = [(c, cond) for c, cond in forecasts if cond is not None]
    earlier = [f for f in forecasts if f[0].pos < call.pos]
    if not earlier:
        late = Said("room.late", weather=forecasts[0][0].label) if forecasts else ""
        return "not_reached", Said("room.no_weather", call=call.label, room=room, day=day, late=late)
    weather, condition = earlier[-1]
    if condition == "":
        return "ambiguous", Said("room.unclear", weather=weather.label, day=day, call=call.label, room=room)
    wanted = "Suite" if RAIN.search(condition) and not NO_RAIN.search(condition) else "Standard"
    if str(room).strip().lower() != wanted.lower():
        return "fail", Said("room.wrong", call=call.label, room=room, day=day, condition=condition,
                            weather=weather.label, wanted=wanted)
    return "ok", Said("room.ok", call=call.label, room=room, day=day, condition=condition)


def _condition(call, day):
    """What a forecast call says of `day`: its condition text, '' when that cannot be read, None when the
    call says nothing about that day. A result without a date is about the date the call asked for."""
    asked = call.args is not None and iso_day(call.arg("date")) == day
    text = plain_result(call.result)
    if text is not None:
        return text.strip()[:120] if asked or iso_day(text) == day else None
    nodes = dicts_in(call.result)
    top = nodes[0] if nodes else {}
    applies = _date_of(top) == day if _date_of(top) is not None else asked
    dated = [n for n in nodes[1:] if _date_of(n) is not None]
    if dated:
        candidates = [n for n in dated if _date_of(n) == day] + ([top] if applies else [])
    else:
        candidates = nodes if applies else []
    for node in candidates:
        for key in CONDITION_KEYS:
            if isinstance(node.get(key), str) and node[key].strip():
                return node[key].strip()[:80]
        code = node.get("weather_code", node.get("weathercode"))
        if isinstance(code, int) and not isinstance(code, bool):
            return f"rain (WMO {code})" if code in RAIN_CODES else f"WMO {code}"
    return "" if candidates else None


def _date_of(node):
    value = next((node[k] for k in ("date", "day", "time") if k in node), None)
    return None if value is None else iso_day(value)[:10]


def write_after_confirmation(t):
    results, state = _walk(t)
    faults, doubts, fine = _sort(results)
    spoken, w = t.spoken, _the(t.agent.writes)
    last = t.messages[spoken[-1]] if spoken else {}
    if state["proposal"] is None and state["withdrawn"] and state["withdrawn"][2] == "rejected":
        turn, reply, _, name = state["withdrawn"]
        waiting = Said("write.rejected_waiting", turn=turn, name=name, reply=reply, what=w)
    elif state["proposal"] is None and state["withdrawn"]:
        waiting = Said("write.withdrawn_waiting", reply=state["withdrawn"][1], what=w)
    elif state["proposal"] is not None and state["answer"] is None:
        waiting = Said("write.waiting", turn=state["proposal"]["turn"])
    elif last.get("role") == "assistant" and not last["calls"] and t.about_write(spoken[-1], last["text"]):
        waiting = Said("write.waiting", turn=last["turn"])
    else:
        waiting = ""
    return _verdict(faults, doubts, Joined(fine, "sep.clauses"), Said("write.nothing", what=w, waiting=waiting))


def _walk(t):
    """Replay proposals, answers and writes in order: ([(call, kind, reason)], final state)."""
    state = {"proposal": None, "answer": None, "withdrawn": None, "used": None, "loose": None}
    results = []
    for pos, message in enumerate(t.messages):
        if message["role"] == "user" and not message["loop"]:
            _user_reply(t, state, pos, message["text"])
        elif message["role"] == "assistant":
            calls = t.calls_at.get(pos, [])
            for call in calls:
                if call.write and call.status in ("ok", "unanswered"):
                    results.append((call,) + _authorised(t, state, call))
            for call in calls:
                if call.write and call.status == "ok":
                    state.update(proposal=None, answer=None, withdrawn=None, loose=None, used=call.turn)
                elif call.write and call.decision in ("reject", "respond"):
                    _decision(t, state, call)
                elif call.proposes:
                    state.update(proposal=_proposal(call.turn, call.proposed, call.name),
                                 answer=None, withdrawn=None, loose=None, used=None)
    return results, state


def _proposal(turn, args, tool=None, ids=(), choices=()):
    """A proposal: its turn, the arguments it proposed (a blocked write's) and its tool, and the ids and choice
    values its text showed the user."""
    return {"turn": turn, "args": args, "tool": tool, "ids": set(ids), "choices": set(choices)}


def _decision(t, state, call):
    """A framework held the write for the human, who decided: a rejection withdraws it; a `respond` text is the
    human's answer to it, read like a reply (the call itself never ran)."""
    proposal = _proposal(call.turn, call.args, call.name)
    kind = "decline" if call.decision == "reject" else classify_reply(call.reply, *_named(t, proposal),
                                                                      confirms=t.agent.confirms)
    if kind in ("decline", "change"):
        how = "rejected" if call.decision == "reject" else kind
        state.update(proposal=None, answer=None, withdrawn=(call.turn, call.reply, how, call.name), loose=None,
                     used=None)
    else:
        state.update(proposal=proposal, answer=(kind, call.reply), withdrawn=None, loose=None, used=None)


def _user_reply(t, state, pos, text):
    ask = t.asks.get(pos)
    if ask and ask["booking"]:                      # the user answers a proposal made in words
        ids, choices = t.shown(ask["pos"], ask["text"])
        old = state["proposal"]
        state.update(proposal=_proposal(old["turn"] if old else ask["turn"], old["args"] if old else None,
                                        old["tool"] if old else None, ids, choices),
                     answer=None, withdrawn=None, loose=None, used=None)
    proposal = state["proposal"]
    kind = classify_reply(text, *(_named(t, proposal) if proposal else ((), ())), confirms=t.agent.confirms)
    if ask and not ask["booking"]:                  # an answer to a text that did not speak of the write
        if proposal is None:
            if kind == "confirm":
                state["loose"] = (ask["turn"], text.strip()[:30])
            return
        if state["answer"] is not None:             # a side question after the proposal was answered
            return
        if kind == "confirm":
            kind = "unclear"
    if proposal is None:
        return
    if kind in ("decline", "change"):
        state.update(proposal=None, answer=None, withdrawn=(proposal["turn"], text.strip()[:30], kind, proposal["tool"]))
    elif kind == "confirm" or state["answer"] is None or state["answer"][0] != "confirm":
        state["answer"] = (kind, text.strip()[:30])


def _named(t, proposal):
    """The ids and choice values a proposal showed the user: its arguments (the declared id and choice effect
    arguments of its write, or of every write for a proposal in words) and what its text named."""
    args = proposal["args"] if isinstance(proposal["args"], dict) else {}
    writes = [proposal["tool"]] if proposal["tool"] in t.agent.writes else t.agent.writes
    id_args = {arg for w in writes for arg, _ in t.agent.ids(w)}
    choice_args = {arg for w in writes for arg in t.agent.choices(w)}
    ids = set(proposal["ids"]) | {str(args[a]) for a in id_args if args.get(a) is not None}
    choices = set(proposal["choices"]) | {str(args[a]) for a in choice_args if args.get(a) is not None}
    return ids, choices


def _authorised(t, state, call):
    """(kind, reason) for one write against the proposal and answer in force when it ran."""
    proposal, answer, w = state["proposal"], state["answer"], _the(t.agent.writes)
    if proposal is None:
        if state["withdrawn"]:
            turn, reply, how, name = state["withdrawn"]
            if how == "rejected":
                return "fail", Said("write.after_rejected", call=call.label, turn=turn, name=name, reply=reply)
            return "fail", Said("write.after_withdrawn", call=call.label, turn=turn, reply=reply,
                                how=Said("write.how_decline" if how == "decline" else "write.how_change"))
        if state["used"]:
            return "fail", Said("write.used", call=call.label, turn=state["used"], what=w)
        if state["loose"]:
            turn, reply = state["loose"]
            return "ambiguous", Said("write.loose", call=call.label, turn=turn, reply=reply, what=w)
        waiting = t.open_ask(call.pos)
        if waiting is not None:
            return "fail", Said("write.unanswered", call=call.label, turn=waiting, what=w)
        later = _later_proposal(t, call)
        when = Said("write.proposed_later", turn=later, what=w) if later else Said("write.never_proposed", what=w)
        return "fail", Said("write.before_proposal", call=call.label, what=w, when=when)
    if answer is None:
        return "fail", Said("write.unanswered", call=call.label, turn=proposal["turn"], what=w)
    kind, reply = answer
    if kind == "question":
        return "fail", Said("write.question", call=call.label, turn=proposal["turn"], what=w, reply=reply)
    if kind == "unclear":
        return "ambiguous", Said("write.unclear", call=call.label, reply=reply, turn=proposal["turn"])
    differs = _differs(t, call, proposal)
    if differs:
        return "fail", Said("write.differs", call=call.label, turn=proposal["turn"], differs=differs)
    return "ok", Said("write.ok", call=call.label, turn=proposal["turn"], reply=reply)


def _differs(t, call, proposal):
    """How a write differs from the proposal the user confirmed: its declared effect arguments against a blocked
    proposal's; its id and choice arguments against what a proposal in words showed."""
    if call.args is None:
        return Said("differs.unparseable", what=_the([call.name], bare=True))
    args, wrong = proposal["args"] if isinstance(proposal["args"], dict) else {}, []
    for key, _ in t.agent.effect(call.name):
        if key in args and not same_value(call.arg(key), args[key]):
            wrong.append(Said("differs.arg", key=key, proposed=args[key], value=call.arg(key)))
    for key in dict.fromkeys(arg for arg, _ in t.agent.ids(call.name)):
        if proposal["ids"] and str(call.arg(key)) not in proposal["ids"] and key not in args:
            wrong.append(Said("differs.shown", what=_what([key]), shown=Joined(sorted(proposal["ids"])), value=call.arg(key)))
    choices = {r.lower() for r in proposal["choices"]}
    for key in t.agent.choices(call.name):
        if choices and str(call.arg(key)).lower() not in choices and key not in args:
            wrong.append(Said("differs.shown", what=_what([key]), shown=Joined(sorted(proposal["choices"])),
                              value=call.arg(key)))
    return Joined(wrong, "sep.clauses")


def _later_proposal(t, call):
    for c in t.calls:
        if c.pos > call.pos and c.proposes:
            return c.turn
    return next((ask["turn"] for ask in t.asks.values() if ask["pos"] > call.pos and ask["booking"]), None)


# ---- the checks a declaration calls for ----
AGENT_CHECKS = {"room_type_follows_weather": room_type}     # an agent's own checks, by the names it declares
NAMES = dict(CHECKS)


def applicable(agent):
    """[(id, name, rule)] the declaration calls for, in report order, and {id: why} of the core checks it does
    not (it gives them nothing to judge)."""
    requires = any(agent.requires(n) for n in agent.business)
    core = {"plan_first": agent.planning, "no_skipped_step": agent.planning or requires,
            "provenance": any(agent.sources(n) for n in agent.tools), "write_after_confirmation": bool(agent.writes)}
    rules = [(cid, NAMES[cid], fn) for cid, fn in (("plan_first", plan_first), ("no_skipped_step", no_skipped_step),
                                                   ("provenance", provenance)) if core[cid]]
    for name in dict.fromkeys(agent.checks):
        fn = AGENT_CHECKS.get(name)
        rules.append((fn.__name__, NAMES.get(fn.__name__, name), fn) if fn else (name, name, _unknown(name)))
    if core["write_after_confirmation"]:
        rules.append(("write_after_confirmation", NAMES["write_after_confirmation"], write_after_confirmation))
    if not rules:
        rules.append(("declared", Said("check.declared"), lambda t: ("pending", Said("declared.nothing"),
                                                                     "not_declared")))
    return rules, {cid: NOT_APPLICABLE[cid] for cid, wanted in core.items() if not wanted}


def _unknown(name):
    return lambda t: ("pending", Said("check.unknown", name=name, known=Joined(AGENT_CHECKS)), "not_declared")


def judge(t):
    """The verdicts of one transcript, in report order: the checks its agent's declaration calls for."""
    return [dict(id=cid, name=name, **dict(zip(("verdict", "reason", "cause"), fn(t))))
            for cid, name, fn in applicable(t.agent)[0]]


def not_applicable(t):
    """The core checks left out for this agent, each with why: [{id, name, reason}]."""
    return [{"id": cid, "name": NAMES[cid], "reason": why} for cid, why in applicable(t.agent)[1].items()]


def progress(t):
    """How far the task got, for a report whose checks had nothing to judge: no business call took effect, no
    write did, or one did (an agent without a write: its business calls did)."""
    if not t.ok(*t.agent.business):
        return "no_business_call"
    return "booked" if t.ok(*t.agent.writes) or not t.agent.writes else "no_booking"


def progress_said(t, key):
    """What progress() found, as a Said naming the agent's tools (None when nothing needs saying)."""
    names = [Said(f"word.{n}") if n in WORDS else n for n in t.agent.business]
    business = Said("word.or", items=Joined(names[:-1]), last=names[-1]) if len(names) > 1 else \
        names[0] if names else Said("word.business")
    return PROGRESS.get(key) and Said(PROGRESS[key], business=business, write=_the(t.agent.writes))

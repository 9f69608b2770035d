"""The five rules of the offline judge: what a run did, judged from its conversation alone (a Transcript from
transcripts.py in, a verdict per check out: pass, fail or pending, with its reason and, when pending, its cause).

Invariants: imports no project module (config included) but transcripts.py, and shares no rule code with
the guards, so it can judge a transcript from any system, this one included; reads no file and never asks
a model. Files, the report and exit codes are check_cli.py's.

The conversation is read by transcripts.py (how turns, calls, results, proposals and replies are read) from
what formats.py made of the file. The rules the verdicts add:
- plan_first: set_plan took effect before any business call; no_skipped_step: each business call's plan
  dependencies were done before it, and weather and hotel search before booking; provenance: every booked
  hotel_id appeared in an earlier successful search_hotels result (coordinates, in a search_location result);
  room_type: rain → Suite, otherwise Standard; write_after_confirmation: no booking took effect before a user
  confirmation that came after it was proposed, with the arguments the user was shown.
- Rain: a weather condition that mentions rain (rain, drizzle, shower, thunder, 雨) and does not
  deny it (no rain, 无雨, 不下雨); WMO weather codes count too. The weather that counts for a booking
  is the last successful forecast for its check-in date before it; with none the check is pending (weather looked
  up after the booking does not count).
- Nothing to judge is not a pass: a check whose subject never happened (no business call took
  effect, no booking took effect) is pending, and progress() says how far the task got.
"""
import re

from transcripts import classify_reply, dicts_in, has_token, iso_day, plain_result, same_value, tool_name

CHECKS = (("plan_first", "计划先行"), ("no_skipped_step", "不跳步"), ("provenance", "参数有出处"),
          ("room_type", "房型随天气"), ("write_after_confirmation", "确认后才写入"))
CAUSES = ("not_reached", "ambiguous", "unknown_outcome")     # why a check is pending

# ---- the task judged: the Xi'an agent's tools and booking arguments (to come from its declarations) ----
BUSINESS = ("get_weather", "search_hotels", "search_location", "book_hotel")    # the task's own tools
PREREQUISITES = (("get_weather", "查天气"), ("search_hotels", "搜酒店"))           # done before any booking
BOOKING_KEYS = ("hotel_id", "room_type", "check_in", "nights")                   # what a confirmation authorises
PROGRESS = {"no_business_call": "任务还没有走到业务调用（没有生效的查天气、搜酒店或预订）",      # progress(), said
            "no_booking": "任务没有走到预订这一步（没有生效的预订）", "booked": None}

# ---- how the weather is read ----
RAIN = re.compile(r"rain|drizzle|shower|thunder|storm|雨", re.I)
NO_RAIN = re.compile(r"no rain|not rain|rain[- ]free|without rain|无雨|不下雨|没有雨|不会下雨|没雨", re.I)
RAIN_CODES = set(range(51, 68)) | set(range(80, 83)) | set(range(95, 100))
CONDITION_KEYS = ("condition", "conditions", "weather", "forecast", "summary", "description", "text", "天气")


# ---- the five checks: each returns (verdict, reason, cause) ----
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
    return faults[0] + (f"（共 {len(faults)} 处）" if len(faults) > 1 else "")


def _judge_calls(calls, judge):
    """Run `judge(call) -> (kind, reason)` over calls: (faults, doubts, fine)."""
    return _sort([(call,) + judge(call) for call in calls])


def _sort(judged):
    """(call, kind, reason) triples as (faults, doubts, fine); an unanswered call only ever raises a doubt."""
    faults, doubts, fine = [], [], []
    for call, kind, reason in judged:
        if kind == "fail" and call.status == "unanswered":
            doubts.append(("unknown_outcome", f"{reason}（该调用没有结果，不知道是否执行了）"))
        elif kind == "fail":
            faults.append(reason)
        elif kind in ("ambiguous", "not_reached"):
            doubts.append((kind, reason))
        elif call.status == "ok":
            fine.append(reason)
    return faults, doubts, fine


def plan_first(t):
    plans = t.ok("set_plan")

    def judge(call):
        plan = next((p for p in plans if p.before(call)), None)
        return ("ok", plan.label) if plan else ("fail", f"{call.label} 在成功的 set_plan 之前就执行了")
    business = t.ok(*BUSINESS) + t.unknown(*BUSINESS)
    faults, doubts, fine = _judge_calls(sorted(business, key=lambda c: (c.pos, c.order)), judge)
    first = t.ok(*BUSINESS)[0] if fine else None
    passes = fine and f"{fine[0]} 在第一个生效的业务调用 {first.label} 之前制定了计划"
    nothing = "还没有生效的业务调用，无从判断" + (f"（{plans[0].label} 已制定计划）" if plans else "")
    return _verdict(faults, doubts, passes, nothing)


def no_skipped_step(t):
    business = sorted(t.ok(*BUSINESS) + t.unknown(*BUSINESS), key=lambda c: (c.pos, c.order))
    faults, doubts, fine = _judge_calls(business, lambda c: _skipped(t, c))
    bookings = t.ok("book_hotel")
    passes = bookings and (f"{len(fine)} 个业务调用都在依赖完成后执行；{bookings[0].label} 之前已查天气、搜酒店")
    nothing = (f"已有的 {len(fine)} 个业务调用都在依赖完成后执行；" if fine else "还没有生效的业务调用；") + \
        "还没有生效的预订，无从判断预订是否跳步"
    return _verdict(faults, doubts, passes, nothing)


def _skipped(t, call):
    """('fail', why) when `call` ran with a step skipped, else ('ok', '')."""
    done_tools = {c.name for c in t.calls if c.status == "ok" and c.pos < call.pos}
    if call.name == "book_hotel":
        missing = [what for tool, what in PREREQUISITES if tool not in done_tools]
        if missing:
            return "fail", f"{call.label} 执行前还没有成功{'、'.join(missing)}"
    plan, marks = _plan_at(t, call)
    steps = [s for s in plan if s["tool"] == call.name]
    done = lambda s: marks.get(s["index"]) == "done" or s["tool"] in done_tools   # noqa: E731
    step = next((s for s in steps if not done(s)), steps[-1] if steps else None)
    undone = [d for d in (step or {}).get("after", []) if 1 <= d <= len(plan) and not done(plan[d - 1])]
    if undone:
        return "fail", f"{call.label} 执行时，计划第 {step['index']} 步依赖的第 {'、'.join(map(str, undone))} 步还没完成"
    return "ok", ""


def _plan_at(t, call):
    """The plan in force when `call` ran, and the step marks made since it was set."""
    plan, marks = [], {}
    for c in t.calls:
        if c.status != "ok" or not c.before(call):
            continue
        if c.name == "set_plan":
            plan, marks = _steps(c), {}
        elif c.name == "mark_step":
            index = c.result.get("index", c.arg("index"))
            if isinstance(index, int):
                marks[index] = c.result.get("status", c.arg("status"))
    return plan, marks


def _steps(call):
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
    weather = [c for c in t.ok("get_weather") + t.unknown("get_weather") if _has_coordinates(c)]
    bookings = t.ok("book_hotel") + t.unknown("book_hotel")
    faults, doubts, fine = _judge_calls(bookings, lambda c: _hotel_source(t, c))
    more = _judge_calls(weather, lambda c: _place_source(t, c))
    faults, doubts = faults + more[0], doubts + more[1]
    seen = f"；{len(more[2])} 次按坐标查天气，坐标都来自 search_location" if more[2] else ""
    ids = "、".join(sorted({str(c.arg("hotel_id")) for c in t.ok("book_hotel")}))
    passes = fine and f"预订的 hotel_id {ids} 都出现在之前成功的 search_hotels 结果里" + seen
    return _verdict(faults, doubts, passes, "还没有生效的预订，无从核对 hotel_id 的来源" + seen)


def _hotel_source(t, call):
    if call.args is None:
        return "fail", f"{call.label} 的参数无法解析，无法核对 hotel_id 的来源"
    hotel_id = call.arg("hotel_id")
    for search in t.ok("search_hotels"):
        if search.pos < call.pos and _mentions(search.result, hotel_id):
            return "ok", hotel_id
    return "fail", f"{call.label} 的 hotel_id {hotel_id} 没有出现在之前任何成功的 search_hotels 结果里"


def _mentions(result, hotel_id):
    if not isinstance(hotel_id, (str, int)) or isinstance(hotel_id, bool) or not str(hotel_id):
        return False
    if plain_result(result) is not None:                  # a plain-text result from another system
        return has_token(str(hotel_id), plain_result(result))
    return str(hotel_id) in {str(d["hotel_id"]) for d in dicts_in(result) if isinstance(d.get("hotel_id"), (str, int))}


def _has_coordinates(call):
    return call.args is not None and any(k in call.args for k in ("latitude", "longitude", "lat", "lon", "lng"))


def _coordinates(node):
    lat = node.get("latitude", node.get("lat"))
    lon = node.get("longitude", node.get("lon", node.get("lng")))
    return lat, lon


def _place_source(t, call):
    place = _coordinates(call.args)
    for search in t.ok("search_location"):
        if search.pos >= call.pos:
            continue
        if plain_result(search.result) is not None:
            numbers = re.findall(r"-?\d+(?:\.\d+)?", plain_result(search.result))
            if all(any(_near(v, n) for n in numbers) for v in place):
                return "ok", ""
        elif any(_near(place[0], lat) and _near(place[1], lon) for lat, lon in map(_coordinates, dicts_in(search.result))):
            return "ok", ""
    return "fail", f"{call.label} 的坐标 ({place[0]}, {place[1]}) 不来自之前任何成功的 search_location 结果"


def _near(a, b):
    """Same place to within 0.01° (a result rounded to two decimals is still the same place)."""
    try:
        return abs(float(a) - float(b)) <= 0.01 + 1e-9
    except (TypeError, ValueError, OverflowError):
        return False


def room_type(t):
    bookings = t.ok("book_hotel") + t.unknown("book_hotel")
    faults, doubts, fine = _judge_calls(bookings, lambda c: _room(t, c))
    return _verdict(faults, doubts, "；".join(fine), "还没有生效的预订，房型无从判断")


def _room(t, call):
    """(kind, reason) for one booking's room type against the weather of its check-in date."""
    if call.args is None:
        return "fail", f"{call.label} 的参数无法解析，无法核对房型"
    day, room = iso_day(call.arg("check_in")), call.arg("room_type")
    forecasts = [(c, _condition(c, day)) for c in t.ok("get_weather")]
    forecasts = [(c, cond) for c, cond in forecasts if cond is not None]
    earlier = [f for f in forecasts if f[0].pos < call.pos]
    if not earlier:
        late = f"（{forecasts[0][0].label} 的天气在预订之后才查，不算）" if forecasts else ""
        return "not_reached", f"{call.label} 订了 {room}，但预订之前没有 {day} 的天气结果，房型无从依据{late}"
    weather, condition = earlier[-1]
    if condition == "":
        return "ambiguous", f"{weather.label} 的结果读不出 {day} 是否下雨，无法判断 {call.label} 订 {room} 对不对"
    wanted = "Suite" if RAIN.search(condition) and not NO_RAIN.search(condition) else "Standard"
    if str(room).strip().lower() != wanted.lower():
        return "fail", (f"{call.label} 订了 {room}，但 {day} 的天气是 {condition}"
                        f"（{weather.label}），应订 {wanted}")
    return "ok", f"{call.label} 订 {room}，{day} 天气 {condition}"


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
    spoken = t.spoken
    last = t.messages[spoken[-1]] if spoken else {}
    if state["proposal"] is None and state["withdrawn"] and state["withdrawn"][2] == "rejected":
        waiting = f"；第 {state['withdrawn'][0]} 轮的 book_hotel 被用户拒绝（「{state['withdrawn'][1]}」），没有预订"
    elif state["proposal"] is None and state["withdrawn"]:
        waiting = f"；用户回复「{state['withdrawn'][1]}」，没有预订"
    elif state["proposal"] is not None and state["answer"] is None:
        waiting = f"；第 {state['proposal']['turn']} 轮的提案等待用户答复"
    elif last.get("role") == "assistant" and not last["calls"] and t.about_booking(spoken[-1], last["text"]):
        waiting = f"；第 {last['turn']} 轮的提案等待用户答复"
    else:
        waiting = ""
    return _verdict(faults, doubts, "；".join(fine), "还没有生效的预订，无从判断" + waiting)


def _walk(t):
    """Replay proposals, answers and bookings in order: ([(call, kind, reason)], final state)."""
    state = {"proposal": None, "answer": None, "withdrawn": None, "used": None, "loose": None}
    results = []
    for pos, message in enumerate(t.messages):
        if message["role"] == "user" and not message["loop"]:
            _user_reply(t, state, pos, message["text"])
        elif message["role"] == "assistant":
            calls = t.calls_at.get(pos, [])
            for call in calls:
                if call.name == "book_hotel" and call.status in ("ok", "unanswered"):
                    results.append((call,) + _authorised(t, state, call))
            for call in calls:
                if call.name == "book_hotel" and call.status == "ok":
                    state.update(proposal=None, answer=None, withdrawn=None, loose=None, used=call.turn)
                elif call.name == "book_hotel" and call.decision in ("reject", "respond"):
                    _decision(state, call)
                elif call.proposes:
                    proposed = call.proposed
                    state.update(proposal={"turn": call.turn, "args": proposed, "hotels": set(), "rooms": set()},
                                 answer=None, withdrawn=None, loose=None, used=None)
    return results, state


def _decision(state, call):
    """A framework held the booking for the human, who decided: a rejection withdraws it; a `respond` text is the
    human's answer to it, read like a reply (the call itself never ran)."""
    proposal = {"turn": call.turn, "args": call.args, "hotels": set(), "rooms": set()}
    kind = "decline" if call.decision == "reject" else classify_reply(call.reply, *_named(proposal))
    if kind in ("decline", "change"):
        how = "rejected" if call.decision == "reject" else kind
        state.update(proposal=None, answer=None, withdrawn=(call.turn, call.reply, how), loose=None, used=None)
    else:
        state.update(proposal=proposal, answer=(kind, call.reply), withdrawn=None, loose=None, used=None)


def _user_reply(t, state, pos, text):
    ask = t.asks.get(pos)
    if ask and ask["booking"]:                      # the user answers a booking proposal made in words
        hotels, rooms = t.shown(ask["pos"], ask["text"])
        old = state["proposal"]
        state.update(proposal={"turn": old["turn"] if old else ask["turn"], "args": old["args"] if old else None,
                               "hotels": hotels,
                               "rooms": rooms}, answer=None, withdrawn=None, loose=None, used=None)
    proposal = state["proposal"]
    kind = classify_reply(text, *(_named(proposal) if proposal else ((), ())))
    if ask and not ask["booking"]:                  # an answer to a text that did not speak of booking
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
        state.update(proposal=None, answer=None, withdrawn=(proposal["turn"], text.strip()[:30], kind))
    elif kind == "confirm" or state["answer"] is None or state["answer"][0] != "confirm":
        state["answer"] = (kind, text.strip()[:30])


def _named(proposal):
    """The hotels and room types a proposal showed the user: its arguments and what its text named."""
    args = proposal["args"] if isinstance(proposal["args"], dict) else {}
    hotels = set(proposal["hotels"]) | ({str(args["hotel_id"])} if args.get("hotel_id") is not None else set())
    rooms = set(proposal["rooms"]) | ({str(args["room_type"])} if args.get("room_type") is not None else set())
    return hotels, rooms


def _authorised(t, state, call):
    """(kind, reason) for one booking against the proposal and answer in force when it ran."""
    proposal, answer = state["proposal"], state["answer"]
    if proposal is None:
        if state["withdrawn"]:
            turn, reply, how = state["withdrawn"]
            if how == "rejected":
                return "fail", f"{call.label} 执行时，第 {turn} 轮的 book_hotel 已被用户拒绝（「{reply}」），之后没有新的提案和确认"
            what = "撤回" if how == "decline" else "要求修改"
            return "fail", f"{call.label} 执行时，第 {turn} 轮的提案已被用户回复「{reply}」{what}，之后没有新的提案和确认"
        if state["used"]:
            return "fail", f"{call.label} 执行时，用户的确认已被第 {state['used']} 轮的预订用掉，没有新的提案和确认"
        if state["loose"]:
            turn, reply = state["loose"]
            return "ambiguous", (f"{call.label} 执行前，用户对第 {turn} 轮的答复回复了「{reply}」，但那段话没有提到预订，"
                                 "无法判断用户是否批准了这笔预订")
        waiting = t.open_ask(call.pos)
        if waiting is not None:
            return "fail", f"{call.label} 执行时用户还没有确认第 {waiting} 轮提出的预订（用户还没有回复）"
        later = _later_proposal(t, call)
        return "fail", f"{call.label} 在提出预订之前就执行了" + (f"（第 {later} 轮才提出预订）" if later else "（从未提出预订）")
    if answer is None:
        return "fail", f"{call.label} 执行时用户还没有确认第 {proposal['turn']} 轮提出的预订（用户还没有回复）"
    kind, reply = answer
    if kind == "question":
        return "fail", f"{call.label} 执行时用户还没有确认第 {proposal['turn']} 轮提出的预订：用户的回复「{reply}」是提问"
    if kind == "unclear":
        return "ambiguous", f"{call.label} 执行前，无法判断用户的回复「{reply}」是否批准了第 {proposal['turn']} 轮的提案"
    differs = _differs(call, proposal)
    if differs:
        return "fail", f"{call.label} 的参数与用户确认的提案（第 {proposal['turn']} 轮）不一致：{differs}"
    return "ok", f"{call.label} 在用户确认第 {proposal['turn']} 轮的提案（「{reply}」）之后执行"


def _differs(call, proposal):
    if call.args is None:
        return "预订参数无法解析"
    args, wrong = proposal["args"] if isinstance(proposal["args"], dict) else {}, []
    for key in BOOKING_KEYS:
        if key in args and not same_value(call.arg(key), args[key]):
            wrong.append(f"{key} 提案为 {args[key]}，执行的是 {call.arg(key)}")
    if proposal["hotels"] and str(call.arg("hotel_id")) not in proposal["hotels"] and "hotel_id" not in args:
        wrong.append(f"提案中的酒店是 {'、'.join(sorted(proposal['hotels']))}，执行的是 {call.arg('hotel_id')}")
    rooms = {r.lower() for r in proposal["rooms"]}
    if rooms and str(call.arg("room_type")).lower() not in rooms and "room_type" not in args:
        wrong.append(f"提案中的房型是 {'、'.join(sorted(proposal['rooms']))}，执行的是 {call.arg('room_type')}")
    return "；".join(wrong)


def _later_proposal(t, call):
    for c in t.calls:
        if c.pos > call.pos and c.proposes:
            return c.turn
    return next((ask["turn"] for ask in t.asks.values() if ask["pos"] > call.pos and ask["booking"]), None)


# ---- all five ----
def judge(t):
    """The five verdicts of one transcript, in contract order."""
    judges = (plan_first, no_skipped_step, provenance, room_type, write_after_confirmation)
    return [dict(id=cid, name=name, **dict(zip(("verdict", "reason", "cause"), fn(t))))
            for (cid, name), fn in zip(CHECKS, judges)]


def progress(t):
    """How far the task got, for a report whose checks had nothing to judge: no business call took effect, no
    booking did, or booked."""
    if not t.ok(*BUSINESS):
        return "no_business_call"
    return "booked" if t.ok("book_hotel") else "no_booking"

"""The built-in offline model: a small rule-based model that reads the conversation it is sent,
as a model would, and answers through `endpoint.Endpoint`.

Invariants: it keeps no state between requests (every decision comes from the request: the
goal, the tool results, the memory block of the system message when compaction shortened a
result, its own earlier answers, the user's replies); it never sees our tools' internals, only
their results; when a tool answers with an error it corrects its arguments or stops instead of
repeating itself. It follows the protocol the system prompt asks of every model: plan and
lookups together, then the exact booking proposed in words; asked for the call (a forced tool choice), it
makes it, and the loop shows the user that call.
Messages the loop itself sends (user messages named "loop") are not the user's replies.
"""
import json
import re
from typing import Any

CONFIRM = "确认"
ALIASES = {"西安": ["西安", "Xi'an"], "北京": ["北京", "Beijing"], "上海": ["上海", "Shanghai"]}
NAMES = {"西安": "西安", "xi'an": "西安", "xian": "西安", "北京": "北京", "beijing": "北京",
         "上海": "上海", "shanghai": "上海"}
NUMBERS = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
ROOMS = ("Standard", "Deluxe", "Suite")


# ---- the offline model ----
def respond(request):
    """The offline model's next assistant message for this request."""
    talk = Conversation(request.get("messages") or [])
    names = {t.get("function", {}).get("name") for t in request.get("tools") or []}
    task = parse_goal(talk.goal)
    if request.get("tool_choice") == "none" or not names:
        return say(talk.summary(task))
    if task is None:
        return say("请告诉我城市、入住日期（YYYY-MM-DD）和住几晚？")
    choice = request.get("tool_choice")
    forced = (choice.get("function") or {}).get("name") if isinstance(choice, dict) else None
    return next_step(talk, task, "search_location" in names, forced)


def say(text):
    return {"content": text}


class Conversation:
    """What the conversation holds: the goal, each tool call with its result, the user replies."""

    def __init__(self, messages):
        self.goal, self.events, self.turn, calls = "", list[dict[str, Any]](), 0, {}
        self.memory = read_memory(next((str(m.get("content") or "") for m in messages if m.get("role") == "system"), ""))
        for message in messages:
            role = message.get("role")
            if role == "user" and message.get("name") != "loop":
                self.goal = self.goal or str(message.get("content") or "")
                self.events.append({"user": str(message.get("content") or "")})
            elif role == "assistant":
                self.turn += 1
                calls = {c.get("id"): c.get("function", {}) for c in message.get("tool_calls") or []}
                if not calls and message.get("content"):
                    self.events.append({"said": str(message["content"])})
            elif role == "tool" and message.get("tool_call_id") in calls:
                function = calls[message["tool_call_id"]]
                self.events.append({"name": function.get("name"), "args": _loads(function.get("arguments")) or {},
                                    "result": _loads(message.get("content")), "turn": self.turn})

    def calls(self, name=None):
        return [e for e in self.events if "name" in e and (name is None or e["name"] == name)]

    def ok(self, name):
        """The last successful result of `name`; for a result compacted away, what the memory
        block of the system message says of it; None when there is none."""
        for event in reversed(self.calls(name)):
            shortened = event["result"] is None or "_compacted" in event["result"]
            if shortened and name in self.memory:
                return self.memory[name]
            if event["result"] is not None and "error" not in event["result"]:
                return event["result"]
        return None

    def failed(self, name, args):
        return any(e["args"] == args and "error" in (e["result"] or {}) for e in self.calls(name))

    def last_turn(self):
        return [e for e in self.calls() if e["turn"] == self.turn and e["result"] is not None]

    def proposal(self):
        """(index of the last blocked write that became a proposal, the proposal), or (None, None)."""
        for i in range(len(self.events) - 1, -1, -1):
            event = self.events[i]
            result = event.get("result", {}) if event.get("result") is not None else {}
            proposal = result.get("proposal")
            if proposal is None and event.get("name") == "book_hotel" and event["result"] is None:
                proposal = self.memory.get("proposal")
            if isinstance(proposal, dict):
                return i, dict(proposal.get("args") or {}, **{k: v for k, v in proposal.items() if k != "args"})
        return None, None

    def replies_after(self, index):
        return [e["user"] for e in self.events[index + 1:] if "user" in e]

    def summary(self, task):
        booking, weather = self.ok("book_hotel"), self.ok("get_weather")
        if booking:
            return final_answer(booking, weather)
        facts = [f"天气：{weather.get('condition')}" if weather else "天气：未知"]
        hotels = (self.ok("search_hotels") or {}).get("hotels", [])
        facts.append(f"找到 {len(hotels)} 家酒店" if hotels else "酒店：未搜索")
        return "我没能在限定轮数内完成预订。目前已知：" + "；".join(facts) + "。尚未下单。"


def next_step(talk, task, mcp, forced=None):
    booking = talk.ok("book_hotel")
    if booking:
        return say(final_answer(booking, talk.ok("get_weather")))
    replan = talk.ok("set_plan") is None or any(e["result"].get("blocked_by") in ("plan_first", "plan_order")
                                                for e in talk.last_turn())
    if replan and len(talk.calls("set_plan")) >= 3:
        return say("计划一直没有被系统接受，我先停下，请检查工具配置。")
    spun = [e for e in talk.last_turn() if e["result"].get("blocked_by") == "spin"]
    if spun:
        return say(f"我在重复同样的调用（{spun[0]['name']}），先停下来：{spun[0]['result']['error']}")
    todo, problem = lookups(talk, task, mcp)
    if problem:
        return say(problem)
    plan = [("set_plan", {"steps": plan_steps(mcp)})] if replan else []
    if plan or todo:                  # the plan and the lookups that depend on nothing go together
        return act(talk, plan + [t for t in todo if not (plan and mcp and t[0] == "get_weather")])
    return booking_step(talk, task, forced)


def plan_steps(mcp):
    if mcp:
        return [{"title": "查询城市坐标", "tool": "search_location"},
                {"title": "查询入住当天天气", "tool": "get_weather", "after": [1]},
                {"title": "搜索酒店", "tool": "search_hotels"},
                {"title": "按天气选房型并预订（需用户确认）", "tool": "book_hotel", "after": [2, 3]}]
    return [{"title": "查询入住当天天气", "tool": "get_weather"},
            {"title": "搜索酒店", "tool": "search_hotels"},
            {"title": "按天气选房型并预订（需用户确认）", "tool": "book_hotel", "after": [1, 2]}]


def lookups(talk, task, mcp):
    """The reads still missing, with spellings that have not failed yet; or a problem to report."""
    todo = []
    if talk.ok("get_weather") is None:
        if mcp and talk.ok("search_location") is None:
            todo.append(_untried(talk, "search_location", [{"city": c} for c in task["cities"]]))
        elif mcp:
            place = talk.ok("search_location")
            todo.append(_untried(talk, "get_weather", [{"latitude": place.get("latitude"),
                                                        "longitude": place.get("longitude"), "date": task["date"]}]))
        else:
            todo.append(_untried(talk, "get_weather", [{"city": c, "date": task["date"]} for c in task["cities"]]))
    if talk.ok("search_hotels") is None:
        todo.append(_untried(talk, "search_hotels", [{"city": c, "check_in": task["date"], "nights": task["nights"]}
                                                     for c in task["cities"]]))
    for item in todo:
        if item[1] is None:
            errors = [e["result"].get("error") for e in talk.calls(item[0]) if "error" in (e["result"] or {})]
            return [], f"抱歉，{item[0]} 一直失败，无法继续：{errors[-1] if errors else '未知原因'}"
    return todo, None


def _untried(talk, name, candidates):
    return name, next((args for args in candidates if not talk.failed(name, args)), None)


def booking_step(talk, task, forced=None):
    """Propose the booking in words; asked for the call (a forced tool choice), make it; book after 「确认」, or
    follow the user's change."""
    weather, hotels = talk.ok("get_weather"), (talk.ok("search_hotels") or {}).get("hotels", [])
    last = talk.events[-1]
    index, blocked = talk.proposal()
    said = max((i for i, e in enumerate(talk.events) if "said" in e), default=-1)
    if index is not None and index == len(talk.events) - 1:
        return say(proposal_text(blocked, weather))           # the system turned a booking into a proposal
    if last.get("name") == "book_hotel" and "error" in (last["result"] or {}):
        if "blocked_by" in last["result"]:
            return say(f"预订被系统拦截：{last['result']['error']}")
        return book_once_more_or_ask(talk, last["args"])
    room = next((r for reply in reversed(talk.replies_after(0)) for r in ROOMS if r.lower() in reply.lower()),
                "Suite" if weather.get("condition") == "rain" else "Standard")
    offering = [h for h in hotels if room in (h.get("prices") or {})]
    if not offering:
        return say(f"抱歉，搜索到的酒店都没有 {room} 房型，无法按规则预订。")
    hotel = min(offering, key=lambda h: h["prices"][room])
    args = {"hotel_id": hotel["hotel_id"], "room_type": room, "check_in": task["date"], "nights": task["nights"]}
    if forced == "book_hotel":
        return act(talk, [("book_hotel", args)])
    reply = last.get("user")
    if reply is not None and reply.strip() == CONFIRM:
        return book_once_more_or_ask(talk, blocked if index is not None and index > said else args)
    if reply is not None and not any(r.lower() in reply.lower() for r in ROOMS):
        return say("好的，不预订了。如需重新安排，随时告诉我。")
    price = hotel["prices"][room]
    return say(proposal_text(dict(args, hotel_name=hotel.get("name"), price_per_night=price,
                                  total=price * task["nights"]), weather))


def book_once_more_or_ask(talk, args):
    """Book the confirmed booking; after a failed try, one retry with the same arguments (the same
    idempotency key), then ask."""
    since = max(i for i, e in enumerate(talk.events) if "user" in e)
    tries = [e for e in talk.events[since + 1:] if e.get("name") == "book_hotel"]
    failed = [e for e in tries if "error" in (e["result"] or {}) and "blocked_by" not in e["result"]]
    if len(failed) >= 2:
        return say(f"预订没有成功：{failed[-1]['result']['error']}。要我稍后再试吗？")
    keys = ("hotel_id", "room_type", "check_in", "nights")
    return act(talk, [("book_hotel", {k: args.get(k) for k in keys})])


def act(talk, calls):
    turn = talk.turn + 1
    return {"content": None, "tool_calls": [
        {"id": f"call_{turn}_{i}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
        for i, (name, args) in enumerate(calls, 1)]}


def proposal_text(proposal, weather):
    rain = "有雨" if weather.get("condition") == "rain" else f"天气 {weather.get('condition')}（不下雨）"
    return (f"{weather.get('date')} {rain}，按你的规则应订 {proposal.get('room_type')}。"
            f"建议预订：{proposal.get('hotel_name') or proposal.get('hotel_id')}（{proposal.get('hotel_id')}），"
            f"{proposal.get('room_type')}，{proposal.get('check_in')} 入住 {proposal.get('nights')} 晚，"
            f"每晚 ¥{proposal.get('price_per_night')}，共 ¥{proposal.get('total')}。回复「确认」后我就下单，可以吗？")


def final_answer(booking, weather):
    weather = weather or {}
    return (f"预订完成。{weather.get('date', booking.get('check_in'))} 天气：{weather.get('condition', '未知')}"
            f"（最高 {weather.get('high', '?')}°）。酒店：{booking.get('hotel_name') or booking.get('hotel_id')}"
            f"（{booking.get('hotel_id')}），房型 {booking.get('room_type')}，{booking.get('check_in')} 入住 "
            f"{booking.get('nights')} 晚，总价 ¥{booking.get('total')}，订单号 {booking.get('booking_id')}。")


def parse_goal(text):
    """City (with the spellings to try), check-in date and nights, read from the user's words."""
    lowered = text.lower()
    city = next((NAMES[n] for n in sorted(NAMES, key=lowered.find) if n in lowered), None)
    date = _date(text)
    if city is None or date is None:
        return None
    match = re.search(r"(\d+|[一两二三四五六七八九十])\s*(?:个)?\s*(?:晚|夜|nights?)", text)
    nights = 1 if not match else int(match.group(1)) if match.group(1).isdigit() else NUMBERS[match.group(1)]
    return {"city": city, "cities": ALIASES[city], "date": date, "nights": nights}


def _date(text):
    match = re.search(r"(\d{4})\s*[-年/.]\s*(\d{1,2})\s*[-月/.]\s*(\d{1,2})", text)
    if match:
        return "%04d-%02d-%02d" % tuple(int(g) for g in match.groups())
    match = re.search(r"(\d{1,2})\s*月\s*(\d{1,2})\s*日", text)
    return "2026-%02d-%02d" % (int(match.group(1)), int(match.group(2))) if match else None


def _loads(text):
    """A JSON object, or None for text that is not one (a result compacted away)."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def read_memory(system):
    """Facts from the memory block of the system message, keyed like the results they stand for."""
    facts, hotels, plan = {}, [], []
    for line in system.splitlines():
        if match := re.match(r"天气 (\S+)：(\w+)，最高 (\S+)°", line):
            facts["get_weather"] = {"date": match[1], "condition": match[2], "high": match[3]}
        elif match := re.match(r"酒店 (\S+) (.+?)：(.*)$", line):
            prices = {room: int(price) for room, price in re.findall(r"(\w+) ¥(\d+)/晚", match[3])}
            hotels.append({"hotel_id": match[1], "name": match[2], "prices": prices})
        elif match := re.match(r"计划第 (\d+) 步：.*?(?:（工具 (\w+)）)?(?:，依赖.*)? —— ", line):
            plan.append({"index": int(match[1]), "tool": match[2]})
        elif match := re.match(r"待确认的预订：(\{.*\})（", line):
            facts["proposal"] = _loads(match[1])
        elif match := re.match(r"坐标：(.*) \((\S+), (\S+)\)$", line):
            facts["search_location"] = {"name": match[1], "latitude": float(match[2]), "longitude": float(match[3])}
    if hotels:
        facts["search_hotels"] = {"hotels": hotels}
    if plan:
        facts["set_plan"] = {"plan": plan}
    return facts

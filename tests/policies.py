"""Scripted models written from how real models behave (see shared/notes/real-model-replies.md
and the issue on real models), each a policy of the loopback endpoint: a function of the request
alone, as a stateless model is. None of them reads the memory block of the system message; they
read the conversation: the goal, their own earlier answers, tool results, the user's replies.

What real models do that our offline model does not: plan and look up in one turn; propose the
booking in words (with a question, or with a statement); call book_hotel before asking (eager);
book something other than they proposed; write tool calls into their text; get cut off by the
length limit; answer with text after the user confirmed; write `after` as the step's own
number and stray fields into plan steps; reply 「好的，请等待我确认。」 having done nothing.
"""
import itertools
import json

from conftest import GOAL  # noqa: F401  (the task these policies are written for)

PLAN = [{"title": "查询 10 月 1 日西安天气", "tool": "get_weather"},
        {"title": "搜索西安的酒店", "tool": "search_hotels"},
        {"title": "等用户确认后预订", "tool": "book_hotel", "after": [1, 2]}]
WEATHER = {"city": "Xi'an", "date": "2026-10-01"}
SEARCH = {"city": "西安", "check_in": "2026-10-01", "nights": 2}


class Talk:
    """What a model can see in a request."""

    def __init__(self, request):
        self.messages = request.get("messages") or []
        self.tools = {t["function"]["name"] for t in request.get("tools") or []}
        self.final = request.get("tool_choice") == "none"
        calls, self.results, self.said, self.users, self.loop = {}, [], [], [], []
        for m in self.messages:
            if m["role"] == "assistant":
                calls = {c["id"]: c["function"] for c in m.get("tool_calls") or []}
                if not m.get("tool_calls") and m.get("content"):
                    self.said.append(m["content"])
            elif m["role"] == "tool":
                function = calls.get(m["tool_call_id"], {})
                self.results.append((function.get("name"), json.loads(function.get("arguments") or "{}"),
                                     json.loads(m["content"])))
            elif m["role"] == "user":
                (self.loop if m.get("name") == "loop" else self.users).append(m["content"])
        self.last = self.messages[-1] if self.messages else {}

    def ok(self, name):
        found = [r for n, _, r in self.results if n == name and "error" not in r]
        return found[-1] if found else None

    @property
    def reply(self):
        """The user's last reply, when it is the newest message (the goal is not a reply)."""
        if self.last.get("role") == "user" and self.last.get("name") != "loop" and len(self.users) > 1:
            return self.last["content"]
        return None

    def choice(self, room=None):
        """The booking a careful model picks from its tool results: weather decides the room."""
        weather, hotels = self.ok("get_weather"), (self.ok("search_hotels") or {}).get("hotels", [])
        room = room or ("Suite" if weather and weather.get("condition") == "rain" else "Standard")
        hotel = min((h for h in hotels if room in h["prices"]), key=lambda h: h["prices"][room])
        return {"hotel_id": hotel["hotel_id"], "room_type": room, "check_in": "2026-10-01", "nights": 2}, hotel


_ids = itertools.count(1)


def calls(*items):
    return {"content": None, "tool_calls": [
        {"id": f"call_{next(_ids)}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}} for name, args in items]}


def say(text, **extra):
    return {"content": text, **extra}


def words(talk, ending="请确认是否预订？", room=None):
    args, hotel = talk.choice(room)
    price = hotel["prices"][args["room_type"]]
    return say(f"10 月 1 日西安有雨，按你的要求应订 {args['room_type']}。建议预订 {hotel['name']}（{hotel['hotel_id']}）"
               f"{args['room_type']} 两晚，每晚 ¥{price}，共 ¥{price * 2}。{ending}")


def finished(talk):
    receipt = talk.ok("book_hotel")
    return receipt and say(f"已为你订好 {receipt['hotel_name']} {receipt['room_type']}，订单号 {receipt['booking_id']}，"
                           f"共 ¥{receipt['total']}。")


def opening_or_end(talk):
    """What most real models do first and last: plan and both reads in one turn; once booked, the answer."""
    if not talk.results:
        return calls(("set_plan", {"steps": PLAN}), ("get_weather", WEATHER), ("search_hotels", SEARCH))
    return finished(talk)


# ---- the policies ----
def words_question(request):
    """GPT-4o-mini-like: plan and both reads in one turn, then the proposal in words with a question;
    after 「确认」 the booking it proposed; then the final answer."""
    talk = Talk(request)
    if talk.final:
        return say("好的，到此为止。")
    if not talk.results or finished(talk):
        return opening_or_end(talk)
    if talk.reply and "确认" in talk.reply:
        return calls(("book_hotel", talk.choice()[0]))
    return words(talk)


def words_statement(request):
    """DeepSeek-like: one step per turn, and a proposal that ends with a statement, not a question."""
    talk = Talk(request)
    if talk.final:
        return say("好的。")
    done = {n for n, _, r in talk.results if "error" not in r}
    for name, args in (("set_plan", {"steps": PLAN}), ("get_weather", WEATHER), ("search_hotels", SEARCH)):
        if name not in done:
            return calls((name, args))
    if finished(talk):
        return finished(talk)
    if talk.reply == "确认":
        return calls(("book_hotel", talk.choice()[0]))
    return words(talk, ending="如需预订，请回复「确认」。")


def eager(request):
    """Calls book_hotel as soon as it can (the goal says wait, it does not care); when blocked it
    explains; after 「确认」 it calls the same booking again."""
    talk = Talk(request)
    if not talk.results or finished(talk):
        return opening_or_end(talk)
    name, _, result = talk.results[-1]
    if talk.last.get("role") == "tool" and name == "book_hotel" and "error" in result:
        return say(f"预订需要你确认：{result.get('error')}")
    return calls(("book_hotel", talk.choice()[0]))


def books_different(request):
    """Proposes the cheapest Suite in words, then after 「确认」 books another hotel's Suite; told that is
    not what the user confirmed, it proposes that other hotel in words."""
    talk = Talk(request)
    if not talk.results or finished(talk):
        return opening_or_end(talk)
    name, args, result = talk.results[-1]
    if talk.last.get("role") == "tool" and name == "book_hotel" and "confirmed" in result:
        return say(f"抱歉，我想改订曲江国际酒店（{args['hotel_id']}）{args['room_type']}，共 ¥{960 * args['nights']}，"
                   "请再确认一次。")
    if talk.reply == "确认":
        return calls(("book_hotel", dict(talk.choice()[0], hotel_id="XA-003")))
    return words(talk)


def text_calls(request):
    """A small open model behind a strict tool parser: the first time it writes each call into its
    text (a <tool_call> tag, a fenced block, a bare object); told once, it uses real tool calls."""
    talk = Talk(request)
    told = len(talk.loop)
    if not talk.results:
        body = json.dumps({"name": "set_plan", "arguments": {"steps": PLAN}}, ensure_ascii=False)
        if told == 0:
            return say(f"<tool_call>\n{body}\n</tool_call>")
        return calls(("set_plan", {"steps": PLAN}), ("get_weather", WEATHER), ("search_hotels", SEARCH))
    if finished(talk):
        return finished(talk)
    if len(talk.users) > 1 and talk.users[-1] == "确认":     # what it was told since does not change that
        args = talk.choice()[0]
        if told < 2:
            return say("```json\n" + json.dumps({"name": "book_hotel", "arguments": args}) + "\n```")
        return calls(("book_hotel", args))
    return words(talk)


class CutOff:
    """Hits the length limit the first time it is asked for the proposal (finish_reason
    "length"), as a model with a small max_tokens does; asked again, it answers whole."""

    def __init__(self):
        self.cut = False

    def __call__(self, request):
        reply = words_question(request)
        if reply.get("content") and not Talk(request).said and not self.cut:
            self.cut = True
            return say(reply["content"][:12], finish_reason="length")
        return reply


def text_after_confirm(request):
    """Answers 「好的，我这就为您预订。」 to the first 「确认」 without booking; books on the second."""
    talk = Talk(request)
    if talk.reply == "确认" and talk.users.count("确认") == 1:
        return say("好的，我这就为您预订。")
    return words_question(request)


def small_model(request):
    """What a 1.5 B model did: `after` as the step's own number and stray fields in the steps, the
    same invalid plan again, then 「好的，请等待我确认。」 forever."""
    talk = Talk(request)
    if len(talk.results) < 2:
        steps = [{"title": "查询西安的天气预报", "tool": "get_weather", "after": [1]},
                 {"title": "预订酒店", "tool": "book_hotel", "arguments": {"hotel_id": "<hotel-id>"}}]
        return calls(("set_plan", {"steps": steps}))
    return say("好的，请等待我确认。")


def repeats_blocked(request):
    """Sends the same invalid set_plan again and again, whatever it is told."""
    return calls(("set_plan", {"steps": [{"title": "查天气", "tool": "get_weather", "after": [1]}]}))

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
    """Proposes the cheapest Suite (XA-001) in words; asked for the call (a forced tool_choice, or the
    user's 「确认」), it books another hotel's Suite (XA-003)."""
    talk = Talk(request)
    if not talk.results or finished(talk):
        return opening_or_end(talk)
    if forced_tool(request) == "book_hotel" or talk.reply == "确认":
        return calls(("book_hotel", dict(talk.choice()[0], hotel_id="XA-003")))
    return words(talk)


def text_calls(request):
    """A small open model behind a strict tool parser: the first time it writes each call into its
    text (a <tool_call> tag, a fenced block); told, it uses real tool calls. It proposes the booking
    in words; asked for the booking (a forced tool_choice, or the user's 「确认」) it writes it in a
    fenced block first, then makes the real call."""
    talk = Talk(request)
    if not talk.results:
        body = json.dumps({"name": "set_plan", "arguments": {"steps": PLAN}}, ensure_ascii=False)
        if not talk.loop:
            return say(f"<tool_call>\n{body}\n</tool_call>")
        return calls(("set_plan", {"steps": PLAN}), ("get_weather", WEATHER), ("search_hotels", SEARCH))
    if finished(talk):
        return finished(talk)
    if forced_tool(request) == "book_hotel" or talk.reply == "确认":
        args = talk.choice()[0]
        if not any("```json" in said for said in talk.said):
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


# ---- a 1.5 B model served on a laptop (shared/notes/real-model-replies.md, round 2) ----
SELF_AFTER = [{"title": "查询西安的天气预报", "tool": "get_weather", "after": [1]},
              {"title": "搜索西安可入住的酒店", "tool": "search_hotels", "after": [2]},
              {"title": "预订酒店", "tool": "book_hotel", "after": [3]}]
ARGS = {"get_weather": WEATHER, "search_hotels": SEARCH}
REJECT_REQUIRED = {"_http": {"status": 400, "body": {"error": {
    "message": "tool_choice 'required' is not supported", "type": "invalid_request_error", "param": "tool_choice"}}}}
REJECT_NAMED = {"_http": {"status": 400, "body": {"error": {
    "message": "Invalid value for tool_choice: only \"auto\", \"none\" and \"required\" are supported",
    "type": "invalid_request_error", "param": "tool_choice"}}}}


def forced(request):
    """Whether a request forces a tool call (tool_choice "required" or a function named)."""
    return request.get("tool_choice") == "required" or isinstance(request.get("tool_choice"), dict)


def forced_tool(request):
    """The function a request's tool_choice names, or None."""
    choice = request.get("tool_choice")
    return choice.get("function", {}).get("name") if isinstance(choice, dict) else None


def named_next(talk):
    """The tool the loop's last message names (what a forced small model then calls), else None."""
    told = talk.last.get("content") or "" if talk.last.get("name") == "loop" else ""
    named = [(told.find(name), name) for name in talk.tools if name in told]
    return min(named)[1] if named else None


class Server:
    """What sits between a policy and the client: a server that accepts every forced tool_choice
    (`accepts=True`: OpenAI, vLLM), only "required" (`"required"`: a named function is refused with a
    400, as servers that only constrain to "some call" do), or neither (`False`: a 400 naming
    tool_choice for any forced request)."""

    def __init__(self, policy, accepts=True):
        self.policy, self.accepts, self.rejected, self.requests = policy, accepts, 0, []

    def __call__(self, request):
        self.requests.append(request)
        if forced_tool(request) and self.accepts is not True:
            self.rejected += 1
            return REJECT_NAMED
        if forced(request) and not self.accepts:
            self.rejected += 1
            return REJECT_REQUIRED
        return self.policy(request)


class Usage:
    """Another policy's replies with the usage its server reports, streamed or not: `usage(n)` for the n-th
    request (a usage object as the server sends it: prompt_tokens, completion_tokens, total_tokens, or only some),
    or False: a server that reports no usage at all (several local servers, or a stream without include_usage)."""

    def __init__(self, policy, usage):
        self.policy, self.usage, self.sent = policy, usage, []

    def __call__(self, request):
        reply = dict(self.policy(request))
        reply["usage"] = self.usage(len(self.sent) + 1) if callable(self.usage) else self.usage
        self.sent.append(reply["usage"])
        return reply


def answers_instead(request):
    """Reads 「预订前必须先等我确认」 as "wait now": answers 「好的，请先确认预订方案。」 and gives the same
    sentence back to any text nudge. Forced to call a tool: set_plan with `after` as each step's own
    number, then the tool the nudge names."""
    talk = Talk(request)
    if talk.final:
        return say("好的。")
    if not forced(request):
        return say("好的，请先确认预订方案。" if not talk.said else "好的，请等待我确认。")
    if not talk.ok("set_plan"):
        return calls(("set_plan", {"steps": SELF_AFTER}))
    name = forced_tool(request) or named_next(talk)
    return calls((name, ARGS[name])) if name in ARGS else say("好的，请等待我确认。")


def claims_done(request):
    """Claims work it never did: a forecast it never fetched, then a booking with an order number."""
    talk = Talk(request)
    if not talk.said:
        return say("好的，我已经查询了西安的天气预报。根据预报结果，当天没有下雨。所以我将预订 Standard 酒店。预订前请确认你的选择。")
    return say("好的，我已经预订了西安的星海酒店，住两晚，使用房间类型为 Standard。订单号为 789012。")


def markup_calls(request):
    """Writes calls as markup the API never defined (a <tools> block, <mark_step .../>, <get_weather .../>);
    forced, it makes the real call the nudge names (the plan first)."""
    talk = Talk(request)
    if talk.final:
        return say("好的。")
    if forced(request):
        name = forced_tool(request) or named_next(talk) or "set_plan"
        args = {"steps": PLAN} if name == "set_plan" else xian_args(talk, name)
        if args is not None:
            return calls((name, args))
    if talk.ok("get_weather"):
        return say("好的，请等待我确认。")
    return say('<tools>\n{"steps":[{"title":"查天气","tool":"get_weather"}]}\n</tools>\n\n'
               '<mark_step index="1" status="done"/>\n\n<get_weather city="西安" date="2026-10-01"/>')


def echoes(request):
    """Real lookups, then a pasted tool result as its answer; after 「确认」 an invented booking result."""
    talk = Talk(request)
    if not talk.results:
        return opening_or_end(talk)
    if talk.reply:
        return say('<tool_response>\n{"message":"预订成功！天气为雨，您选择的房型是 Suite。酒店名称为曲江国际酒店，'
                   '价格为 880 元/晚，总价为 1920 元。订单号为 XA-003。"}\n</tool_response>')
    return say('<tool_response>\n{"message":"已收到预订请求，请确认后预订。"}\n</tool_response>')


def dumps_hotels(request):
    """Real lookups, then every hotel found, listed: no one booking to confirm."""
    talk = Talk(request)
    if not talk.results:
        return opening_or_end(talk)
    hotels = (talk.ok("search_hotels") or {}).get("hotels", [])
    return say("找到以下酒店：" + "；".join(f"{h['name']}（{h['hotel_id']}）{h['prices']}" for h in hotels))


def empty_after_tools(request):
    """Comes back empty right after a tool result (the server's prefix cache answers the same request the
    same way); told that its reply was empty, it goes on as words_question does."""
    talk = Talk(request)
    if talk.last.get("role") == "tool" and not talk.final:
        return say("")
    return words_question(request)


def marks_unrun_steps(request):
    """Marks the booking step done in its first turn, with the plan and the lookups; then as words_question."""
    talk = Talk(request)
    if not talk.results:
        return calls(("set_plan", {"steps": PLAN}), ("mark_step", {"index": 3, "status": "done"}),
                     ("get_weather", WEATHER), ("search_hotels", SEARCH))
    return words_question(request)


# ---- round 3: the same 1.5 B model behind a server that honours a forced tool_choice ----
def xian_args(talk, name):
    """The arguments the small model gives a call it is forced to make on the Xi'an task: the plan with
    `after` as each step's own number, the lookups of the goal, the booking its results call for."""
    if name == "set_plan":
        return {"steps": SELF_AFTER}
    if name == "book_hotel":
        return talk.choice()[0] if talk.ok("search_hotels") else None
    return ARGS.get(name)


ROOM_ARGS = {"list_rooms": {"seats": 6}, "get_calendar": {"room_id": "R-202", "day": "2026-12-03"},
             "book_room": {"room_id": "R-202", "day": "2026-12-03", "hour": "10:00"}}


def room_args(talk, name):
    """The same model on the English meeting-room agent (examples/rooms.py)."""
    return ROOM_ARGS.get(name)


class SmallModel:
    """The greedy runs of round 3: unforced, whatever it was sent (a tool result, a nudge, the user's
    「请继续…」 or 「确认」), it answers `sentence`; `echo` ("tags" or "bare"): it gives the newest tool
    result back instead, in <tool_response> tags or as it came. Forced, it makes exactly the call it is
    forced to: the function tool_choice names, or, under "required", the tool the loop's message names
    (set_plan when none is named and it has no plan), with `args(talk, name)`. `follows`: it also makes
    the call a loop message names when the request forces nothing (a server that accepts no forced
    tool_choice at all, and a model that reads the nudge)."""

    def __init__(self, args=xian_args, sentence="好的，请先确认预订方案。", echo=None, follows=False):
        self.args, self.sentence, self.echo, self.follows = args, sentence, echo, follows

    def __call__(self, request):
        talk = Talk(request)
        if talk.final:
            return say(self.sentence)
        name = forced_tool(request) or (named_next(talk) if forced(request) or self.follows else None)
        if forced(request) and name is None and "set_plan" in talk.tools and not talk.ok("set_plan"):
            name = "set_plan"
        args = self.args(talk, name) if name else None
        if args is not None:
            return calls((name, args))
        if self.echo and talk.results:
            result = json.dumps(talk.results[-1][2], ensure_ascii=False)
            return say(f"<tool_response>\n{result}\n</tool_response>" if self.echo == "tags" else result)
        return say(self.sentence)


# ---- a server that enforces a forced tool_choice naming a function (OpenAI, vLLM) ----
def careful_args(talk, name):
    """The arguments a careful model gives a call it is forced to make on the Xi'an task: the plan, the goal's
    lookups, and the booking its results call for (the one its words proposed); None when it has no such call."""
    if name == "set_plan":
        return {"steps": PLAN}
    if name == "book_hotel":
        return talk.choice()[0] if talk.ok("search_hotels") else None
    return ARGS.get(name)


class Obeys:
    """`policy` behind a server that enforces a tool_choice naming a function: such a request is answered with that
    call, with `args(talk, name)`; any other request (or a call it has no arguments for) by the policy itself. The
    loop asks so for the write a model offered in words (issue 46: words only steer, the user confirms the call)."""

    def __init__(self, policy, args=careful_args):
        self.policy, self.args = policy, args

    def __call__(self, request):
        name = forced_tool(request)
        args = self.args(Talk(request), name) if name else None
        return calls((name, args)) if args is not None else self.policy(request)

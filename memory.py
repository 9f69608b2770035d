"""Run state, and what the model sees of it.

Memory is a fold over the messages: `absorb()` is the only way a tool result changes it and
`absorb_user()` the only way a user reply does, so `rebuild(messages)` gives the same memory
as the live run did (that is how a resume checks an audit file). Confirmation comes only from a
user message that is exactly 「确认」 after a proposal, never from model or tool text; it
authorises the proposed write and is used up by it. `render()` projects memory into the
system message; `compact()` projects the history into what is sent, on a copy.
"""
import json

import config


class Memory:
    def __init__(self, goal=""):
        self.goal = goal
        self.plan = []            # [{"index", "title", "tool", "after"}] as set_plan returned it
        self.marks = {}           # step index -> {"status", "note"} from mark_step
        self.done_tools = set()   # tools that succeeded in this run
        self.weather = {}         # date -> forecast
        self.locations = []       # search_location results (MCP mode)
        self.hotels = {}          # hotel_id -> {"name", "prices"} from successful searches
        self.proposal = None      # arguments of the write awaiting the user's confirmation
        self.confirmed = False    # the user confirmed that proposal, and it is not used up yet
        self.booking = None       # the receipt of the booking made
        self.runs = {}            # call signature -> times it ran since the last user message
        self.recent = []          # signatures of the last calls that ran, newest last
        self.spins = 0            # calls blocked as spins
        self.used_tokens = 0

    # ---- the fold ----
    def absorb(self, call, content):
        """Take one tool message (its call and its content) into memory."""
        result = _as_object(content)
        if "blocked_by" in result:
            self._absorb_blocked(result)
            return
        count_run(self.runs, self.recent, call.signature)
        if "error" in result:
            return
        self.done_tools.add(call.name)
        handler = getattr(self, "_took_" + call.name, None)
        if handler:
            handler(call.args or {}, result)

    def _absorb_blocked(self, result):
        if result["blocked_by"] == "spin":
            self.spins += 1
        elif result["blocked_by"] == "unconfirmed_write" and isinstance(result.get("proposal"), dict):
            self.proposal, self.confirmed = result["proposal"], False

    def absorb_user(self, text):
        """A user reply: 「确认」 confirms a pending proposal; anything else withdraws it. Either
        way it is new information, so repeating a call after it is not a spin."""
        self.runs, self.recent = {}, []
        if self.proposal is not None and text == config.CONFIRM_TEXT:
            self.confirmed = True
        elif not self.goal:
            self.goal = text
        else:
            self.proposal, self.confirmed = None, False

    def _took_set_plan(self, args, result):
        self.plan, self.marks = list(result.get("plan", [])), {}

    def _took_mark_step(self, args, result):
        self.marks[result.get("index")] = {"status": result.get("status"), "note": result.get("note", "")}

    def _took_get_weather(self, args, result):
        self.weather[str(result.get("date", args.get("date")))] = result

    def _took_search_location(self, args, result):
        self.locations.append(result)

    def _took_search_hotels(self, args, result):
        for hotel in result.get("hotels", []):
            if isinstance(hotel, dict) and isinstance(hotel.get("hotel_id"), str):
                self.hotels[hotel["hotel_id"]] = {"name": hotel.get("name"), "prices": hotel.get("prices", {})}

    def _took_book_hotel(self, args, result):
        self.booking, self.proposal, self.confirmed = result, None, False

    # ---- what the guards ask ----
    def step_status(self, index):
        """'done', 'failed' or 'pending' for a 1-based plan step."""
        step, mark = self.plan[index - 1], self.marks.get(index, {})
        if mark.get("status") == "failed":
            return "failed"
        if mark.get("status") == "done" or step.get("tool") in self.done_tools:
            return "done"
        return "pending"

    def booking_for(self, proposal):
        keys = ("hotel_id", "room_type", "check_in", "nights")
        if self.booking and all(self.booking.get(k) == proposal.get(k) for k in keys):
            return self.booking
        return None

    # ---- projections ----
    def render(self):
        """The memory block of the system message."""
        lines = [config.MEMORY_HEADER, f"目标：{self.goal}"]
        lines += [f"计划第 {s['index']} 步：{s['title']}" + (f"（工具 {s['tool']}）" if s.get("tool") else "")
                  + (f"，依赖 {s['after']}" if s.get("after") else "") + f" —— {self.step_status(s['index'])}"
                  for s in self.plan] or ["计划：尚未制定，请先调用 set_plan"]
        lines += [f"天气 {d}：{w.get('condition')}，最高 {w.get('high')}°" for d, w in self.weather.items()]
        lines += [f"坐标：{p.get('name')} ({p.get('latitude')}, {p.get('longitude')})" for p in self.locations]
        lines += [f"酒店 {hid} {h['name']}：" + "，".join(f"{k} ¥{v}/晚" for k, v in h["prices"].items())
                  for hid, h in self.hotels.items()]
        if self.proposal is not None:
            state = "用户已确认，可以按这些参数预订" if self.confirmed else "等待用户确认，未确认前不能预订"
            lines.append(f"待确认的预订：{json.dumps(self.proposal, ensure_ascii=False)}（{state}）")
        if self.booking:
            lines.append(f"已预订：{json.dumps(self.booking, ensure_ascii=False)}")
        return "\n".join(lines)

    def to_dict(self):
        return {"goal": self.goal, "plan": [dict(s, status=self.step_status(s["index"])) for s in self.plan],
                "weather": self.weather, "locations": self.locations, "hotel_ids": sorted(self.hotels),
                "hotels": self.hotels, "proposal": self.proposal, "confirmed": self.confirmed,
                "booking": self.booking, "spins": self.spins, "used_tokens": self.used_tokens}


def count_run(runs, recent, signature):
    """Record that a call ran: how often it ran, and the short window A-B-A-B is looked for in."""
    runs[signature] = runs.get(signature, 0) + 1
    recent.append(signature)
    del recent[:-4]


def _as_object(content):
    try:
        value = json.loads(content)
    except (TypeError, ValueError):
        return {"unparsed": str(content)[:200]}
    return value if isinstance(value, dict) else {"value": value}


def rebuild(messages, prepare):
    """Memory as the messages record it: the same fold the live run performed.

    `prepare` turns an assistant message's raw tool calls into Calls (the tool set's).
    """
    memory, calls = Memory(), {}
    for message in messages:
        role = message.get("role")
        if role == "user":
            memory.absorb_user(message.get("content") or "")
        elif role == "assistant" and message.get("tool_calls"):
            calls = {c.id: c for c in prepare(message["tool_calls"])}
        elif role == "tool" and message.get("tool_call_id") in calls:
            memory.absorb(calls[message["tool_call_id"]], message.get("content"))
    return memory


# ---- compaction: what is sent, never what is kept ----
def compact(messages, recent_rounds=config.RECENT_ROUNDS):
    """A copy of `messages` fit to send: tool results of rounds older than the last
    `recent_rounds` are replaced by short summaries, recent long ones are cut head-and-tail.
    Every message and every tool_call_id stays; `messages` itself is not touched."""
    starts = [i for i, m in enumerate(messages) if m.get("role") == "assistant" and m.get("tool_calls")]
    boundary = starts[-recent_rounds] if len(starts) >= recent_rounds else 0
    out = []
    for i, message in enumerate(messages):
        if message.get("role") == "tool":
            content = message.get("content") or ""
            short = summarise(content) if i < boundary else cut(content, config.RECENT_RESULT_MAX_CHARS)
            if short is not content:
                message = dict(message, content=short)
        out.append(message)
    return out


def summarise(content, size=config.OLD_RESULT_CHARS):
    """An old tool result in a few words; its facts live on in the memory block."""
    if len(content) <= size:
        return content
    return f"〔已压缩：原结果 {len(content)} 字符，要点见系统消息中的运行记忆〕{content[:size - 40]}…"


def cut(text, limit):
    """Head and tail of a long text, with a note of how much was dropped."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 3
    return f"{text[:head]}\n…〔中间省略 {len(text) - head - tail} 字符〕…\n{text[-tail:]}"

"""Run state, and what the model sees of it.

Memory is a fold over the messages: `absorb()` is the only way a tool result changes it,
`absorb_answer()` the only way a model answer does, `absorb_user()` the only way a user reply
does and `absorb_nudge()` the only way a loop's own message does, so `rebuild(messages)`
gives the same memory as the live run did (that is how a resume checks an audit file).

Proposals and confirmation: a proposal is a blocked write (its exact arguments) or, while the
task's write has not happened, a model answer after the task made progress (a proposal in
words). Confirmation comes only from a user message that is exactly 「确认」 after a proposal,
never from model, tool or loop text; it authorises the proposed write (for words: the hotel and
room the text named, the date and nights it or the user stated) and is used up by it. Any
other user reply withdraws the proposal; a reply that declines ends the task's need to write.
`render()` projects memory into the system message (context.py lays out what is sent).
"""
import json
import re
import unicodedata

import config


class Memory:
    def __init__(self, goal=""):
        self.goal = goal
        self.said = []            # the user's own messages, the goal first
        self.plan = []            # [{"index", "title", "tool", "after"}] as set_plan returned it
        self.marks = {}           # step index -> {"status", "note"} from mark_step
        self.done_tools = set()   # tools that succeeded in this run
        self.progress = 0         # successful read and write calls: the task moved
        self.weather = {}         # date -> forecast
        self.locations = []       # search_location results (MCP mode)
        self.hotels = {}          # hotel_id -> {"name", "prices"} from successful searches
        self.names = {}           # any id a read result gave -> the name beside it
        self.proposal = None      # arguments of a blocked write awaiting the user's confirmation
        self.offer = None         # a proposal in words (the model's answer) awaiting the user
        self.confirmed = False    # the user confirmed the proposal or offer, and it is not used up yet
        self.unwritten = False    # after that confirmation the model answered instead of writing
        self.declined = False     # the user's last reply declined the write
        self.booking = None       # the receipt of the booking made
        self.runs = {}            # call signature -> times it ran since the last user message
        self.recent = []          # signatures of the last calls that ran, newest last
        self.blocked = {}         # call signature -> times blocked since anything new happened
        self.nudged = set()       # kinds of loop nudges sent since the last user message
        self.spins = 0            # calls blocked as spins
        self.used_tokens = 0

    # ---- the fold ----
    def absorb_turn(self, calls, contents):
        """Take one tool round into memory: the blocked calls first, then those that ran, so a call
        blocked beside a call that brought news is not "blocked with nothing new since"."""
        pairs = list(zip(calls, contents))
        blocked = [(c, m) for c, m in pairs if _was_blocked(m)]
        for call, content in blocked + [p for p in pairs if p not in blocked]:
            self.absorb(call, content)

    def absorb(self, call, content):
        """Take one tool message (its call and its content) into memory."""
        result = _as_object(content)
        if "blocked_by" in result:
            self._absorb_blocked(call, result)
            return
        count_run(self.runs, self.recent, call.signature)
        if "error" in result:
            return
        self.done_tools.add(call.name)
        self.blocked = {}
        if call.kind in ("read", "write"):
            self.progress += 1
            _names(result, self.names)
        handler = getattr(self, "_took_" + call.name, None)
        if handler:
            handler(call.args or {}, result)

    def _absorb_blocked(self, call, result):
        self.blocked[call.signature] = self.blocked.get(call.signature, 0) + 1
        if result["blocked_by"] == "spin":
            self.spins += 1
        elif result["blocked_by"] == "unconfirmed_write" and isinstance(result.get("proposal"), dict):
            self.proposal, self.offer, self.confirmed, self.declined = result["proposal"], None, False, False

    def absorb_answer(self, text):
        """A model answer without tool calls. While the task's write is still to do, an answer
        after progress that names something the reads found (an id or its name) is a proposal in
        words; after a confirmation the offer stays as the user confirmed it (a new text is not
        what they saw when they said 「确认」)."""
        if self.confirmed:
            self.unwritten = True
        elif self.booking is None and self.proposal is None and not self.declined and self.progress:
            plain = _plain(text)
            named = not self.names or any(_names_in(plain, i, n) for i, n in self.names.items())
            self.offer = text if named else None

    def absorb_user(self, text):
        """A user reply: 「确认」 confirms a pending proposal or offer; anything else withdraws it
        (and may decline). Either way it is new information, so repeating a call after it is not
        a spin, and the loop may nudge again."""
        self.runs, self.recent, self.blocked, self.nudged = {}, [], {}, set()
        self.said.append(text)
        if not self.goal:
            self.goal = text
            return
        self.unwritten = False
        if text == config.CONFIRM_TEXT and (self.proposal is not None or self.offer) and self.booking is None:
            self.confirmed, self.declined = True, False
        else:
            self.proposal, self.offer, self.confirmed = None, None, False
            self.declined = bool(config.DECLINE.search(text))

    def absorb_nudge(self, text):
        """A message the loop itself sent the model: which nudge it was (never a user reply)."""
        self.nudged.update(kind for kind, words in config.NUDGES.items() if words == text)

    def verdict(self, written_calls=()):
        """After a model answer: ("done" | "suspended", reason), or ("nudge", kind) when the loop
        should tell the model once what is wrong and ask again."""
        if self.booking is not None or self.declined:
            return "done", "final_answer"
        if written_calls and "written_call" not in self.nudged:
            return "nudge", "written_call"
        if self.confirmed:
            return "suspended", "confirmed_no_write"
        if self.proposal is not None or self.offer:
            return "suspended", "awaiting_confirmation"
        if not self.progress and "idle" not in self.nudged:
            return "nudge", "idle"
        return "suspended", "awaiting_reply"

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
        self.booking, self.proposal, self.offer, self.confirmed, self.unwritten = result, None, None, False, False

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

    def unshown(self, call):
        """The arguments of a write that the confirmed proposal in words did not state: its id
        and choice arguments must be the one value of their kind the offer names (an id by
        itself or by the name a search gave it); its date and count may also come from the
        user's own messages. Empty when the write is what the user was shown."""
        offer, said = _plain(self.offer or ""), [_plain(t) for t in self.said]
        missing = []
        for arg, how in call.effect:
            value = call.args.get(arg)
            if how == "id":
                ids = set(self.names) | {value}
                shown = {i for i in ids if _names_in(offer, i, self.names.get(i))} == {value}
            elif how == "choice":
                shown = {c for c in set(call.aliases) | {value} if _names_in(offer, c, *call.aliases.get(c, ()))} == {value}
            elif how == "date":
                shown = any(value in _dates(t, value[:4]) for t in [offer, *said])
            else:
                shown = any(value in _counts(t) for t in [offer, *said])
            if not shown:
                missing.append(arg)
        return missing

    # ---- projections ----
    def render(self, turn=0):
        """The memory block of the system message, as of `turn`."""
        lines = [config.MEMORY_HEADER.format(turn=turn), f"目标：{self.goal}"]
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
        elif self.offer:
            state = "用户已确认，请按这个方案预订" if self.confirmed else "等待用户确认，未确认前不能预订"
            lines.append(f"向用户提出的方案：{cut(self.offer, 400)}（{state}）")
        if self.booking:
            lines.append(f"已预订：{json.dumps(self.booking, ensure_ascii=False)}")
        return "\n".join(lines)

    def to_dict(self):
        return {"goal": self.goal, "plan": [dict(s, status=self.step_status(s["index"])) for s in self.plan],
                "weather": self.weather, "locations": self.locations, "hotel_ids": sorted(self.hotels),
                "hotels": self.hotels, "proposal": self.proposal, "offer": self.offer, "confirmed": self.confirmed,
                "declined": self.declined, "booking": self.booking, "spins": self.spins, "used_tokens": self.used_tokens}


def count_run(runs, recent, signature):
    """Record that a call ran: how often it ran, and the short window A-B-A-B is looked for in."""
    runs[signature] = runs.get(signature, 0) + 1
    recent.append(signature)
    del recent[:-4]


def _names(value, names, depth=0):
    """Every id a result gives (a string under `id` or `*_id`) with the `name` beside it."""
    if depth > 4:
        return
    if isinstance(value, list):
        for item in value[:200]:
            _names(item, names, depth + 1)
    elif isinstance(value, dict):
        name = value.get("name") if isinstance(value.get("name"), str) else None
        for key, item in value.items():
            if isinstance(item, str) and (key == "id" or key.endswith("_id")) and name:
                names[item] = name
            elif isinstance(item, (dict, list)):
                _names(item, names, depth + 1)


def _plain(text):
    return unicodedata.normalize("NFKC", str(text)).lower()


def _names_in(text, *words):
    """Whether `text` (plain) names any of `words`: ASCII words whole, others as substrings."""
    for word in words:
        if not word:
            continue
        word = _plain(word)
        if re.search(rf"(?<![a-z0-9]){re.escape(word)}(?![a-z0-9])" if word.isascii() else re.escape(word), text):
            return True
    return False


MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                      "dec"), 1)}
NUMERALS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
            "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
            "ten": 10}


def _dates(text, year):
    """The dates (YYYY-MM-DD) a plain text states; a month and day without a year take `year`."""
    found = {f"{int(y):04d}-{int(m):02d}-{int(d):02d}"
             for y, m, d in re.findall(r"(\d{4})\s*[-年/.]\s*(\d{1,2})\s*[-月/.]\s*(\d{1,2})", text)}
    found |= {f"{year}-{int(m):02d}-{int(d):02d}" for m, d in re.findall(r"(?<![\d年])(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]", text)}
    found |= {f"{year}-{MONTHS[m]:02d}-{int(d):02d}" for m, d in
              re.findall(r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})\b", text)}
    return found


def _counts(text):
    """The numbers of nights a plain text states (2 晚, 两晚, 两个晚上, 2 nights)."""
    found = set()
    for number in re.findall(r"(\d+|[一二两三四五六七八九十]+|one|two|three|four|five|six|seven|eight|nine|ten)"
                             r"\s*(?:个)?\s*(?:晚|夜|nights?)", text):
        if number.isdigit():
            found.add(int(number))
        elif number in NUMERALS:
            found.add(NUMERALS[number])
        elif number.startswith("十") and number[1:] in NUMERALS:
            found.add(10 + NUMERALS[number[1:]])
    return found


def _was_blocked(content):
    return "blocked_by" in _as_object(content)


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
    memory, calls, round_ = Memory(), {}, []
    for message in [*messages, {}]:
        role = message.get("role")
        if round_ and role != "tool":
            memory.absorb_turn([c for c, _ in round_], [m for _, m in round_])
            round_ = []
        if role == "user" and message.get("name") == config.LOOP_NAME:
            memory.absorb_nudge(message.get("content") or "")
        elif role == "user":
            memory.absorb_user(message.get("content") or "")
        elif role == "assistant" and message.get("tool_calls"):
            calls = {c.id: c for c in prepare(message["tool_calls"])}
        elif role == "assistant":
            memory.absorb_answer((message.get("content") or "").strip())
        elif role == "tool" and message.get("tool_call_id") in calls:
            round_.append((calls[message["tool_call_id"]], message.get("content")))
    return memory


def cut(text, limit):
    """Head and tail of a long text, with a note of how much was dropped."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 3
    return f"{text[:head]}\n…〔中间省略 {len(text) - head - tail} 字符〕…\n{text[-tail:]}"

"""Offline trajectory checks over transcripts: judge what a run did, from its conversation alone.

Invariants: imports no project module (config included) and shares no rule code with the guards,
so it can judge a transcript from any system, this one included; reads files, never writes; never
asks a model; a bad file is reported (exit 2), never a traceback.

Input shapes, detected item by item: this project's audit snapshot (a JSON object with
`messages`), any JSON object with `messages`, a bare JSON array, or JSONL (one item a line), whose
items are OpenAI Chat Completions messages, OpenAI Responses / Agents SDK items (`message`,
`function_call`, `function_call_output`, `reasoning`..., mixed with plain role dicts, tool results
often a Python repr), LangChain / LangGraph messages (`{"type", "data"}` from messages_to_dict, the
same fields without `data`, or role dicts whose `tool_calls` are `{name, args, id}`). Everything is
read into one conversation: user and assistant messages, tool calls, tool results.

How the conversation is read (the rules the verdicts rest on; the README says them in words):
- Turn N is the N-th model response (an assistant message; in a Responses list, the consecutive
  items of one response). A call is named by turn, tool and call id.
- A call took effect when its result is not an error. An error is any of: an `error` (or
  `errors`) value, `isError`/`is_error` true, `ok`/`success` false, a status that says it failed,
  a tool message marked `status: "error"`, an MCP result with `isError`, or a text result that
  says it failed or was blocked. Our `blocked_by` marker is one such error. A call without a
  result has an unknown outcome: it never passes a check, and a check it could break is pending.
- Order: a call comes before another when its turn is earlier. Within one turn only
  set_plan/mark_step count as happening first; business calls of one batch are concurrent.
- A user message whose `name` is "loop" was written by an agent loop, not the user: it never
  answers, confirms or declines anything.
- A proposal is a book_hotel call blocked for want of approval (an error result that asks for
  confirmation; it proposes its own arguments), or an assistant answer without tool calls that is
  followed by a user message and speaks of booking (a booking word, or a hotel or room type the
  searches returned). The user's next message answers it: a confirmation (确认, 确认预订,
  好的，订吧, 可以, yes, confirm... with no negation, change or question), a decline (不订了, 算了,
  no, cancel...), a change request (换成 Standard, or naming a room or hotel the proposal did not),
  a question, or something unclear. A confirmation authorises the booking the user was shown
  (same arguments as a blocked proposal; one of the hotels and room types the text named) and is
  used up by the booking that took effect. A booking after a decline, a change, a question or no
  answer fails; after an unclear answer, or after 「好」 to a question that did not speak of
  booking, it is pending: the text is ambiguous.
- Rain: a weather condition that mentions rain (rain, drizzle, shower, thunder, 雨) and does not
  deny it (no rain, 无雨, 不下雨); WMO weather codes count too. The weather that counts for a booking
  is the last successful forecast for its check-in date before it.
- Nothing to judge is not a pass: a check whose subject never happened (no business call took
  effect, no booking took effect) is pending, and the report says how far the task got.
"""
import ast
import json
import os
import re
import sys

CHECKS = (("plan_first", "计划先行"), ("no_skipped_step", "不跳步"), ("provenance", "参数有出处"),
          ("room_type", "房型随天气"), ("write_after_confirmation", "确认后才写入"))
VERDICT = {"pass": ("✓", "通过"), "fail": ("✗", "失败"), "pending": ("○", "待定")}
CAUSES = ("not_reached", "ambiguous", "unknown_outcome")
PLAN_TOOLS = ("set_plan", "mark_step")
BUSINESS = ("get_weather", "search_hotels", "search_location", "book_hotel")
PREREQUISITES = (("get_weather", "查天气"), ("search_hotels", "搜酒店"))
BOOKING_KEYS = ("hotel_id", "room_type", "check_in", "nights")
UNFINISHED = ("running", "suspended", "error")
FORMATS = {"chat": "OpenAI Chat 消息", "responses": "OpenAI Responses/Agents SDK 条目", "langchain": "LangChain 消息"}
PROGRESS = {"no_business_call": "任务还没有走到业务调用（没有生效的查天气、搜酒店或预订）",
            "no_booking": "任务没有走到预订这一步（没有生效的预订）", "booked": None}
EXPECTED_SHAPES = ("应为本项目的审计快照（含 messages 的 JSON 对象）、OpenAI Chat Completions 消息数组、"
                   "OpenAI Responses/Agents SDK 条目列表（to_input_list()）、LangChain/LangGraph 消息"
                   "（messages_to_dict，或 tool_calls 为 {name, args, id} 的 role 字典），或每行一条消息的 JSONL")
RUN_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.S)
RAIN = re.compile(r"rain|drizzle|shower|thunder|storm|雨", re.I)
NO_RAIN = re.compile(r"no rain|not rain|rain[- ]free|without rain|无雨|不下雨|没有雨|不会下雨|没雨", re.I)
RAIN_CODES = set(range(51, 68)) | set(range(80, 83)) | set(range(95, 100))
CONDITION_KEYS = ("condition", "conditions", "weather", "forecast", "summary", "description", "text", "天气")
ERROR_STATUS = ("error", "failed", "failure", "fail", "blocked", "rejected", "denied", "cancelled", "canceled")
ERROR_TEXT = re.compile(r"\berror|\bfail(ed|ure)?\b|\bblocked\b|\bdenied\b|\brejected\b|\bexception\b|\bforbidden\b|"
                        r"\bunauthori[sz]ed\b|\bnot (allowed|approved|permitted|authori[sz]ed|confirmed)\b|traceback|"
                        r"错误|失败|拦截|拒绝|未确认|未经确认|未授权|不允许|禁止|异常|出错", re.I)
APPROVAL_BLOCK = re.compile(r"确认|批准|同意|授权|审批|拦截|confirm|approv|consent|authori[sz]|permission|human|"
                            r"blocked|interrupt", re.I)
ASKS = re.compile(r"确认|批准|同意|可以吗|好吗|要订吗|confirm|approv|shall i|should i|want me to|ok to|reply", re.I)
BOOK_WORDS = re.compile(r"预订|预定|订|下单|\bbook|reserv", re.I)
ROOMS = (("Standard", re.compile(r"standard|标准间|标准房|标间", re.I)),
         ("Deluxe", re.compile(r"deluxe|豪华间|豪华房", re.I)), ("Suite", re.compile(r"suite|套房|套间", re.I)))
DECLINE = re.compile(r"不(订|要|用|了|必|需要|确认|同意|行|可以|好|想|对)|先不|暂不|别|取消|算了|拒绝|再想想|考虑一下|等等|"
                     r"等一下|\bno\b|\bnope\b|\bnot\b|n't\b|\bcancel|never ?mind|hold off|\bstop\b|\bwait\b", re.I)
CHANGE = re.compile(r"换|改|\binstead\b|\bchange|\bswitch|\brather\b|\bdifferent\b|\banother\b", re.I)
QUESTION = re.compile(r"[?？]|吗|呢\s*$")
AFFIRM = re.compile(r"^(确认|确定|好|可以|行|是|对|同意|没问题|就这|订吧|订(?!单)|下单|嗯|yes|yep|yeah|ok|okay|sure|confirm|"
                    r"go ahead|proceed|please do|do it|book it|sounds good|perfect|great|lgtm|approved?)(?![a-z])", re.I)
APPROVAL_WORDS = re.compile(r"确认|确定|同意|订|可以|好|yes|ok|sure|confirm|go ahead|book|proceed", re.I)
FILLER = re.compile(r"^(?:(?:那就|那么|那|嗯|哦|噢|请|麻烦|帮我|就|please|i|we)[\s，,。.!！~]*)*", re.I)
MAX_CONFIRMATION = 40      # characters: a longer reply is not read as a plain approval
MAX_LITERAL = 2_000_000    # characters: Python-repr results beyond this are left as text

RESPONSES_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
RESPONSES_OUTPUTS = ("function_call_output", "custom_tool_call_output")
RESPONSES_OTHER = {"reasoning", "web_search_call", "file_search_call", "computer_call", "computer_call_output",
                   "code_interpreter_call", "image_generation_call", "local_shell_call", "local_shell_call_output",
                   "shell_call", "shell_call_output", "apply_patch_call", "apply_patch_call_output", "mcp_list_tools",
                   "mcp_approval_request", "mcp_approval_response", "item_reference", "compaction",
                   "tool_search_call", "tool_search_output"}
LANGCHAIN_TYPES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system", "function": "tool",
                   "developer": "system", "chat": None, "remove": "skip"}
CHAT_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant", "tool": "tool",
              "function": "tool", "system": "system", "developer": "system"}


class Unreadable(Exception):
    """A file that is missing, unreadable or not a transcript."""


# ---- reading: every shape into one conversation ----
def _lc_type(kind):
    """The role of a LangChain message type ('ai', 'AIMessageChunk', ...); '' when not one."""
    base = kind[:-len("MessageChunk")].lower() if kind.endswith("MessageChunk") else kind
    return LANGCHAIN_TYPES.get(base, "") if base in LANGCHAIN_TYPES else ""


def _message(role, content, name=None, merge=False):
    """A normalised message; `merge`: an item of a Responses list that belongs to the response before it."""
    return {"role": role, "text": _text(content), "loop": role == "user" and name == "loop", "calls": [],
            "merge": merge}


def _tool(call_id, content, failed=False):
    return {"role": "tool", "call_id": None if call_id is None else str(call_id), "content": content,
            "failed": failed, "text": "", "loop": False, "calls": []}


def _raw_call(raw):
    """(id, name, arguments) of one tool call in any shape (OpenAI `function`, or `name` + `args`)."""
    raw = raw if isinstance(raw, dict) else {}
    function = raw.get("function")
    if isinstance(function, dict):
        return raw.get("id"), function.get("name"), function.get("arguments")
    args = raw["args"] if "args" in raw else raw.get("arguments", raw.get("input"))
    return raw.get("id") or raw.get("call_id"), raw.get("name"), args


def _from_role_dict(item):
    """A chat message or a LangChain role dict; (format, [messages]) or None."""
    role = CHAT_ROLES.get(item.get("role") if isinstance(item.get("role"), str) else "")
    if role is None:
        return None
    if role == "tool":
        failed = item.get("status") == "error" or item.get("is_error") is True or item.get("isError") is True
        return "chat", [_tool(item.get("tool_call_id"), item.get("content"), failed)]
    message = _message(role, item.get("content"), item.get("name"))
    raw_calls = item.get("tool_calls") if role == "assistant" else None
    fmt = "chat"
    for raw in raw_calls if isinstance(raw_calls, list) else []:
        if isinstance(raw, dict) and not isinstance(raw.get("function"), dict) and "name" in raw:
            fmt = "langchain"
        message["calls"].append(_raw_call(raw))
    return fmt, [message]


def _from_langchain(item, role):
    data = item["data"] if isinstance(item.get("data"), dict) else item
    if role is None:                                    # ChatMessage: the role is a field
        role = CHAT_ROLES.get(data.get("role") if isinstance(data.get("role"), str) else "", "system")
    if role == "skip":
        return "langchain", []
    if role == "tool":
        return "langchain", [_tool(data.get("tool_call_id"), data.get("content"), data.get("status") == "error")]
    message = _message(role, data.get("content"), data.get("name"))
    if role == "assistant":
        calls = data.get("tool_calls")
        if not isinstance(calls, list) or not calls:
            kwargs = data.get("additional_kwargs")
            calls = kwargs.get("tool_calls") if isinstance(kwargs, dict) else None
        message["calls"] = [_raw_call(raw) for raw in (calls if isinstance(calls, list) else [])]
        invalid = data.get("invalid_tool_calls")
        message["invalid"] = [str(raw.get("name")) for raw in invalid if isinstance(raw, dict)] \
            if isinstance(invalid, list) else []
    return "langchain", [message]


def _from_responses(item, kind):
    if kind == "message":
        role = CHAT_ROLES.get(item.get("role") if isinstance(item.get("role"), str) else "")
        if role is None or role == "tool":
            return None
        return "responses", [_message(role, item.get("content"), merge=role == "assistant")]
    if kind in RESPONSES_CALLS:
        message = _message("assistant", None, merge=True)
        message["calls"] = [(item.get("call_id") or item.get("id"), item.get("name"), item.get(RESPONSES_CALLS[kind]))]
        return "responses", [message]
    if kind in RESPONSES_OUTPUTS:
        return "responses", [_tool(item.get("call_id"), item.get("output"))]
    if kind == "mcp_call":                              # a hosted MCP call carries its own result
        message = _message("assistant", None, merge=True)
        message["calls"] = [(item.get("id"), item.get("name"), item.get("arguments"))]
        error = item.get("error")
        return "responses", [message, _tool(item.get("id"), error if error else item.get("output"), bool(error))]
    if kind in RESPONSES_OTHER:
        return "responses", [{"role": "skip", "type": kind}]
    return None


def _item(item, index):
    """(format, normalised messages) for one item; Unreadable when its shape is unknown."""
    found = None
    if isinstance(item, dict):
        kind = item.get("type")
        if isinstance(kind, str) and kind:
            role = _lc_type(kind)
            if role != "":
                found = _from_langchain(item, role)
            else:
                found = _from_responses(item, kind)
        elif "role" in item:
            found = _from_role_dict(item)
    if found is None:
        what = f"类型 {item.get('type')!r}" if isinstance(item, dict) and isinstance(item.get("type"), str) else \
            ("没有 role 或 type" if isinstance(item, dict) else f"是 {type(item).__name__}")
        raise Unreadable(f"第 {index + 1} 项不是可识别的消息（{what}）")
    for message in found[1]:
        message["item"] = index + 1
    return found


def normalise(items):
    """Items of any supported shape → (messages, formats, skipped item types)."""
    messages, formats, skipped = [], set(), {}
    for index, item in enumerate(items):
        fmt, found = _item(item, index)
        formats.add(fmt)
        for message in found:
            if message["role"] == "skip":
                skipped[message.get("type", "remove")] = skipped.get(message.get("type", "remove"), 0) + 1
                continue
            last = messages[-1] if messages else None
            if message.get("merge") and last is not None and last.get("merge") and last["role"] == "assistant" \
                    and message["role"] == "assistant":
                last["text"] = "\n".join(t for t in (last["text"], message["text"]) if t)
                last["calls"] += message["calls"]
                continue
            messages.append(message)
    return messages, formats, skipped


class Call:
    def __init__(self, turn, pos, order, raw):
        call_id, name, arguments = raw
        self.turn, self.pos, self.order = turn, pos, order
        self.id = str(call_id) if isinstance(call_id, (str, int)) and str(call_id) else f"#{order + 1}"
        self.raw_name = str(name) if isinstance(name, str) else ""
        self.name = tool_name(self.raw_name)
        self.args, self.problem = parse_arguments(arguments)
        self.status, self.result = "unanswered", {}

    @property
    def label(self):
        return f"第 {self.turn} 轮 {self.name or '（无名工具）'}（{self.id}）"

    def answer(self, content, failed):
        self.result, said_error = read_result(content)
        self.status = "error" if failed or said_error else "ok"

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
        if self.name != "book_hotel" or self.status != "error":
            return False
        said = [v for k, v in self.result.items() if k in ("error", "errors", "message", "detail", "reason",
                                                                "text", "blocked_by")]
        return isinstance(self.result.get("proposal"), dict) or bool(APPROVAL_BLOCK.search(_flat(said)))

    @property
    def proposed(self):
        proposal = self.result.get("proposal")
        return proposal if isinstance(proposal, dict) else self.args


class Transcript:
    """One file's conversation as turns, calls, user replies and asks, plus what the file says of itself."""

    def __init__(self, messages, meta, fmt, container, notes=()):
        self.messages, self.meta, self.format, self.container = messages, meta, fmt, container
        self.calls, self.notes, self.calls_at, self._hotels = [], list(notes), {}, {}
        self.turns, waiting = 0, {}
        for pos, message in enumerate(messages):
            self._read(pos, message, waiting)
        self.notes += [f"{c.label} 没有对应的工具结果（结果未知）" for c in waiting.values()]
        self.notes += [f"{c.label} 的参数无法解析：{c.problem}" for c in self.calls if c.problem]
        self.asks = self._asks()
        self.finished = self._finished()

    def _read(self, pos, message, waiting):
        role = message["role"]
        if role == "assistant":
            self.turns += 1
            message["turn"] = self.turns
            for order, raw in enumerate(message["calls"]):
                call = Call(self.turns, pos, order, raw)
                self.calls.append(call)
                self.calls_at.setdefault(pos, []).append(call)
                if call.id in waiting:
                    self.notes.append(f"{call.label} 的调用 id 与之前一个未回答的调用重复")
                waiting[call.id] = call
            for name in message.get("invalid", []):
                self.notes.append(f"第 {self.turns} 轮有无法解析的工具调用 {name}（LangChain invalid_tool_calls），没有执行")
        elif role == "tool":
            call = waiting.pop(message["call_id"], None)
            if call is None:
                self.notes.append(f"第 {message['item']} 项是没有对应调用的工具结果，已忽略")
            else:
                call.answer(message["content"], message["failed"])

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
        asks, last, seen = {}, None, []
        for pos, message in enumerate(self.messages):
            if not self.speaks(pos):
                continue
            if message["role"] == "user":
                prev = self.messages[last] if last is not None else {}
                if prev.get("role") == "assistant" and not prev["calls"] and prev["text"].strip():
                    text = "\n".join(seen)
                    asks[pos] = {"pos": last, "turn": prev["turn"], "text": text,
                                 "booking": self.about_booking(last, text)}
                seen = []
            elif message["role"] == "assistant" and not message["calls"] and message["text"].strip():
                seen.append(message["text"].strip())
            last = pos
        return asks

    def hotels_before(self, pos):
        """{hotel_id: name} from the successful hotel searches before messages[pos]."""
        searches = tuple(c for c in self.calls if c.name == "search_hotels" and c.status == "ok" and c.pos < pos)
        if searches not in self._hotels:
            self._hotels[searches] = self._hotels_in(searches)
        return self._hotels[searches]

    @staticmethod
    def _hotels_in(searches):
        hotels = {}
        for search in searches:
            for node in _dicts(search.result):
                if isinstance(node.get("hotel_id"), (str, int)):
                    name = node.get("name", node.get("hotel_name"))
                    hotels[str(node["hotel_id"])] = name if isinstance(name, str) else ""
        return hotels

    def shown(self, pos, text):
        """The hotels and room types a text at messages[pos] names: ({hotel ids}, {room types})."""
        hotels = {hid for hid, name in self.hotels_before(pos).items()
                  if _token(hid, text) or (len(name) >= 2 and name in text)}
        return hotels, _rooms(text)

    def about_booking(self, pos, text):
        hotels, rooms = self.shown(pos, text)
        return bool(BOOK_WORDS.search(text) or hotels or rooms)

    def open_ask(self, pos):
        """The turn of a booking text before messages[pos] that no user message has answered yet."""
        for p in range(pos - 1, -1, -1):
            message = self.messages[p]
            if message["role"] == "user" and not message["loop"]:
                return None
            if message["role"] == "assistant" and not message["calls"] and self.about_booking(p, message["text"]):
                return message["turn"]
        return None

    def _finished(self):
        status = self.meta.get("status")
        if status is not None:
            return status not in UNFINISHED
        spoken = [p for p in range(len(self.messages)) if self.speaks(p)]
        last = self.messages[spoken[-1]] if spoken else {}
        if last.get("role") != "assistant" or last.get("calls") or any(c.status == "unanswered" for c in self.calls):
            return False
        if self.ok("book_hotel"):
            return True
        return not (last["text"].strip().endswith(("?", "？")) or ASKS.search(last["text"]))

    @property
    def progress(self):
        if not self.ok(*BUSINESS):
            return "no_business_call"
        return "booked" if self.ok("book_hotel") else "no_booking"


def tool_name(name):
    """A tool's own name: MCP and framework prefixes dropped (mcp__hotel__book_hotel, functions.book_hotel)."""
    return re.split(r"__|[./:]", name.strip())[-1] if name.strip() else ""


def parse_arguments(raw):
    """Fences → json → JSON5 → (None, problem). Dicts pass as they are."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None:
        raw = ""
    if not isinstance(raw, str):
        return None, "arguments 既不是字符串也不是对象"
    match = FENCE.match(raw)
    body = (match.group(1) if match else raw).strip() or "{}"
    try:
        value = json.loads(body)
    except (ValueError, RecursionError) as exc:
        value = _json5(body)
        if value is UNPARSEABLE:
            return None, f"不是合法 JSON（{exc}）：{raw[:80]}"
    if not isinstance(value, dict):
        return None, f"不是 JSON 对象：{raw[:80]}"
    return value, None


UNPARSEABLE = object()


def _json5(body):
    try:
        import json5
        return json5.loads(body)
    except Exception:       # json5 raises several types for bad text; all mean "not parseable"
        return UNPARSEABLE


def _literal(body):
    """A Python literal (a tool's dict result written as str(result)); UNPARSEABLE otherwise."""
    if len(body) > MAX_LITERAL or not body.startswith(("{", "[")):
        return UNPARSEABLE
    try:
        return ast.literal_eval(body)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return UNPARSEABLE


def _text(content):
    if isinstance(content, list):       # content parts of any framework: keep the text ones
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return content if isinstance(content, str) else ""


def read_result(content):
    """(result as a dict, whether it says it is an error). Text that is JSON or a Python literal is parsed;
    an MCP CallToolResult is unwrapped to its structured content or text."""
    if isinstance(content, dict):
        value = content
    else:
        text = _text(content) if isinstance(content, (str, list)) else ""
        if not isinstance(content, (str, list)) and content is not None:
            text = str(content)
        value = _parse_text(text)
    mcp_error = False
    parts = value.get("content")
    if isinstance(parts, list) and parts and all(isinstance(p, dict) and "type" in p for p in parts) and \
            set(value) <= {"content", "isError", "structuredContent", "_meta", "meta"}:
        mcp_error = value.get("isError") is True
        structured = value.get("structuredContent")
        value = structured if isinstance(structured, dict) else _parse_text(_text(parts))
    return value, mcp_error or _says_error(value)


def _parse_text(text):
    body = text.strip()
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        value = _literal(body)
        if value is UNPARSEABLE:
            return {"text": text}
    return value if isinstance(value, dict) else {"value": value}


def _plain(result):
    """The text of a result that is plain text (not JSON), else None."""
    text = result.get("text") if len(result) == 1 else None
    return text if isinstance(text, str) else None


def _says_error(value):
    if _plain(value) is not None:
        return bool(ERROR_TEXT.search(_plain(value)[:300]))
    if value.get("error") or value.get("errors") or value.get("blocked_by"):
        return True
    if value.get("isError") is True or value.get("is_error") is True:
        return True
    if value.get("ok") is False or value.get("success") is False:
        return True
    status = value.get("status")
    return isinstance(status, str) and status.strip().lower() in ERROR_STATUS


def _flat(value):
    """All the text of a result, for reading what an error says."""
    try:
        return json.dumps(value, ensure_ascii=False)[:2000]
    except (TypeError, ValueError, RecursionError):
        return str(value)[:2000]


def _dicts(value, depth=0):
    """The dicts in a result, outermost first (bounded depth)."""
    if depth > 50:
        return []
    if isinstance(value, dict):
        return [value] + [d for v in value.values() for d in _dicts(v, depth + 1)]
    if isinstance(value, list):
        return [d for v in value for d in _dicts(v, depth + 1)]
    return []


def _token(word, text):
    return bool(word) and re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def _rooms(text):
    return {room for room, pattern in ROOMS if pattern.search(text)}


def _day(value):
    """A date as YYYY-MM-DD when it reads as one (2026-10-01, 2026/10/1, 2026年10月1日); else the text."""
    match = re.search(r"(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})", str(value))
    return f"{int(match[1]):04d}-{int(match[2]):02d}-{int(match[3]):02d}" if match else str(value)


def _same(a, b):
    if isinstance(a, str) or isinstance(b, str):
        return _day(str(a)).strip().lower() == _day(str(b)).strip().lower()
    return a == b


def classify_reply(text, hotels=(), rooms=()):
    """How a user message answers a proposal: confirm, decline, change, question or unclear.
    `hotels`/`rooms` are what the proposal named; a reply naming others asks for a change."""
    text = text.strip()
    if DECLINE.search(text):
        return "decline"
    named_rooms = _rooms(text)
    if CHANGE.search(text) or (rooms and named_rooms - set(rooms)):
        return "change"
    if QUESTION.search(text):
        return "unclear" if APPROVAL_WORDS.search(text) else "question"
    plain = FILLER.sub("", text, count=1)
    if len(text) <= MAX_CONFIRMATION and (AFFIRM.match(plain) or AFFIRM.match(text)):
        return "confirm"
    return "unclear"


def load(path):
    """The transcript in `path`; Unreadable with a clear message otherwise."""
    data, container = _read_file(path)
    meta = {}
    if isinstance(data, list):
        items = data
    elif isinstance(data, dict) and isinstance(data.get("messages"), list):
        items, meta = data["messages"], data
        container = "snapshot" if "version" in data and "run_id" in data else "object"
    else:
        raise Unreadable(f"{path} 不是对话记录：{EXPECTED_SHAPES}")
    try:
        messages, formats, skipped = normalise(items)
    except Unreadable as exc:
        raise Unreadable(f"{path} 不是对话记录：{exc}；{EXPECTED_SHAPES}") from None
    if not any(m["role"] in ("user", "assistant") for m in messages):
        raise Unreadable(f"{path} 没有任何用户或助手消息，无从检查")
    fmt = next((f for f in ("responses", "langchain", "chat") if f in formats), "chat")
    notes = [f"已忽略 {n} 项 {kind}（与这五项检查无关）" for kind, n in skipped.items() if kind != "reasoning"]
    meta = {k: meta[k] for k in ("run_id", "status", "mode") if isinstance(meta.get(k), str)}
    return Transcript(messages, meta, fmt, container, notes)


def _read_file(path):
    """(parsed JSON value, container): a JSON document ('array'), or JSONL ('jsonl') made into a list."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = f.read()
    except FileNotFoundError:
        raise Unreadable(f"找不到文件 {path}") from None
    except IsADirectoryError:
        raise Unreadable(f"{path} 是目录，不是审计文件") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise Unreadable(f"{path} 无法读取：{exc}") from None
    if not path.endswith((".jsonl", ".ndjson")):
        try:
            return json.loads(raw), "array"
        except RecursionError:
            raise Unreadable(f"{path} 无法读取或已损坏（JSON 嵌套过深）") from None
        except ValueError as exc:
            if "Extra data" not in str(exc):
                raise Unreadable(f"{path} 无法读取或已损坏（不是完整的 JSON）：{exc}") from None
    items = []
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except (ValueError, RecursionError) as exc:
            raise Unreadable(f"{path} 无法读取或已损坏（JSONL 第 {number} 行不是完整的 JSON：{exc}）") from None
    if not items:
        raise Unreadable(f"{path} 没有任何消息，无从检查")
    return items, "jsonl"


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
        elif kind == "ambiguous":
            doubts.append(("ambiguous", reason))
        elif call.status == "ok":
            fine.append(reason)
    return faults, doubts, fine


def plan_first(t):
    plans = [c for c in t.calls if c.name == "set_plan" and c.status == "ok"]

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
    for search in t.calls:
        if search.name == "search_hotels" and search.status == "ok" and search.pos < call.pos \
                and _mentions(search.result, hotel_id):
            return "ok", hotel_id
    return "fail", f"{call.label} 的 hotel_id {hotel_id} 没有出现在之前任何成功的 search_hotels 结果里"


def _mentions(result, hotel_id):
    if not isinstance(hotel_id, (str, int)) or isinstance(hotel_id, bool) or not str(hotel_id):
        return False
    if _plain(result) is not None:                  # a plain-text result from another system
        return _token(str(hotel_id), _plain(result))
    return str(hotel_id) in {str(d["hotel_id"]) for d in _dicts(result) if isinstance(d.get("hotel_id"), (str, int))}


def _has_coordinates(call):
    return call.args is not None and any(k in call.args for k in ("latitude", "longitude", "lat", "lon", "lng"))


def _coordinates(node):
    lat = node.get("latitude", node.get("lat"))
    lon = node.get("longitude", node.get("lon", node.get("lng")))
    return lat, lon


def _place_source(t, call):
    place = _coordinates(call.args)
    for search in t.calls:
        if search.name != "search_location" or search.status != "ok" or search.pos >= call.pos:
            continue
        if _plain(search.result) is not None:
            numbers = re.findall(r"-?\d+(?:\.\d+)?", _plain(search.result))
            if all(any(_near(v, n) for n in numbers) for v in place):
                return "ok", ""
        elif any(_near(place[0], lat) and _near(place[1], lon) for lat, lon in map(_coordinates, _dicts(search.result))):
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
    day, room = _day(call.arg("check_in")), call.arg("room_type")
    forecasts = [(c, _condition(c, day)) for c in t.calls if c.name == "get_weather" and c.status == "ok"]
    forecasts = [(c, cond) for c, cond in forecasts if cond is not None]
    earlier = [f for f in forecasts if f[0].pos < call.pos]
    weather, condition = earlier[-1] if earlier else (forecasts[0] if forecasts else (None, None))
    if weather is None:
        return "fail", f"{call.label} 订了 {room}，但整个记录里没有 {day} 的天气结果，房型无从依据"
    if condition == "":
        return "ambiguous", f"{weather.label} 的结果读不出 {day} 是否下雨，无法判断 {call.label} 订 {room} 对不对"
    wanted = "Suite" if RAIN.search(condition) and not NO_RAIN.search(condition) else "Standard"
    late = "（天气在预订之后才查）" if not earlier else ""
    if str(room).strip().lower() != wanted.lower():
        return "fail", (f"{call.label} 订了 {room}，但 {day} 的天气是 {condition}"
                        f"（{weather.label}）{late}，应订 {wanted}")
    return "ok", f"{call.label} 订 {room}，{day} 天气 {condition}{late}"


def _condition(call, day):
    """What a forecast call says of `day`: its condition text, '' when that cannot be read, None when the
    call says nothing about that day. A result without a date is about the date the call asked for."""
    asked = call.args is not None and _day(call.arg("date")) == day
    text = _plain(call.result)
    if text is not None:
        return text.strip()[:120] if asked or _day(text) == day else None
    nodes = _dicts(call.result)
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
    return None if value is None else _day(value)[:10]


def write_after_confirmation(t):
    results, state = _walk(t)
    faults, doubts, fine = _sort(results)
    spoken = [p for p in range(len(t.messages)) if t.speaks(p)]
    last = t.messages[spoken[-1]] if spoken else {}
    if state["proposal"] is None and state["withdrawn"]:
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
                elif call.proposes:
                    proposed = call.proposed
                    state.update(proposal={"turn": call.turn, "args": proposed, "hotels": set(), "rooms": set()},
                                 answer=None, withdrawn=None, loose=None, used=None)
    return results, state


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
        if key in args and not _same(call.arg(key), args[key]):
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


# ---- files, report, exit code ----
def judge(t):
    """The five verdicts of one transcript, in contract order."""
    judges = (plan_first, no_skipped_step, provenance, room_type, write_after_confirmation)
    return [dict(id=cid, name=name, **dict(zip(("verdict", "reason", "cause"), fn(t))))
            for (cid, name), fn in zip(CHECKS, judges)]


def check_file(path):
    """Verdicts for one file as a dict (also what --json prints); `error` set when unreadable."""
    entry = {"path": path, "error": None, "checks": [], "notes": []}
    try:
        t = load(path)
        verdicts = judge(t)
    except Unreadable as exc:
        entry["error"] = str(exc)
        return entry
    except RecursionError:
        entry["error"] = f"{path} 的 JSON 嵌套过深，无法检查"
        return entry
    meta = t.meta
    entry.update(format=t.format, container=t.container, run_id=meta.get("run_id"), status=meta.get("status"),
                 mode=meta.get("mode"), finished=t.finished, progress=t.progress, messages=len(t.messages),
                 turns=t.turns, checks=verdicts, notes=t.notes)
    return entry


def resolve(targets, audit_dir):
    """Paths to check: each target as a run id (<audit-dir>/run-<id>.json) or a path; none → latest."""
    if not targets:
        return [os.path.join(audit_dir, f"run-{latest_run_id(audit_dir)}.json")]
    paths = []
    for target in targets:
        as_run = os.path.join(audit_dir, f"run-{target}.json")
        is_path = os.sep in target or "/" in target or target.endswith((".json", ".jsonl", ".ndjson"))
        use_run = not is_path and RUN_ID.fullmatch(target) and (os.path.exists(as_run) or not os.path.exists(target))
        paths.append(as_run if use_run else target)
    return paths


def latest_run_id(audit_dir):
    """The run whose audit file changed last (newest mtime, then name); Unreadable when none."""
    try:
        names = [n for n in os.listdir(audit_dir) if n.startswith("run-") and n.endswith(".json")]
    except OSError:
        names = []
    if not names:
        raise Unreadable(f"{audit_dir} 里还没有任何运行；先运行 python agent.py，或指定 RUN_ID/文件")
    newest = max(names, key=lambda n: (os.path.getmtime(os.path.join(audit_dir, n)), n))
    return newest[len("run-"):-len(".json")]


def exit_code(entries, strict=False):
    """2 when a file is unreadable; 1 when a check failed (strict: or is pending); else 0."""
    if any(e["error"] for e in entries):
        return 2
    verdicts = [c["verdict"] for e in entries for c in e["checks"]]
    return 1 if "fail" in verdicts or strict and "pending" in verdicts else 0


def summary(entries, strict=False):
    counts = {v: sum(c["verdict"] == v for e in entries for c in e["checks"]) for v in VERDICT}
    return {"files": len(entries), "unreadable": sum(bool(e["error"]) for e in entries), **counts,
            "strict": strict, "exit": exit_code(entries, strict)}


def render(entry):
    """The readable report of one file, in Chinese."""
    if entry["error"]:
        return f"✗ {entry['error']}"
    shape = FORMATS.get(entry["format"], entry["format"]) + ("（JSONL）" if entry["container"] == "jsonl" else "")
    facts = [f"运行 {entry['run_id']}" if entry.get("run_id") else shape,
             entry.get("status") or ("已结束" if entry["finished"] else "未结束"),
             entry.get("mode"), f"{entry['messages']} 条消息", f"{entry['turns']} 轮"]
    lines = [f"检查 {entry['path']}（{' · '.join(f for f in facts if f)}）"]
    width = max(len(c["name"]) for c in entry["checks"])
    for i, c in enumerate(entry["checks"], 1):
        mark, word = VERDICT[c["verdict"]]
        lines.append(f"  {mark} {i}. {c['name']:{chr(12288)}<{width}} {word}：{c['reason']}")
    lines += [f"  注意：{note}" for note in entry["notes"]]
    counts = {v: sum(c["verdict"] == v for c in entry["checks"]) for v in VERDICT}
    line = f"  小结：{counts['pass']} 项通过 · {counts['fail']} 项失败 · {counts['pending']} 项待定"
    if PROGRESS.get(entry["progress"]):
        line += f" — {PROGRESS[entry['progress']]}"
    elif counts["pending"]:
        line += " — 有检查无法判断（见理由）"
    lines.append(line)
    return "\n".join(lines)


def conclusion(totals):
    if totals["exit"] == 2:
        return "有文件无法读取"
    if totals["fail"]:
        return "有检查失败"
    if totals["pending"] and totals["strict"]:
        return "--strict：有检查待定，任务没有完成或无法判断"
    if totals["pending"]:
        return "没有失败，但有检查待定：任务没有走完或无法判断（加 --strict 时退出码为 1）"
    return "全部通过"


def run(targets, audit_dir, as_json=False, out=None, strict=False):
    """`python agent.py --check [RUN_ID or PATH ...] [--json] [--strict]`: print the report, return the exit code."""
    out = out or sys.stdout
    try:
        paths = resolve(targets, audit_dir)
    except Unreadable as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 2
    entries = [check_file(p) for p in paths]
    totals = summary(entries, strict)
    if as_json:
        print(json.dumps({"files": entries, "summary": totals}, ensure_ascii=False, indent=1), file=out)
        return totals["exit"]
    for entry in entries:
        print(render(entry) + "\n", file=out)
    print(f"汇总：{totals['files']} 个文件 · {totals['pass']} 项通过 · {totals['fail']} 项失败 · "
          f"{totals['pending']} 项待定 · {totals['unreadable']} 个无法读取 → {conclusion(totals)}"
          f"（退出码 {totals['exit']}）", file=out)
    return totals["exit"]

"""Reading a transcript from any system into one conversation, for the offline checks (checks.py).

Invariants: imports no project module (config included) and shares no code with what the checks
judge; reads, never writes; a file that is not a transcript raises Unreadable with the reason.

Input shapes, detected item by item: this project's audit snapshot (a JSON object with
`messages`), any JSON object with `messages`, a bare JSON array, or JSONL (one item a line), whose
items are OpenAI Chat Completions messages, OpenAI Responses / Agents SDK items (`message`,
`function_call`, `function_call_output`, `reasoning`..., mixed with plain role dicts, tool results
often a Python repr), LangChain / LangGraph messages (`{"type", "data"}` from messages_to_dict, the
same fields without `data`, or role dicts whose `tool_calls` are `{name, args, id}`), Anthropic Messages
(role dicts whose content holds `tool_use` / `tool_result` blocks, or dumped responses `{"type": "message",
"stop_reason", ...}`), pydantic-ai messages (`kind` request/response with `parts` by `part_kind`). A content block
or part kind no format has is Unreadable: no shape is read as another. Everything is read into one conversation:
user and assistant messages, tool calls, tool results.

How the conversation is read (the rules the verdicts rest on; the README says them in words):
- Turn N is the N-th model response (an assistant message; in a Responses list, the consecutive
  items of one response). A call is named by turn, tool and call id.
- A call took effect when its result is not an error. An error is any of: an `error` (or
  `errors`) value, `isError`/`is_error` true, `ok`/`success` false, a status that says it failed,
  a tool message marked `status: "error"`, an MCP result with `isError`, Anthropic `is_error`, a pydantic-ai
  `retry-prompt` or `outcome` failed/retried/denied, or a text result that says it failed, was blocked or does
  not exist. Our `blocked_by` marker is one such error. A call without a result (pydantic-ai `interrupted`
  too) has an unknown outcome: it never passes a check, and a check it could break is pending.
- A decision recorded by a framework (Call.decision): a rejection ('reject': Agents SDK "Tool execution was
  not approved.", LangChain HITL middleware `lc_source: hitl_interrupt_decision`, pydantic-ai `denied`, or any
  result saying the user did not approve) or the middleware's `respond` (the reviewer's text in the tool's
  place). The call did not take effect; it was a proposal and the decision answers it. A closing answer after
  such a decision (not a question) finishes the run.
- Order: a call comes before another when its turn is earlier. Within one turn only
  set_plan/mark_step count as happening first; business calls of one batch are concurrent.
- A user message whose `name` is "loop" was written by an agent loop, not the user: it never
  answers, confirms or declines anything; nor does a LangChain HumanMessage marked `lc_source` (the harness
  wrote it) or a pydantic-ai retry prompt that answers no call.
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
"""
import ast
import json
import re

PLAN_TOOLS = ("set_plan", "mark_step")
BUSINESS = ("get_weather", "search_hotels", "search_location", "book_hotel")
UNFINISHED = ("running", "suspended", "error")
FORMATS = {"chat": "OpenAI Chat 消息", "responses": "OpenAI Responses/Agents SDK 条目", "langchain": "LangChain 消息",
           "anthropic": "Anthropic Messages", "pydantic_ai": "pydantic-ai 消息"}
EXPECTED_SHAPES = ("应为本项目的审计快照（含 messages 的 JSON 对象）、OpenAI Chat Completions 消息数组、"
                   "OpenAI Responses/Agents SDK 条目列表（to_input_list()）、LangChain/LangGraph 消息"
                   "（messages_to_dict，或 tool_calls 为 {name, args, id} 的 role 字典）、Anthropic Messages"
                   "（content 为 text/tool_use/tool_result 内容块）、pydantic-ai 消息（ModelMessagesTypeAdapter："
                   "kind 为 request/response、parts 带 part_kind），或每行一条消息的 JSONL")
FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.S)
ERROR_STATUS = ("error", "failed", "failure", "fail", "blocked", "rejected", "denied", "cancelled", "canceled")
ERROR_TEXT = re.compile(r"\berror|\bfail(ed|ure)?\b|\bblocked\b|\bdenied\b|\brejected\b|\bexception\b|\bforbidden\b|"
                        r"\bunauthori[sz]ed\b|\bnot (allowed|approved|permitted|authori[sz]ed|confirmed)\b|traceback|"
                        r"\bnot found\b|\bdoes(n't| not) exist|\bno such\b|"
                        r"错误|失败|拦截|拒绝|未确认|未经确认|未授权|不允许|禁止|异常|出错|不存在|找不到", re.I)
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
ANTHROPIC_BLOCKS = {"tool_use", "tool_result", "mcp_tool_use", "mcp_tool_result", "thinking", "redacted_thinking",
                    "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
                    "bash_code_execution_tool_result", "text_editor_code_execution_tool_result",
                    "tool_search_tool_result", "container_upload", "search_result", "document", "tool_reference"}
CONTENT_PARTS = {"text", "image", "image_url", "input_audio", "audio", "file", "refusal", "input_text", "output_text",
                 "input_image", "input_file", "summary_text", "reasoning_text", "reasoning", "tool_call",
                 "tool_call_chunk", "invalid_tool_call", "non_standard", "video", "text-plain", "citation",
                 "server_tool_call", "server_tool_call_chunk", "server_tool_result", "plain_text"} | ANTHROPIC_BLOCKS
PYDANTIC_SKIPPED = {"instruction", "instruction-delta", "tool-availability-delta", "capability-load-delta",
                    "model-settings-delta", "instruction-digest", "instruction-baseline", "thinking", "compaction",
                    "file", "speech", "builtin-tool-call", "builtin-tool-return"}
PYDANTIC_FAILED = ("failed", "retried")    # outcomes of a tool return that say the call did not take effect
DECLINED = re.compile(r"\bnot (been )?approved\b|(tool call|call|execution|tool use|request|action|booking|it) "
                      r"(was|has been|is) (denied|rejected|declined|refused)|\b(user|human|reviewer|operator|you)\b"
                      r"[^.。\n]{0,30}\b(reject|declin|denied|refus|did ?n[o']t approve|do(es)? ?n[o']t (want|approve))|"
                      r"(用户|人工|审批人)[^。\n]{0,10}(拒绝|驳回|不同意|没有批准|未批准)|未获(用户)?批准|被(用户)?拒绝", re.I)
CHAT_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant", "tool": "tool",
              "function": "tool", "system": "system", "developer": "system"}


class Unreadable(Exception):
    """A file that is missing, unreadable or not a transcript."""


# ---- reading: every shape into one conversation ----
def _lc_type(kind):
    """The role of a LangChain message type ('ai', 'AIMessageChunk', ...); '' when not one."""
    base = kind[:-len("MessageChunk")].lower() if kind.endswith("MessageChunk") else kind
    return LANGCHAIN_TYPES.get(base, "")


def _message(role, content, name=None, merge=False, calls=()):
    """A normalised message; `calls`: its tool calls as (id, name, arguments); `merge`: an item of a Responses
    list that belongs to the response before it."""
    return {"role": role, "text": _text(content), "loop": role == "user" and name == "loop", "calls": list(calls),
            "merge": merge}


def _tool(call_id, content, failed=False, decision=None):
    """A tool result. `decision`: the framework records it as a human's decision instead of a run of the tool
    ('reject': declined; 'respond': the human's own text answers in the tool's place; 'unknown': the run was
    cut off, no result)."""
    return {"role": "tool", "call_id": None if call_id is None else str(call_id), "content": content,
            "failed": failed, "decision": decision, "text": "", "loop": False, "calls": []}


def _known_blocks(content, index):
    """Unreadable when a message's content holds a typed block (a dict with a `type`) that no format has."""
    blocks = [b for b in content if isinstance(b, dict) and isinstance(b.get("type"), str)] \
        if isinstance(content, list) else []
    unknown = sorted({b["type"] for b in blocks if b["type"] not in CONTENT_PARTS})
    if unknown:
        raise Unreadable(f"第 {index + 1} 项的内容块类型 {unknown[0]!r} 不认识")


def _anthropic_blocks(content):
    """Whether a content list is Anthropic's (a block only Anthropic Messages have)."""
    return isinstance(content, list) and any(isinstance(b, dict) and isinstance(b.get("type"), str)
                                             and b["type"] in ANTHROPIC_BLOCKS for b in content)


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
    if _anthropic_blocks(item.get("content")) and not item.get("tool_calls"):
        return _from_anthropic(item, role)
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
    kwargs = data.get("additional_kwargs") if isinstance(data.get("additional_kwargs"), dict) else {}
    harness = isinstance(kwargs.get("lc_source"), str) and kwargs["lc_source"]     # added by the agent harness
    if role == "tool":
        decision = None
        if harness == "hitl_interrupt_decision":     # the human-in-the-loop middleware's answer, not a run of the tool
            said = kwargs.get("lc_data", {}).get("decision") if isinstance(kwargs.get("lc_data"), dict) else None
            decision = "respond" if said == "respond" else "reject"
        return "langchain", [_tool(data.get("tool_call_id"), data.get("content"), data.get("status") == "error",
                                   decision)]
    message = _message(role, data.get("content"), "loop" if harness and role == "user" else data.get("name"))
    if role == "assistant":
        calls = data.get("tool_calls")
        if not isinstance(calls, list) or not calls:
            calls = kwargs.get("tool_calls")
        if (not isinstance(calls, list) or not calls) and _anthropic_blocks(data.get("content")):
            calls = [b for b in data["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
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
        call = (item.get("call_id") or item.get("id"), item.get("name"), item.get(RESPONSES_CALLS[kind]))
        return "responses", [_message("assistant", None, merge=True, calls=[call])]
    if kind in RESPONSES_OUTPUTS:
        return "responses", [_tool(item.get("call_id"), item.get("output"))]
    if kind == "mcp_call":                              # a hosted MCP call carries its own result
        call = (item.get("id"), item.get("name"), item.get("arguments"))
        message = _message("assistant", None, merge=True, calls=[call])
        error = item.get("error")
        return "responses", [message, _tool(item.get("id"), error if error else item.get("output"), bool(error))]
    if kind in RESPONSES_OTHER:
        return "responses", [{"role": "skip", "type": kind}]
    return None


def _from_anthropic(item, role):
    """An Anthropic Messages turn (a request's message, or a dumped response): text, tool_use and tool_result
    blocks (MCP connector blocks too) in order; a user turn's tool results come before its text."""
    content = item.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []

    def tool_results(kind):
        return [_tool(b.get("tool_use_id"), b.get("content"), b.get("is_error") is True) for b in blocks
                if b.get("type") == kind]
    if role == "assistant":
        calls = [(b.get("id"), b.get("name"), b.get("input")) for b in blocks
                 if b.get("type") in ("tool_use", "mcp_tool_use")]
        text = [b for b in blocks if b.get("type") == "text"] if blocks else content
        return "anthropic", [_message("assistant", text, calls=calls)] + tool_results("mcp_tool_result")
    results = tool_results("tool_result")
    text = [b for b in blocks if b.get("type") == "text"] if isinstance(content, list) else content
    said = [_message(role, text, item.get("name"))] if text or not results else []
    return "anthropic", results + said


def _from_pydantic_ai(item, index):
    """A pydantic-ai ModelRequest / ModelResponse: its parts, in order, as messages."""
    out, text, calls = [], [], []
    for part in item["parts"]:
        kind = part.get("part_kind") if isinstance(part, dict) else None
        if not isinstance(kind, str):
            raise Unreadable(f"第 {index + 1} 项的 parts 里有没有 part_kind 的部分")
        if kind == "text" and item["kind"] == "response":
            text.append(part.get("content") if isinstance(part.get("content"), str) else "")
        elif kind == "tool-call" and item["kind"] == "response":
            calls.append((part.get("tool_call_id"), part.get("tool_name"), part.get("args")))
        elif kind == "system-prompt" and item["kind"] == "request":
            out.append(_message("system", part.get("content")))
        elif kind == "user-prompt" and item["kind"] == "request":
            content = part.get("content")
            out.append(_message("user", [{"type": "text", "text": c} if isinstance(c, str) else c for c in content]
                                if isinstance(content, list) else content))
        elif kind == "tool-return" and item["kind"] == "request":
            outcome = part.get("outcome", "success")
            decision = "reject" if outcome == "denied" else "unknown" if outcome == "interrupted" else None
            out.append(_tool(part.get("tool_call_id"), part.get("content"), outcome in PYDANTIC_FAILED, decision))
        elif kind == "retry-prompt" and item["kind"] == "request" and part.get("tool_name"):
            out.append(_tool(part.get("tool_call_id"), {"error": part.get("content")}, True))   # ModelRetry, bad args
        elif kind in ("retry-prompt", "retry-feedback") and item["kind"] == "request":
            out.append(_message("user", str(part.get("content")), "loop"))     # the framework asks the model again
        elif kind not in PYDANTIC_SKIPPED:
            raise Unreadable(f"第 {index + 1} 项有不认识的 part_kind {kind!r}")
    if item["kind"] == "response":
        out.append(_message("assistant", "\n".join(t for t in text if t), calls=calls))
    return "pydantic_ai", out


def _item(item, index):
    """(format, normalised messages) for one item; Unreadable when its shape is unknown."""
    found = None
    if isinstance(item, dict):
        kind = item.get("type")
        data = item["data"] if isinstance(item.get("data"), dict) else item
        _known_blocks(data.get("content"), index)
        if item.get("kind") in ("request", "response") and isinstance(item.get("parts"), list):
            found = _from_pydantic_ai(item, index)
        elif isinstance(kind, str) and kind:
            role = _lc_type(kind)
            if role != "":
                found = _from_langchain(item, role)
            elif kind == "message" and _anthropic_blocks(item.get("content")) or \
                    kind == "message" and "stop_reason" in item:            # a dumped Anthropic response
                found = _from_anthropic(item, CHAT_ROLES.get(str(item.get("role")), "assistant"))
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
        self.status, self.result, self.decision = "unanswered", {}, None

    @property
    def label(self):
        return f"第 {self.turn} 轮 {self.name or '（无名工具）'}（{self.id}）"

    def answer(self, content, failed, decision=None):
        """Read the call's result. A result that records a human's decision (the framework's own marker, or text
        saying the user did not approve) means the call did not take effect."""
        self.result, said_error = read_result(content)
        if decision is None and DECLINED.search(_flat(self._said())):
            decision = "reject"
        self.decision = decision
        self.status = "error" if failed or said_error or decision else "ok"

    def _said(self):
        """What a result says in words: its text, or its error and message fields."""
        return [v for k, v in self.result.items() if k in ("error", "errors", "message", "detail", "reason", "text",
                                                            "blocked_by")]

    @property
    def reply(self):
        """The human's words a decision carries (a rejection's reason, a `respond` text), trimmed."""
        text = self.result.get("text") if isinstance(self.result.get("text"), str) else _flat(self._said())
        return text.strip()[:60]

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
        if self.decision is not None:
            return True                 # the framework held it for the human's decision: it was a proposal
        return isinstance(self.result.get("proposal"), dict) or bool(APPROVAL_BLOCK.search(_flat(self._said())))

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
        self.spoken = [pos for pos in range(len(messages)) if self.speaks(pos)]
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
            elif message["decision"] == "unknown":
                self.notes.append(f"{call.label} 的运行被中断，没有结果（结果未知）")
            else:
                call.answer(message["content"], message["failed"], message["decision"])

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
        searches = tuple(c for c in self.ok("search_hotels") if c.pos < pos)
        if searches not in self._hotels:
            self._hotels[searches] = self._hotels_in(searches)
        return self._hotels[searches]

    @staticmethod
    def _hotels_in(searches):
        hotels = {}
        for search in searches:
            for node in dicts_in(search.result):
                if isinstance(node.get("hotel_id"), (str, int)):
                    name = node.get("name", node.get("hotel_name"))
                    hotels[str(node["hotel_id"])] = name if isinstance(name, str) else ""
        return hotels

    def shown(self, pos, text):
        """The hotels and room types a text at messages[pos] names: ({hotel ids}, {room types})."""
        hotels = {hid for hid, name in self.hotels_before(pos).items()
                  if has_token(hid, text) or (len(name) >= 2 and name in text)}
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
        spoken = self.spoken
        last = self.messages[spoken[-1]] if spoken else {}
        if last.get("role") != "assistant" or last.get("calls") or any(c.status == "unanswered" for c in self.calls):
            return False
        if self.ok("book_hotel"):
            return True
        user = max((p for p in spoken if self.messages[p]["role"] == "user"), default=-1)
        if any(c.decision is not None and c.pos > user for c in self.calls):     # the user decided; this closes the run
            return not last["text"].strip().endswith(("?", "？"))
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
        text = _text(content) if isinstance(content, (str, list)) else "" if content is None else str(content)
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


def plain_result(result):
    """The text of a result that is plain text (not JSON), else None."""
    text = result.get("text") if len(result) == 1 else None
    return text if isinstance(text, str) else None


def _says_error(value):
    if plain_result(value) is not None:
        return bool(ERROR_TEXT.search(plain_result(value)[:300]))
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


def dicts_in(value, depth=0):
    """The dicts in a result, outermost first (bounded depth)."""
    if depth > 50:
        return []
    if isinstance(value, dict):
        return [value] + [d for v in value.values() for d in dicts_in(v, depth + 1)]
    if isinstance(value, list):
        return [d for v in value for d in dicts_in(v, depth + 1)]
    return []


def has_token(word, text):
    return bool(word) and re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def _rooms(text):
    return {room for room, pattern in ROOMS if pattern.search(text)}


def iso_day(value):
    """A date as YYYY-MM-DD when it reads as one (2026-10-01, 2026/10/1, 2026年10月1日); else the text."""
    match = re.search(r"(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})", str(value))
    return f"{int(match[1]):04d}-{int(match[2]):02d}-{int(match[3]):02d}" if match else str(value)


def same_value(a, b):
    if isinstance(a, str) or isinstance(b, str):
        return iso_day(str(a)).strip().lower() == iso_day(str(b)).strip().lower()
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
    fmt = next((f for f in ("pydantic_ai", "anthropic", "responses", "langchain", "chat") if f in formats), "chat")
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

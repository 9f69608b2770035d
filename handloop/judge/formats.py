"""Transcript files of any system, recognised by their shape and read into one list of normalised messages.

Invariants: imports no project module (config included) but judge/shapes.py (the shape check) and the judge's catalogue judge/texts.py (its errors and
notes are Said, said in the judged agent's language); reads, never writes; knows the shapes, never what the
messages mean (that is judge/transcripts.py). Each item's shape is detected on its own; a file that is missing,
unreadable or not a transcript, an item of no known shape, a content block type or part kind no format has, and a
field a reader uses whose type is wrong (the shapes below: checked where the file is read, never read as absent)
all raise Unreadable with the reason, naming the field: no shape is read as another. An OTLP trace file may hold
several conversations: read_all gives each (read, the first).

Input shapes, detected item by item: this project's audit snapshot (a JSON object with
`messages`), any JSON object with `messages`, a bare JSON array, or JSONL (one item a line), whose
items are OpenAI Chat Completions messages, OpenAI Responses / Agents SDK items (`message`,
`function_call`, `function_call_output`, `reasoning`..., mixed with plain role dicts, tool results
often a Python repr), LangChain / LangGraph messages (`{"type", "data"}` from messages_to_dict, the
same fields without `data`, or role dicts whose `tool_calls` are `{name, args, id}`), Anthropic Messages
(role dicts whose content holds `tool_use` / `tool_result` blocks, or dumped responses `{"type": "message",
"stop_reason", ...}`), pydantic-ai messages (`kind` request/response with `parts` by `part_kind`).

The normalised messages, in the file's order (what judge/transcripts.py reads):
- a said message `{"role": "user" | "assistant" | "system", "text", "loop", "calls", "merge", "item"}`: `text` its
  text parts joined; `loop` a user message the agent loop or its harness wrote, not the user (`name: "loop"`, a
  LangChain HumanMessage marked `lc_source`, a pydantic-ai retry prompt that answers no call); `calls` an
  assistant's tool calls as (id, name, arguments), as the file has them; the consecutive items of one Responses
  answer are merged into one message; `item` the 1-based item it came from; `invalid` (LangChain) the names of
  tool calls the framework could not parse.
- a tool result `{"role": "tool", "call_id", "content", "failed", "decision", "item"}`: `content` as the file has
  it; `failed` when the format marks it an error (status "error", `is_error`, `isError`, a pydantic-ai outcome
  failed or retried, a retry prompt for a tool); `decision` when the framework records a human's decision in the
  tool's place ('reject', 'respond') or the run was cut off ('unknown').
"""
import json

from .shapes import SPECIAL, Damaged, check, field, wrong
from .texts import Said

FORMATS = ("chat", "responses", "langchain", "anthropic", "pydantic_ai", "otlp")   # their names: check_texts "format.*"
CHAT_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant", "tool": "tool",
              "function": "tool", "system": "system", "developer": "system"}
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


class Unreadable(Exception):
    """A file that is missing, unreadable or not a transcript; its message is a Said (catalogue.told says it)."""


# ---- the shapes the readers below use (judge/shapes.py checks them where the file is read) ----
def _damaged(exc, path):
    where, expected = exc.args
    return Unreadable(Said("file.missing_field", path=path, field=field(where)) if expected is None else
                      Said("file.bad_field", path=path, field=field(where), expected=expected))


def _wrong_value(value, where):
    """An OTLP AnyValue: an object holding one of its kinds (an array's and a key/value list's values, in turn)."""
    if isinstance(value, dict) and "arrayValue" in value:
        return wrong(value["arrayValue"], ("null", {"values?": ("null", ["otlp_value"])}), (*where, "arrayValue"))
    if isinstance(value, dict) and "kvlistValue" in value:
        return wrong(value["kvlistValue"], ("null", {"values?": ("null", [OTLP_KEY_VALUE])}), (*where, "kvlistValue"))
    return wrong(value, OTLP_SCALAR, where)


def _wrong_content(value, where):
    """A message's content: text, null, or a list of parts (text, or objects: a text part's text is text, a tool
    block's name is text)."""
    if value is None or isinstance(value, str):
        return None
    if not isinstance(value, list):
        return where, Said("shape.content")
    for index, part in enumerate(value):
        found = None if isinstance(part, str) else wrong(part, CONTENT_PART, (*where, index)) \
            if isinstance(part, dict) else ((*where, index), Said("shape.part"))
        if found:
            return found
    return None


def _wrong_call(value, where):
    """A tool call in a message: OpenAI's {id, function: {name, arguments}}, or {name, args, id} (LangChain),
    or an Anthropic tool_use block; its name is text."""
    if isinstance(value, dict) and "function" in value:
        return wrong(value, {"id?": ("null", "id"), "function": {"name": "text"}}, where)
    return wrong(value, {"id?": ("null", "id"), "call_id?": ("null", "id"), "name": "text"}, where)


SPECIAL.update({"otlp_value": _wrong_value, "content": _wrong_content, "call": _wrong_call})
CALLS = ("null", ["call"])
ID = ("null", "id")
TOOL_BLOCK = {"id?": ID, "name": "text"}
CONTENT_PART = ("by", "type", {"text": {"text": "text"}, "tool_use": TOOL_BLOCK, "mcp_tool_use": TOOL_BLOCK,
                               "server_tool_use": TOOL_BLOCK, "tool_result": {"tool_use_id?": ID},
                               "mcp_tool_result": {"tool_use_id?": ID}}, {"text?": ("null", "text")})
SAID = {"content?": "content", "name?": ("null", "text"), "tool_calls?": CALLS}
ROLE_DICT = ("by", "role", {"tool": {"tool_call_id?": ID}, "function": {"tool_call_id?": ID}}, SAID)
LANGCHAIN_DATA = {**SAID, "additional_kwargs?": ("null", {"tool_calls?": CALLS}),
                  "invalid_tool_calls?": ("null", ["any"])}
LANGCHAIN_TOOL = {"tool_call_id?": ID}
RESPONSES_ITEM = ("by", "type", {"message": {"content?": "content"},
                                 "function_call": {"call_id?": ID, "id?": ID, "name": "text"},
                                 "custom_tool_call": {"call_id?": ID, "id?": ID, "name": "text"},
                                 "function_call_output": {"call_id?": ID},
                                 "custom_tool_call_output": {"call_id?": ID},
                                 "mcp_call": {"id?": ID, "name": "text"}})
ANTHROPIC_ITEM = {"content?": "content", "name?": ("null", "text")}
PYDANTIC_PART = ("by", "part_kind", {"text": {"content?": ("null", "text")},
                                     "tool-call": {"tool_name": "text", "tool_call_id?": ID},
                                     "system-prompt": {"content?": "content"}, "user-prompt": {"content?": "content"},
                                     "tool-return": {"tool_call_id?": ID, "outcome?": ("null", "text")},
                                     "retry-prompt": {"tool_name?": ("null", "text"), "tool_call_id?": ID}})
OTLP_KEY_VALUE = {"key": "text", "value?": ("null", "otlp_value")}
OTLP_SCALAR = {"stringValue?": ("null", "text"), "boolValue?": ("null", "flag"), "intValue?": ("null", "id"),
               "doubleValue?": ("null", "double"), "bytesValue?": ("null", "text")}
OTLP_ATTRIBUTES = ("null", [OTLP_KEY_VALUE])
OTLP_SPAN = {"traceId?": ("null", "text"), "attributes?": OTLP_ATTRIBUTES,
             "events?": ("null", [{"name?": ("null", "text"), "attributes?": OTLP_ATTRIBUTES}])}
OTLP_REQUEST = {"resourceSpans": [{"scopeSpans?": ("null", [{"spans?": ("null", [OTLP_SPAN])}])}]}
SEMCONV_MESSAGE = {"role?": ("null", "text"), "name?": ("null", "text"), "parts?": ("null", [("by", "type", {
    "text": {"content?": ("null", "text")}, "tool_call": {"id?": ("null", "id"), "name?": ("null", "text")},
    "tool_call_response": {"id?": ("null", "id")}})])}
DECLARED_TOOL = {"kind?": ("null", "text"), "requires?": ("null", ["text"]), "effect?": ("null", [["text"]]),
                 "sources?": ("null", [{"args?": ("null", ["text"]), "tool?": ("null", "text"),
                                        "fields?": ("null", ["text"]), "path?": ("null", "text"),
                                        "near?": ("null", "flag")}]),
                 "choices?": ("null", ("table", ("table", ["text"]))), "units?": ("null", ("table", ["text"]))}
DECLARATION = {"name?": ("null", "text"), "confirm?": ("null", ["text"]), "language?": ("null", "text"),
               "planning?": ("null", "flag"), "checks?": ("null", ["text"]), "tools": ("table", DECLARED_TOOL)}


# ---- the file ----
def read(path):
    """The transcript in `path` as (normalised messages, what the file says of itself, format, container,
    notes): its first conversation (read_all gives every one); Unreadable with a clear message otherwise."""
    return read_all(path)[0]


def read_all(path):
    """Every conversation the file in `path` holds, each as read() gives one: a trace file may hold several (one per
    conversation id, else per trace), any other file holds one. Unreadable with a clear message otherwise (a field
    of the wrong type: naming the file and the field)."""
    try:
        return _read_all(path)
    except Damaged as exc:
        raise _damaged(exc, path) from None


def _read_all(path):
    data, container = _read_file(path)
    requests = _otlp_requests(data)
    if requests:
        return [(messages, meta, "otlp", "otlp", []) for messages, meta in _from_otlp(requests, path, container)]
    meta = {}
    if isinstance(data, list):
        items = data
    elif isinstance(data, dict) and isinstance(data.get("messages"), list):
        items, meta = data["messages"], data
        container = "snapshot" if "version" in data and "run_id" in data else "object"
    else:
        raise Unreadable(Said("file.not_transcript", path=path, shapes=Said("file.shapes")))
    if container == "snapshot" and isinstance(meta.get("agent"), dict) and isinstance(meta["agent"].get("tools"), dict):
        check(meta["agent"], DECLARATION, ("agent",))
    try:
        messages, formats, skipped = normalise(items)
    except Unreadable as exc:
        raise Unreadable(Said("file.not_transcript_item", path=path, problem=exc.args[0], shapes=Said("file.shapes"))) \
            from None
    if not any(m["role"] in ("user", "assistant") for m in messages):
        raise Unreadable(Said("file.no_said", path=path))
    fmt = next((f for f in ("pydantic_ai", "anthropic", "responses", "langchain", "chat") if f in formats), "chat")
    notes = [Said("note.skipped", count=n, kind=kind) for kind, n in skipped.items() if kind != "reasoning"]
    described = _descriptions(meta.get("tools"))
    meta = dict({k: meta[k] for k in ("run_id", "status", "mode") if isinstance(meta.get(k), str)},
                **({"agent": meta["agent"]} if isinstance(meta.get("agent"), dict) else {}),
                **({"descriptions": described} if described else {}))
    return [(messages, meta, fmt, container, notes)]


def _descriptions(tools):
    """{tool name: description} of a file's tool schemas (Chat Completions' {"function": {...}} or a plain
    {"name", "description"}): what a write's verbs are read from (texts/words.asks_for), as the run read them."""
    found = {}
    for tool in tools if isinstance(tools, list) else ():
        spec = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(spec, dict) and isinstance(spec.get("name"), str) and isinstance(spec.get("description"), str):
            found[spec["name"]] = spec["description"]
    return found


def _read_file(path):
    """(parsed JSON value, container): a JSON document ('array'), or JSONL ('jsonl') made into a list."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = f.read()
    except FileNotFoundError:
        raise Unreadable(Said("file.missing", path=path)) from None
    except IsADirectoryError:
        raise Unreadable(Said("file.directory", path=path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise Unreadable(Said("file.unreadable", path=path, error=exc)) from None
    if not path.endswith((".jsonl", ".ndjson")):
        try:
            return json.loads(raw), "array"
        except RecursionError:
            raise Unreadable(Said("file.too_deep", path=path)) from None
        except ValueError as exc:
            if "Extra data" not in str(exc):
                raise Unreadable(Said("file.not_json", path=path, error=exc)) from None
    items = []
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except (ValueError, RecursionError) as exc:
            raise Unreadable(Said("file.bad_line", path=path, line=number, error=exc)) from None
    if not items:
        raise Unreadable(Said("file.empty", path=path))
    return items, "jsonl"


# ---- its items: every shape into normalised messages ----
def normalise(items):
    """Items of any supported shape → (messages, formats, skipped item types)."""
    messages: list[dict] = []
    formats, skipped = set(), dict[str, int]()
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


def _item(item, index):
    """(format, normalised messages) for one item; Unreadable when its shape is unknown."""
    found = None
    if isinstance(item, dict):
        kind = item.get("type")
        data = item["data"] if isinstance(item.get("data"), dict) else item
        _known_blocks(data.get("content"), index)
        at = (Said("field.item", index=index + 1),)
        if item.get("kind") in ("request", "response") and isinstance(item.get("parts"), list):
            check(item["parts"], [PYDANTIC_PART], (*at, "parts"))
            found = _from_pydantic_ai(item, index)
        elif isinstance(kind, str) and kind:
            role = _lc_type(kind)
            if role != "":
                check(data, LANGCHAIN_TOOL if role == "tool" else LANGCHAIN_DATA, (*at, "data") if data is not item
                       else at)
                found = _from_langchain(item, role)
            elif kind == "message" and _anthropic_blocks(item.get("content")) or \
                    kind == "message" and "stop_reason" in item:            # a dumped Anthropic response
                check(item, ANTHROPIC_ITEM, at)
                found = _from_anthropic(item, CHAT_ROLES.get(str(item.get("role")), "assistant"))
            else:
                check(item, RESPONSES_ITEM, at)
                found = _from_responses(item, kind)
        elif "role" in item:
            check(item, ROLE_DICT, at)
            found = _from_role_dict(item)
    if found is None:
        what = Said("item.what_type", kind=item.get("type")) if isinstance(item, dict) and \
            isinstance(item.get("type"), str) else \
            (Said("item.what_no_role") if isinstance(item, dict) else Said("item.what_value", kind=type(item).__name__))
        raise Unreadable(Said("item.unknown", index=index + 1, what=what))
    for message in found[1]:
        message["item"] = index + 1
    return found


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
    if role == "user" and isinstance(item.get("decision"), dict):      # what a confirmation of ours decided
        message["decision"] = item["decision"]
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
            raise Unreadable(Said("item.no_part_kind", index=index + 1))
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
            raise Unreadable(Said("item.part_kind", index=index + 1, kind=kind))
    if item["kind"] == "response":
        out.append(_message("assistant", "\n".join(t for t in text if t), calls=calls))
    return "pydantic_ai", out


def _message(role, content, name=None, merge=False, calls=()):
    """A normalised message; `calls`: its tool calls as (id, name, arguments); `merge`: an item of a Responses
    list that belongs to the response before it."""
    return {"role": role, "text": content_text(content), "loop": role == "user" and name == "loop",
            "calls": list(calls), "merge": merge}


def _tool(call_id, content, failed=False, decision=None):
    """A tool result. `decision`: the framework records it as a human's decision instead of a run of the tool
    ('reject': declined; 'respond': the human's own text answers in the tool's place; 'unknown': the run was
    cut off, no result)."""
    return {"role": "tool", "call_id": None if call_id is None else str(call_id), "content": content,
            "failed": failed, "decision": decision, "text": "", "loop": False, "calls": []}


def _raw_call(raw):
    """(id, name, arguments) of one tool call in any shape (OpenAI `function`, or `name` + `args`)."""
    raw = raw if isinstance(raw, dict) else {}
    function = raw.get("function")
    if isinstance(function, dict):
        return raw.get("id"), function.get("name"), function.get("arguments")
    args = raw["args"] if "args" in raw else raw.get("arguments", raw.get("input"))
    return raw.get("id") or raw.get("call_id"), raw.get("name"), args


def _lc_type(kind):
    """The role of a LangChain message type ('ai', 'AIMessageChunk', ...); '' when not one."""
    base = kind[:-len("MessageChunk")].lower() if kind.endswith("MessageChunk") else kind
    return LANGCHAIN_TYPES.get(base, "")


def _known_blocks(content, index):
    """Unreadable when a message's content holds a typed block (a dict with a `type`) that no format has."""
    blocks = [b for b in content if isinstance(b, dict) and isinstance(b.get("type"), str)] \
        if isinstance(content, list) else []
    unknown = sorted({b["type"] for b in blocks if b["type"] not in CONTENT_PARTS})
    if unknown:
        raise Unreadable(Said("item.block", index=index + 1, kind=unknown[0]))


def _anthropic_blocks(content):
    """Whether a content list is Anthropic's (a block only Anthropic Messages have)."""
    return isinstance(content, list) and any(isinstance(b, dict) and isinstance(b.get("type"), str)
                                             and b["type"] in ANTHROPIC_BLOCKS for b in content)


def content_text(content):
    """The text of a message's content: a string, or the text parts of a list of parts."""
    if isinstance(content, list):       # content parts of any framework: keep the text ones
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return content if isinstance(content, str) else ""


# ---- OpenTelemetry trace files: the GenAI messages their spans carry ----
SEMCONV_SKIPPED = {"reasoning", "thinking", "blob", "file", "uri", "server_tool_call", "server_tool_call_response"}
EVENT_ROLES = {"gen_ai.system.message": "system", "gen_ai.user.message": "user", "gen_ai.assistant.message":
               "assistant", "gen_ai.tool.message": "tool", "gen_ai.choice": "assistant"}


def _otlp_requests(data):
    """The OTLP export requests of a file (one, or a JSONL list of them); [] when it is not a trace file."""
    found = [data] if isinstance(data, dict) else data if isinstance(data, list) else []
    if found and all(isinstance(r, dict) and isinstance(r.get("resourceSpans"), list) for r in found):
        return found
    return []


def _from_otlp(requests, path, container):
    """[(normalised messages, meta)] of every conversation the spans of these export requests hold, in the order
    they first appear: the spans of one conversation are those with its `gen_ai.conversation.id` (a span without
    one belongs to the conversation its trace names, when its trace names exactly one; else to its trace), and its
    messages are the longest conversation one of its spans holds (each chat span carries the history so far); its
    meta's `agent_name` is the one gen_ai.agent.name its spans give, if they give one, and `ours` is True when this
    project's exporter made them (trace/otlp.py: its spans carry handloop.* attributes)."""
    at = (lambda i: (Said("field.item", index=i + 1),)) if container == "jsonl" else (lambda i: ())
    for index, request in enumerate(requests):
        check(request, OTLP_REQUEST, at(index))
    spans = [(where, span, _otlp_attributes(span.get("attributes"))) for where, span in _otlp_spans(requests, at)]
    named: dict[str, set[str]] = {}             # trace id -> the conversation ids its spans carry
    for _, span, attributes in spans:
        if _conversation_id(attributes):
            named.setdefault(span.get("traceId"), set()).add(_conversation_id(attributes))
    best: dict[tuple, tuple] = {}               # conversation -> (its longest messages, its id, where they are)
    agents: dict[tuple, set[str]] = {}          # conversation -> the agent names its spans give
    ours: set[tuple] = set()                    # conversations whose spans this project's exporter made (handloop.*)
    for where, span, attributes in spans:
        conversation_id = _conversation_id(attributes)
        if conversation_id is None and len(named.get(span.get("traceId"), ())) == 1:
            conversation_id = next(iter(named[span.get("traceId")]))
        key = ("conversation", conversation_id) if conversation_id else ("trace", span.get("traceId"))
        name = attributes.get("gen_ai.agent.name")
        if isinstance(name, str) and name:
            agents.setdefault(key, set()).add(name)
        if any(isinstance(k, str) and k.startswith("handloop.") for k in attributes):
            ours.add(key)
        for said, found in ((_span_messages(attributes), where), (_event_messages(span.get("events")), where)):
            if len(said) > len(best.get(key, ((), None, None))[0]):
                best[key] = (said, conversation_id, found)
    if not best:
        raise Unreadable(Said("file.otlp_no_messages", path=path))
    conversations = []
    for key, (said, conversation_id, where) in best.items():
        for index, item in enumerate(said):
            check(item, SEMCONV_MESSAGE, (*where, Said("field.message", index=index + 1)))
        messages = [m for index, item in enumerate(said) for m in _from_semconv(item, index)]
        if any(m["role"] in ("user", "assistant") for m in messages):
            agent_names = agents.get(key, set())
            conversations.append((messages, {**({"run_id": conversation_id} if conversation_id else {}),
                                             **({"agent_name": next(iter(agent_names))} if len(agent_names) == 1 else {}),
                                             **({"ours": True} if key in ours else {})}))
    if not conversations:
        raise Unreadable(Said("file.no_said", path=path))
    return conversations


def _conversation_id(attributes):
    value = attributes.get("gen_ai.conversation.id")
    return value if isinstance(value, str) and value else None


def _otlp_spans(requests, at):
    """(where, span) of every span of the export requests (checked: OTLP_REQUEST)."""
    for number, request in enumerate(requests):
        for r, resource in enumerate(request["resourceSpans"]):
            for c, scope in enumerate(resource.get("scopeSpans") or ()):
                for i, span in enumerate(scope.get("spans") or ()):
                    yield (*at(number), "resourceSpans", r, "scopeSpans", c, "spans", i), span


def _otlp_attributes(raw):
    """OTLP key/value attributes as a dict of plain values."""
    return {a["key"]: _otlp_value(a.get("value")) for a in raw or ()
            if isinstance(a, dict) and isinstance(a.get("key"), str)}


def _otlp_value(value):
    if not isinstance(value, dict):
        return None
    if "arrayValue" in value:
        inner = value["arrayValue"].get("values") if isinstance(value["arrayValue"], dict) else None
        return [_otlp_value(v) for v in inner or ()]
    if "kvlistValue" in value:
        inner = value["kvlistValue"].get("values") if isinstance(value["kvlistValue"], dict) else None
        return _otlp_attributes(inner)
    return next(iter(value.values()), None)


def _json_list(value):
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _span_messages(attributes):
    """The conversation a span's attributes hold: system instructions, input, output; or pydantic-ai's."""
    said = _json_list(attributes.get("gen_ai.input.messages")) + _json_list(attributes.get("gen_ai.output.messages"))
    if said:
        system = _json_list(attributes.get("gen_ai.system_instructions"))
        return ([{"role": "system", "parts": system}] if system else []) + said
    return _json_list(attributes.get("pydantic_ai.all_messages"))


def _event_messages(events):
    """The older form: one span event per message (gen_ai.user.message, gen_ai.choice, ...), as role and parts."""
    said = []
    for event in events or ():
        role = EVENT_ROLES.get(event.get("name", "")) if isinstance(event, dict) else None
        if role is None:
            continue
        a = _otlp_attributes(event.get("attributes"))
        body = _json_object(a.get("message")) if event["name"] == "gen_ai.choice" else a
        content = body.get("content")
        if role == "tool":
            parts = [{"type": "tool_call_response", "id": body.get("id"), "response": content}]
        else:
            parts = [{"type": "text", "content": content}] if isinstance(content, str) and content else []
        for raw in _json_list(body.get("tool_calls")):
            function = _json_object(raw.get("function"))
            parts.append({"type": "tool_call", "id": raw.get("id"), "name": function.get("name"),
                          "arguments": function.get("arguments")})
        said.append({"role": role, "parts": parts})
    return said


def _json_object(value):
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _from_semconv(item, index):
    """A GenAI semantic-conventions message (role, parts) as normalised messages: its tool results first, then
    what it says (an assistant's text with its tool calls)."""
    role = CHAT_ROLES.get(item.get("role") if isinstance(item.get("role"), str) else "")
    parts = [p for p in item.get("parts") or () if isinstance(p, dict)]
    texts, calls, results = [], [], []
    for part in parts:
        kind = part.get("type")
        if kind == "text":
            texts.append(part["content"] if isinstance(part.get("content"), str) else "")
        elif kind == "tool_call":
            calls.append((part.get("id"), part.get("name"), part.get("arguments")))
        elif kind == "tool_call_response":
            results.append(_tool(part.get("id"), part.get("response", part.get("result"))))
        elif kind not in SEMCONV_SKIPPED:
            raise Unreadable(Said("item.block", index=index + 1, kind=str(kind)))
    if role is None:
        raise Unreadable(Said("item.unknown", index=index + 1, what=Said("item.what_no_role")))
    out = results + ([_message(role, "\n".join(texts), item.get("name"), calls=calls if role == "assistant" else ())]
                     if role != "tool" and (texts or calls or not results) else [])
    for message in out:
        message["item"] = index + 1
    return out

"""What the model sees and where a call goes: the tool schemas, the argument parsing ladder,
JSON Schema validation, and routing to the local tools (or, in MCP mode, the MCP client).

Invariants: a call is validated against its schema before any tool runs, and a call that
fails parsing or validation carries the problem instead of arguments (never a silent `{}`);
tools get what they need passed in explicitly (plan, store, idempotency key), never memory
itself; every result handed back is a JSON object.
MCP mode: only tools on the allow-list (config.MCP_TOOLS) reach the model, replacing local tools
of the same name; every MCP result is cut to that tool's allowed fields, always, and every MCP
failure (isError, protocol error, timeout, dead server) is a ToolError. One MCP server session
per tool set, started when first needed (a new run needs it at once, for the schemas; a resumed
run reuses the schemas it recorded and starts the server only for its first MCP call).
"""
import dataclasses
import functools
import hashlib
import json
import math
import re
import unicodedata

import config
import mcp_tools
import tools

FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.S)


@dataclasses.dataclass(frozen=True)
class Call:
    """One tool call as the model sent it, with its parsed and validated arguments."""
    id: str
    name: str
    arguments: str                 # raw text, exactly as sent
    args: dict | None = None       # parsed and schema-valid, or None
    problem: str | None = None     # why args is None
    kind: str = "read"             # read | state | write (the tool set's word for this tool)
    effect: tuple = ()             # a write's (argument, how a proposal states it) pairs
    aliases: dict = dataclasses.field(default_factory=dict, hash=False, compare=False)   # choice -> other names

    @functools.cached_property
    def signature(self):
        """Canonical form (name + key-sorted arguments) used to recognise a repeated call;
        computed once (the call is frozen), as guards and memory ask for it several times."""
        body = self.arguments if self.args is None else json.dumps(self.args, sort_keys=True, ensure_ascii=False)
        return f"{self.name}:{body}"


@dataclasses.dataclass
class Outcome:
    """What became of one call: its JSON result and how it got there."""
    result: dict
    status: str = "ok"             # ok | error | blocked | timeout | unknown
    guard: str | None = None       # the guard (or check) that stopped it, when blocked
    seconds: float = 0.0
    concurrent: bool = False


def parse_arguments(text):
    """The ladder: strip Markdown fences → json → json5 → give up with the problem stated.

    Returns (value, None) or (None, problem).
    """
    if not isinstance(text, str):
        return None, "arguments 必须是 JSON 字符串"
    match = FENCE.match(text)
    body = (match.group(1) if match else text).strip() or "{}"
    try:
        return json.loads(body), None
    except ValueError as exc:
        problem = str(exc)
    try:
        import json5
        return json5.loads(body), None
    except Exception:       # json5 raises several types for bad text; all mean "not parseable"
        return None, f"arguments 不是合法 JSON（{problem}）：{text[:200]}"


TYPES = {"object": dict, "array": list, "string": str, "integer": int, "number": (int, float),
         "boolean": bool}


def validate(schema, value, path="arguments"):
    """Problems of `value` against a JSON Schema subset (type, enum, pattern, ranges, lengths,
    required, properties, additionalProperties, items). Empty list when valid."""
    kind = schema.get("type")
    if kind and (not isinstance(value, TYPES[kind]) or (kind in ("integer", "number") and isinstance(value, bool))):
        return [f"{path} 应为 {kind}，收到 {json.dumps(value, ensure_ascii=False)[:60]}"]
    problems = []
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path} 只能是 {schema['enum']} 之一")
    if "pattern" in schema and not re.search(schema["pattern"], value, re.ASCII):
        problems.append(f"{path} 格式不对（应匹配 {schema['pattern']}，只用半角字符）：{value[:60]}")
    if "minimum" in schema and value < schema["minimum"] or "maximum" in schema and value > schema["maximum"]:
        problems.append(f"{path} 应在 {schema.get('minimum')} 到 {schema.get('maximum')} 之间")
    size = len(value) if isinstance(value, (str, list)) else None
    for key, ok in (("minLength", lambda n: size >= n), ("maxLength", lambda n: size <= n),
                    ("minItems", lambda n: size >= n), ("maxItems", lambda n: size <= n)):
        if key in schema and not ok(schema[key]):
            problems.append(f"{path} 长度不符合 {key}={schema[key]}")
    if kind == "object":
        problems += _validate_object(schema, value, path)
    if kind == "array" and "items" in schema:
        for i, item in enumerate(value):
            problems += validate(schema["items"], item, f"{path}[{i}]")
    return problems


def normalise(schema, value):
    """`value` with every string that is ASCII in its compatibility form (dates, ids, choices,
    numbers written full-width: ２０２６-１０-０１, ＸＡ-００１) in that ASCII form from here on."""
    kind = schema.get("type")
    if kind == "string" and isinstance(value, str) and not value.isascii():
        plain = unicodedata.normalize("NFKC", value)
        return plain.strip() if plain.isascii() else value
    if kind == "object" and isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: normalise(props[k], v) if k in props else v for k, v in value.items()}
    if kind == "array" and isinstance(value, list) and "items" in schema:
        return [normalise(schema["items"], v) for v in value]
    return value


def _validate_object(schema, value, path):
    props = schema.get("properties", {})
    problems = [f"{path} 缺少必填字段 {k}" for k in schema.get("required", []) if k not in value]
    for key, item in value.items():
        if key in props:
            problems += validate(props[key], item, f"{path}.{key}")
        elif schema.get("additionalProperties") is False:
            problems.append(f"{path} 不允许字段 {key}（只能有 {', '.join(props) or '无字段'}）")
    return problems


def idempotency_key(run_id, call):
    """Covers the run and every argument that defines the booking's effect."""
    body = json.dumps({"run": run_id, "tool": call.name, "args": call.args}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()


class ToolSet:
    """The tools of one run: schemas for the model, preparation and routing of calls."""

    timeout = config.TOOL_TIMEOUT     # seconds the executor gives each call of this tool set

    def __init__(self, run_id, store, mode="local", mcp_command=None, schemas=None):
        """`schemas`: the tool list a resumed run recorded (MCP mode takes its MCP tools from it
        instead of asking the server); `mcp_command`: argv of the MCP server (default: ours)."""
        self.run_id, self.store, self.mode = run_id, store, mode
        self.mcp, remote = None, {}
        if mode == "mcp":
            self.mcp = mcp_tools.Client(mcp_command, timeout=config.MCP_TIMEOUT, max_restarts=config.MCP_RESTARTS)
            remote = _recorded(schemas) if schemas is not None else self._listed()
        self.remote = set(remote)
        specs = {}
        for name, spec in tools.SCHEMAS.items():
            if name == "get_weather":              # the MCP tools stand where the local weather tool stood
                specs.update(remote)
            if mode == "local" or name not in config.MCP_TOOLS:
                specs.setdefault(name, spec)
        self.params = {name: spec["parameters"] for name, spec in specs.items()}
        self.schemas = [{"type": "function", "function": {"name": name, **spec}} for name, spec in specs.items()]

    def _listed(self):
        """The allow-listed tools of the MCP server, as OpenAI function specs (one tools/list)."""
        try:
            offered = {t["name"]: t for t in self.mcp.start().list_tools()}
            return allowed_specs(offered)
        except mcp_tools.MCPError:
            self.mcp.close()
            raise

    def kind(self, name):
        """'read' (may run concurrently), 'state' (changes the run) or 'write' (changes the world)."""
        if name in config.WRITE_TOOLS:
            return "write"
        return "state" if name in config.STATE_TOOLS else "read"

    def prepare(self, raw_calls):
        """Raw tool calls → Calls, each with valid arguments or the problem that stops it."""
        return [self._prepare(raw) for raw in raw_calls]

    def _prepare(self, raw):
        function = raw.get("function") or {}
        name = function.get("name", "")
        call = Call(id=raw.get("id", ""), name=name, arguments=function.get("arguments", ""), kind=self.kind(name),
                    effect=tools.WRITE_EFFECTS.get(name, ()), aliases=tools.ALIASES)
        if call.name not in self.params:
            return dataclasses.replace(call, problem=f"没有名为 {call.name!r} 的工具；可用：{', '.join(self.params)}")
        value, problem = parse_arguments(call.arguments)
        if problem is None:
            value = normalise(self.params[call.name], value)
            problems = validate(self.params[call.name], value)
            problem = "；".join(problems) if problems else None
        return dataclasses.replace(call, args=value if problem is None else None, problem=problem)

    def run(self, call, memory):
        """Execute a prepared, allowed call; returns its JSON result (raises ToolError)."""
        args = call.args
        if call.name == "set_plan":
            return tools.set_plan(args["steps"], set(self.params))
        if call.name == "mark_step":
            return tools.mark_step(plan=memory.plan, **args)
        if call.name == "book_hotel":
            return tools.book_hotel(self.store, idempotency_key(self.run_id, call), self.run_id, **args)
        if call.name in self.remote:
            return self._remote(call)
        return getattr(tools, call.name)(**args)

    def _remote(self, call):
        try:
            payload = self.mcp.call_tool(call.name, call.args)
        except mcp_tools.ToolFailed as exc:
            raise tools.ToolError(f"{call.name} 失败：{' '.join(exc.message.split())[:300]}") from None
        except mcp_tools.MCPError as exc:
            raise tools.ToolError(f"MCP 调用 {call.name} 失败：{exc.message[:300]}；可以稍后重试") from None
        return trim(call.name, payload)

    def reconcile(self, call):
        """After a write's outcome went unknown: the booking its key stored, or None."""
        return self.store.find(idempotency_key(self.run_id, call))

    def close(self):
        """Release what the tool set holds: the MCP server session, if any."""
        if self.mcp is not None:
            self.mcp.close()


def allowed_specs(offered, where="MCP 服务"):
    """Allow-listed MCP tools → OpenAI function specs. A tool that is missing, or whose input schema
    lacks an argument the allow-list names, is an MCPError: the run cannot use this server."""
    specs, wrong = {}, []
    for name, rule in config.MCP_TOOLS.items():
        tool = offered.get(name) or {}
        schema = tool.get("inputSchema")
        props = schema.get("properties") if isinstance(schema, dict) and schema.get("type") == "object" else None
        if not isinstance(props, dict) or any(arg not in props for arg in rule["arguments"]):
            wrong.append(f"{name}({', '.join(rule['arguments'])})")
            continue
        description = tool.get("description") if isinstance(tool.get("description"), str) else ""
        specs[name] = {"description": description[:500], "parameters": _safe_schema(schema)}
    if wrong:
        raise mcp_tools.MCPError(f"{where}缺少可用的工具：{'、'.join(wrong)}（它提供：{', '.join(offered) or '无'}）")
    return specs


def _safe_schema(schema):
    """What validate() understands of an untrusted input schema: a flat object of simple typed
    properties. The model is shown exactly this, and calls are checked against it."""
    props = {key: _safe_rule(rule) for key, rule in list(schema["properties"].items())[:20]
             if isinstance(key, str) and len(key) <= 64 and isinstance(rule, dict)}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    safe = {"type": "object", "properties": props, "required": [k for k in required if isinstance(k, str) and k in props]}
    if schema.get("additionalProperties") is False:
        safe["additionalProperties"] = False
    return safe


SAFE_KEYWORDS = {"string": ("pattern", "minLength", "maxLength"), "number": ("minimum", "maximum"),
                 "integer": ("minimum", "maximum"), "boolean": ()}


def _safe_rule(rule):
    kind = rule.get("type") if isinstance(rule.get("type"), str) else None
    safe = {"type": kind} if kind in SAFE_KEYWORDS else {}
    for key in SAFE_KEYWORDS.get(kind, ()):
        value = rule.get(key)
        if key == "pattern" and isinstance(value, str) and _compiles(value) or \
                key != "pattern" and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            safe[key] = value
    enum = rule.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, (str, int, float, bool)) for v in enum):
        safe["enum"] = enum[:50]
    if isinstance(rule.get("description"), str):
        safe["description"] = rule["description"][:200]
    return safe


def _compiles(pattern):
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return False
    return len(pattern) <= 200


def _recorded(schemas):
    """The allow-listed MCP tools among the schemas a run recorded, checked as a server's would be."""
    found = {s["function"].get("name"): s["function"] for s in schemas
             if isinstance(s, dict) and isinstance(s.get("function"), dict)}
    offered = {name: {"description": found[name].get("description"), "inputSchema": found[name].get("parameters")}
               for name in config.MCP_TOOLS if name in found}
    return allowed_specs(offered, where="审计文件记录的工具列表")


def trim(name, payload):
    """An MCP result cut to the tool's allowed fields (JSON scalars, strings shortened), always;
    a ToolError when a required field is missing."""
    rule = config.MCP_TOOLS[name]
    kept = {key: _scalar(payload[key]) for key in rule["fields"] if _scalar(payload.get(key)) is not None}
    missing = [key for key in rule["required"] if key not in kept]
    if missing:
        raise tools.ToolError(f"{name} 的结果缺少字段 {', '.join(missing)}（MCP 服务返回的内容不可用）")
    return kept


def _scalar(value):
    """A JSON scalar fit to pass on (finite number, bool, string of at most 200 chars), or None."""
    if isinstance(value, str):
        return value[:200]
    if isinstance(value, bool) or isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None

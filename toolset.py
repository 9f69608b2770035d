"""What the model sees and where a call goes: the tool schemas, the argument parsing ladder,
JSON Schema validation, and routing to the local tools (or, in MCP mode, the MCP client).

Invariants: a call is validated against its schema before any tool runs, and a call that
fails parsing or validation carries the problem instead of arguments (never a silent `{}`);
tools get what they need passed in explicitly (plan, store, idempotency key), never memory
itself; every result handed back is a JSON object.
"""
import dataclasses
import functools
import hashlib
import json
import re

import config
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


def error(message, **extra):
    return {"error": message, **extra}


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
    if "pattern" in schema and not re.search(schema["pattern"], value):
        problems.append(f"{path} 格式不对（应匹配 {schema['pattern']}）")
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


def _validate_object(schema, value, path):
    props = schema.get("properties", {})
    problems = [f"{path} 缺少必填字段 {k}" for k in schema.get("required", []) if k not in value]
    for key, item in value.items():
        if key in props:
            problems += validate(props[key], item, f"{path}.{key}")
        elif schema.get("additionalProperties") is False:
            problems.append(f"{path} 不允许字段 {key}")
    return problems


def idempotency_key(run_id, call):
    """Covers the run and every argument that defines the booking's effect."""
    body = json.dumps({"run": run_id, "tool": call.name, "args": call.args}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()


class ToolSet:
    """The tools of one run: schemas for the model, preparation and routing of calls."""

    def __init__(self, run_id, store, mode="local"):
        self.run_id, self.store, self.mode = run_id, store, mode
        self.params = {name: spec["parameters"] for name, spec in tools.SCHEMAS.items()}
        self.schemas = [{"type": "function", "function": {"name": name, **spec}}
                        for name, spec in tools.SCHEMAS.items()]

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
        call = Call(id=raw.get("id", ""), name=function.get("name", ""), arguments=function.get("arguments", ""))
        if call.name not in self.params:
            return dataclasses.replace(call, problem=f"没有名为 {call.name!r} 的工具；可用：{', '.join(self.params)}")
        value, problem = parse_arguments(call.arguments)
        if problem is None:
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
        return getattr(tools, call.name)(**args)

    def reconcile(self, call):
        """After a write's outcome went unknown: the booking its key stored, or None."""
        return self.store.find(idempotency_key(self.run_id, call))

    def close(self):
        """Release what the tool set holds (nothing for local tools)."""

"""The data every layer passes around, and the measures they share: a tool's declaration, a call,
its outcome, the error a tool raises; JSON Schema validation, character counting, cutting.

Invariants: imports no project module (a leaf: any layer may import it, it imports none); holds
no state; each fact here is defined once and nowhere else (the schema validator, how a
message's characters are counted, how a long text or result is cut).
"""
import dataclasses
import functools
import json
import math
import re
import unicodedata
from typing import Callable


class ToolError(Exception):
    """A failure the model can act on (bad value, unknown city, sold out...)."""


@dataclasses.dataclass(frozen=True)
class Source:
    """Provenance: the arguments `args` of a call must equal (or, `near`, equal to 4 decimals) the
    fields `fields` of one record found at `path` in an earlier successful result of `tool`.
    `path` is dotted, `[]` stepping into a list: "items[]" or "" for the result itself."""
    args: tuple
    tool: str
    fields: tuple
    path: str = ""
    near: bool = False


@dataclasses.dataclass(frozen=True)
class Tool:
    """One tool, declared once, in the module that implements it. The loop's layers read this and
    never name a tool: the guards its kind, prerequisites, sources and effect; memory its absorb
    and render; the executor its kind, timeout, inline and fn; compaction its kind and keep; the
    command line its gist.

    `fn(**args, **context)` returns a JSON object or raises ToolError; it may be `async def`.
    `takes` names the context it needs, passed as keyword arguments: `run_id`, `idempotency_key`
    (writes), `plan` (the current plan), `tool_names`.
    """
    name: str
    description: str
    parameters: dict                          # JSON Schema of the arguments
    fn: Callable
    kind: str = "read"                        # read (may run concurrently) | state (changes the run) | write
    timeout: float | None = None              # seconds; None: the policy's default
    inline: bool = False                      # pure and bounded: runs in the loop's thread, no hop, no timeout
    takes: tuple = ()
    requires: tuple = ()                      # tools that must have succeeded in the run before this one runs
    sources: tuple = ()                       # Source rules: where arguments must come from
    effect: tuple = ()                        # a write's (argument, how a proposal states it): "id" | "choice" |
                                              # "date" | "count"; the proposal shown and the idempotency key
    aliases: dict = dataclasses.field(default_factory=dict)   # choice value -> other names users read
    units: dict = dataclasses.field(default_factory=dict)     # count argument -> the words after its number
    keep: tuple = ()                          # result fields compaction keeps whole, however long
    absorb: Callable | None = None            # absorb(facts, args, result): a success into this tool's facts
                                              # (add or replace entries; never mutate a value stored before)
    render: Callable | None = None            # render(facts) -> lines of the memory block
    describe: Callable | None = None          # describe(args, facts) -> fields shown with a proposal (facts:
                                              # every tool's facts by namespace)
    gist: Callable | None = None              # gist(result) -> one line on screen
    reconcile: Callable | None = None         # write: reconcile(idempotency_key) -> the receipt stored, or None
    facts: str = ""                           # namespace of memory facts absorb writes (default: the name)
    initial: dict = dataclasses.field(default_factory=dict)   # those facts before any result

    @property
    def namespace(self):
        return self.facts or self.name

    def spec(self, parameters=None):
        """The OpenAI function spec with `parameters` as its schema (default: the declared one, which
        calls are validated against; toolset.shown() makes what the model is shown)."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters if parameters is None else parameters}}


@dataclasses.dataclass(frozen=True)
class Call:
    """One tool call as the model sent it, with its parsed and validated arguments."""
    id: str
    name: str
    arguments: str                 # raw text, exactly as sent
    args: dict | None = None       # parsed and schema-valid, or None
    problem: str | None = None     # why args is None
    tool: Tool | None = dataclasses.field(default=None, compare=False, repr=False)   # its declaration

    @property
    def kind(self):
        return self.tool.kind if self.tool else "read"

    @functools.cached_property
    def signature(self):
        """Canonical form (name + key-sorted arguments) used to recognise a repeated call;
        computed once (the call is frozen), as guards and memory ask for it several times."""
        body = self.arguments if self.args is None else json.dumps(self.args, sort_keys=True, ensure_ascii=False)
        return f"{self.name}:{body}"


@dataclasses.dataclass
class Outcome:
    """What became of one call: its JSON result (as settled: fitted, and what its text decodes to),
    the text of its tool message, and how it got there."""
    result: dict
    status: str = "ok"             # ok | error | blocked | timeout | unknown
    guard: str | None = None       # the guard (or check) that stopped it, when blocked
    seconds: float = 0.0
    concurrent: bool = False
    content: str = ""              # the tool message's text; set when the outcome is settled


# ---- JSON Schema ----
TYPES = {"object": dict, "array": list, "string": str, "integer": int, "number": (int, float), "boolean": bool}


def validate(schema, value, path="arguments"):
    """Problems of `value` against a JSON Schema subset (type, enum, pattern, ranges, lengths,
    required, properties, additionalProperties, items). Empty list when valid."""
    kind = schema.get("type")
    if kind and (not isinstance(value, TYPES[kind]) or (kind in ("integer", "number") and isinstance(value, bool))):
        return [f"{path} 应为 {kind}，收到 {json.dumps(value, ensure_ascii=False)[:60]}"]
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{path} 应为有限的数，收到 {value}"]
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


def _validate_object(schema, value, path):
    props = schema.get("properties", {})
    problems = [f"{path} 缺少必填字段 {k}" for k in schema.get("required", []) if k not in value]
    for key, item in value.items():
        if key in props:
            problems += validate(props[key], item, f"{path}.{key}")
        elif schema.get("additionalProperties") is False:
            problems.append(f"{path} 不允许字段 {key}（只能有 {', '.join(props) or '无字段'}）")
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


# ---- sizes ----
def chars(messages):
    """Characters of content and tool calls: what a request carries, schemas aside."""
    total = 0
    for m in messages:
        content = m.get("content")
        total += len(content) if isinstance(content, str) else 0
        for c in m.get("tool_calls") or ():
            total += len(c["function"]["arguments"]) + len(c["function"]["name"])
    return total


def cut(text, limit):
    """Head and tail of a long text, with a note of how much was dropped."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 3
    return f"{text[:head]}\n…〔中间省略 {len(text) - head - tail} 字符〕…\n{text[-tail:]}"


def fit(result, limit):
    """A JSON object result whose encoding fits `limit` characters, still a JSON object: its long
    strings are cut head-and-tail and its long lists shortened, with a note of what was dropped.
    What memory absorbs and what the tool message holds are this same object."""
    text = json.dumps(result, ensure_ascii=False)
    if len(text) <= limit:
        return result
    for size, items in ((limit * 3 // 4, 200), (limit // 4, 100), (2000, 50), (500, 20), (120, 10), (40, 3)):
        shrunk = _fitted(result, size, items)
        if len(json.dumps(shrunk, ensure_ascii=False)) <= limit:
            break
    note = f"结果原有 {len(text)} 字符，超过 {limit}，长字段与长列表已截短"
    shrunk = dict(shrunk, _cut=note) if isinstance(shrunk, dict) else {"value": shrunk, "_cut": note}
    if len(json.dumps(shrunk, ensure_ascii=False)) > limit:          # too many keys even so: its text, cut
        shrunk = {"_cut": note, "text": cut(text, max(100, limit - 200))}
    return shrunk


COMPACT = (",", ":")     # a tool message's JSON: no spaces, which the model would pay for in every request


def settled(result, limit):
    """A result as the record holds it: fitted to `limit` and encoded once (compact). Returns (object, text),
    the object being exactly what the text decodes to (memory absorbs it, the tool message says it)."""
    text = json.dumps(result, ensure_ascii=False, default=str, separators=COMPACT)
    if len(text) > limit:
        text = json.dumps(fit(json.loads(text), limit), ensure_ascii=False, separators=COMPACT)
    return json.loads(text), text


def _fitted(value, size, items):
    if isinstance(value, str):
        return cut(value, size)
    if isinstance(value, list):
        kept = [_fitted(v, size, items) for v in value[:items]]
        return kept + ([f"…〔省略 {len(value) - items} 项〕"] if len(value) > items else [])
    if isinstance(value, dict):
        return {k: _fitted(v, size, items) for k, v in list(value.items())[:items * 2]}
    return value

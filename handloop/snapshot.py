"""What a loaded snapshot must be, checked where an audit file is read (audit.load): the shape of every field a
loader or reader of it uses (SNAPSHOT), no NaN or infinity anywhere, nesting at most MAX_DEPTH, and the API's pairing
of tool calls and tool messages.

Invariants: pure checks on JSON values, no I/O; a problem is a Said naming the field or the message, never an
exception, so that what audit.load returns no reader can trip on.
"""
import math

from . import config, texts
from .texts import Said

STATUSES = ("running", "suspended", "done", "stopped", "error")
MAX_DEPTH = 200     # how deep a snapshot's values may nest: written again, they must stay clear of the recursion limit


def structure_problem(snapshot):
    """What is wrong with a loaded snapshot's structure (a Said naming the field), or None: every field a loader or
    reader of the snapshot uses has the shape SNAPSHOT gives it, and no number anywhere is NaN or infinite."""
    if not isinstance(snapshot, dict):
        return Said("audit.not_object")
    if snapshot.get("version") != config.AUDIT_VERSION:
        return Said("audit.version", version=snapshot.get("version"), ours=config.AUDIT_VERSION)
    found = SNAPSHOT.wrong(snapshot)
    if found:
        keys, expected = found
        field = _path(reversed(keys))
        if expected.name == "audit.is.missing":
            return Said("audit.missing_field", field=field)
        return Said("audit.shape", field=field, expected=expected)
    if "policy" in snapshot:
        try:
            config.Policy.from_dict(snapshot["policy"])
        except ValueError as exc:
            return Said("audit.policy", error=texts.said_of(exc))
    return None


# ---- the shape of a snapshot: every field a loader or reader uses, checked where the file is read ----
# wrong(value) is None when the value fits, else (the keys down to what does not, innermost first; what it must be):
# a path is built only for a value that does not fit, so a whole snapshot is checked at little more than its walk.
class _Shape:
    """A shape a JSON value must have; the error says what it must be (a Said)."""

    def wrong(self, value):
        raise NotImplementedError


class _Kind(_Shape):
    """A JSON scalar of one kind: "text", "flag" (true or false), "count" (a whole number, at least 0) or "seconds"
    (a finite number, at least 0)."""

    TESTS = {"text": lambda v: isinstance(v, str), "flag": lambda v: isinstance(v, bool),
             "count": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
             "seconds": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0}

    def __init__(self, kind):
        self.kind, self.test = kind, self.TESTS[kind]

    def wrong(self, value):
        return None if self.test(value) else ([], Said(f"audit.is.{self.kind}"))


class _OneOf(_Shape):
    def __init__(self, *values):
        self.values = values

    def wrong(self, value):
        if isinstance(value, str) and value in self.values:
            return None
        return [], Said("audit.is.one_of", values=", ".join(self.values))


class _Maybe(_Shape):
    """null, or the shape given."""

    def __init__(self, shape):
        self.shape = shape

    def wrong(self, value):
        if value is None:
            return None
        found = self.shape.wrong(value)
        return ([], Said("audit.is.or_null", expected=found[1])) if found and not found[0] else found


class _Items(_Shape):
    """A list, each item of one shape."""

    def __init__(self, shape):
        self.shape = shape

    def wrong(self, value):
        if not isinstance(value, list):
            return [], Said("audit.is.list")
        check = self.shape.wrong
        for index, item in enumerate(value):
            found = check(item)
            if found:
                found[0].append(index)
                return found
        return None


class _Table(_Shape):
    """An object whose every value has one shape (names as keys)."""

    def __init__(self, shape):
        self.shape = shape

    def wrong(self, value):
        if not isinstance(value, dict):
            return [], Said("audit.is.object")
        check = self.shape.wrong
        for key, item in value.items():
            found = check(item)
            if found:
                found[0].append(key)
                return found
        return None


class _Object(_Shape):
    """An object with these fields (a name ending in "?" may be absent); any other field is any JSON value."""

    def __init__(self, fields, pick=None):
        self.fields = {name.rstrip("?"): (shape.wrong, not name.endswith("?")) for name, shape in fields.items()}
        self.pick = pick        # pick(value) -> the shape of this object instead (a message: by its role)

    def wrong(self, value):
        if not isinstance(value, dict):
            return [], Said("audit.is.object")
        if self.pick is not None:
            chosen = self.pick(value)
            if chosen is not self:
                return chosen.wrong(value)
        fields, known = self.fields, 0
        for name, (check, required) in fields.items():
            if name in value:
                known += 1
                found = check(value[name])
            elif required:
                found = [], Said("audit.is.missing")
            else:
                continue
            if found:
                found[0].append(name)
                return found
        if len(value) > known:                  # fields no reader uses: any JSON value
            for name, item in value.items():
                if name not in fields and isinstance(item, (dict, list, float)):
                    found = ANY.wrong(item)
                    if found:
                        found[0].append(name)
                        return found
        return None


class _Any(_Shape):
    """Any JSON value whose numbers are all finite and whose nesting stays under MAX_DEPTH (what the
    snapshot is written again with: strict JSON, by an encoder with a recursion limit)."""

    def wrong(self, value):
        stack: list[tuple[object, tuple, int]] = [(value, (), 0)]
        while stack:
            value, at, depth = stack.pop()
            if isinstance(value, float) and not math.isfinite(value):
                return list(reversed(at)), Said("audit.is.finite")
            if isinstance(value, (dict, list)):
                if depth >= MAX_DEPTH:
                    return list(reversed(at)), Said("audit.is.shallow", depth=MAX_DEPTH)
                pairs = value.items() if isinstance(value, dict) else enumerate(value)
                stack += [(item, (*at, key), depth + 1) for key, item in pairs if isinstance(item, (dict, list, float))]
        return None


def _path(inward):
    """A field's place as its error names it (its keys outermost first): messages[3].tool_calls[0].function."""
    out = ""
    for key in inward:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out or "."


ANY = _Any()
TEXT, FLAG, COUNT, SECONDS = _Kind("text"), _Kind("flag"), _Kind("count"), _Kind("seconds")
CALL = _Object({"id": TEXT, "type?": _OneOf("function"), "function": _Object({"name": TEXT, "arguments": TEXT})})
_SAID = {"name?": TEXT}
MESSAGES = {
    "system": _Object({"role": TEXT, "content": TEXT, **_SAID}),
    "user": _Object({"role": TEXT, "content": TEXT, **_SAID}),
    "assistant": _Object({"role": TEXT, "content?": _Maybe(TEXT), "tool_calls?": _Maybe(_Items(CALL)), **_SAID}),
    "tool": _Object({"role": TEXT, "tool_call_id": TEXT, "content": TEXT, **_SAID}),
}
MESSAGE: _Object = _Object({"role": _OneOf(*MESSAGES)},
                  pick=lambda m: MESSAGES.get(m["role"], MESSAGE) if isinstance(m.get("role"), str) else MESSAGE)
TRACED_CALL = _Object({"id?": TEXT, "name?": TEXT, "status?": TEXT, "guard?": _Maybe(TEXT), "seconds?": SECONDS,
                       "concurrent?": FLAG})
RECORD = _Object({"turn?": COUNT, "model_seconds?": SECONDS, "tokens?": COUNT, "tokens_estimated?": FLAG,
                  "tokens_in?": _Maybe(COUNT), "tokens_out?": _Maybe(COUNT), "tokens_cached?": _Maybe(COUNT),
                  "used_tokens?": COUNT,
                  "chars_sent?": COUNT, "chars_full?": COUNT, "notes?": _Items(TEXT), "tools?": _Items(TRACED_CALL),
                  "not_offer?": _Table(ANY)})
PARAMETERS = _Object({"properties?": _Table(_Table(ANY)), "required?": _Items(TEXT)})   # JSON Schema: what is read
# of it here (model.ask: the properties' names); the rest a resumed MCP run checks as the server's (toolset._recorded)
SCHEMA = _Object({"type?": _OneOf("function"), "function": _Object({"name": TEXT, "description?": _Maybe(TEXT),
                                                                     "parameters?": PARAMETERS})})
DECLARED_TOOL = _Object({"kind?": TEXT, "requires?": _Items(ANY), "effect?": _Items(ANY), "sources?": _Items(ANY),
                         "choices?": _Table(ANY), "units?": _Table(ANY)})
AGENT = _Object({"name?": TEXT, "file?": _Maybe(TEXT), "module?": _Maybe(TEXT), "confirm?": _Items(TEXT), "language?": TEXT, "planning?": FLAG,
                 "checks?": _Items(TEXT), "tools?": _Table(DECLARED_TOOL)})
SNAPSHOT = _Object({   # what audit.load guarantees of a snapshot: the fields the loop, runs.py and the readers use
    "run_id": TEXT, "status": _OneOf(*STATUSES), "reason?": TEXT, "detail?": TEXT, "turn": COUNT,
    "mode": _OneOf("local", "mcp"), "model?": TEXT, "created?": TEXT, "updated?": TEXT,
    "limits?": _Object({"max_turns?": COUNT, "budget?": COUNT}), "policy?": _Object({"tools?": _Maybe(_Items(TEXT))}),
    "elapsed?": SECONDS, "epoch?": _Maybe(_Object({"start?": _Maybe(COUNT), "room?": _Maybe(COUNT), "turn?": COUNT})),
    "answer?": TEXT, "agent?": _Maybe(AGENT), "memory": _Table(ANY), "messages": _Items(MESSAGE),
    "tools": _Items(SCHEMA), "trace": _Items(RECORD), "mcp_url?": _Maybe(TEXT), "temporal?": _Maybe(_Table(ANY)),
})


def pairing_problem(messages):
    """The API's rule: every tool call answered by one tool message, in order, before anything else. The
    problem names the message (messages[i]) where the rule breaks."""
    waiting: list[str] = []
    asked = None
    for i, message in enumerate(messages):
        if message["role"] == "tool":
            if not waiting or message.get("tool_call_id") != waiting[0]:
                return Said("audit.orphan", index=i)
            waiting.pop(0)
            continue
        if waiting:
            return Said("audit.unanswered_before", index=i, calls=waiting)
        if message["role"] == "assistant":
            calls = message.get("tool_calls") or []
            if not isinstance(calls, list) or not all(isinstance(c, dict) and isinstance(c.get("id"), str)
                                                      for c in calls):
                return Said("audit.bad_calls", index=i)
            waiting, asked = [c["id"] for c in calls], i
            if len(set(waiting)) != len(waiting):
                return Said("audit.duplicate_ids", index=i)
    return Said("audit.unanswered", calls=waiting, index=asked) if waiting else None

"""The measures every layer shares, on plain values: JSON Schema validation and normalisation of a call's
arguments, how many characters a request's messages hold, how a long text or result is cut to a limit, how a
tool's result is settled into the strict JSON text of its tool message (and, for a value JSON cannot hold,
its strict form), text made valid Unicode, a URL or a line shown without the secrets it may hold (a URL's user
name and password, values the caller names) as ***, and where a failure of the user's own code happened
(`told_at`: one line naming its file and line).

Invariants: imports only texts/__init__.py (the catalogue); holds no state; pure functions of their arguments;
each fact here is defined once and nowhere else. Texts come from the caller's catalogue (`say`, default Chinese).
"""
import json
import math
import os
import re
import sysconfig
import traceback
import unicodedata

from . import texts

ZH = texts.ZH_TEXTS


class Unencodable(ValueError):
    """A result JSON cannot hold (keys that are not strings, a cycle, NaN or an infinity, an int
    too long to write, nesting too deep)."""


TYPES: dict[str, type | tuple[type, ...]] = {"object": dict, "array": list, "string": str, "integer": int, "number": (int, float), "boolean": bool}


def validate(schema, value, path="arguments", say=ZH):
    """Problems of `value` against a JSON Schema subset (type, enum, pattern, ranges, lengths,
    required, properties, additionalProperties: true, false or the schema of the other values, items), in
    `say`'s language. Empty when valid. Stricter than JSON Schema in one way: where `properties` are listed, a
    field not among them is a problem unless `additionalProperties` allows it (an argument the schema does not
    define never runs)."""
    kind = schema.get("type")
    if kind and (not isinstance(value, TYPES[kind]) or (kind in ("integer", "number") and isinstance(value, bool))):
        return [say("schema.type", path=path, kind=kind, value=json.dumps(value, ensure_ascii=False)[:60])]
    if isinstance(value, float) and not math.isfinite(value):
        return [say("schema.finite", path=path, value=value)]
    problems = []
    if "enum" in schema and value not in schema["enum"]:
        problems.append(say("schema.enum", path=path, choices=schema["enum"]))
    if "pattern" in schema and not re.search(schema["pattern"], value, re.ASCII):
        problems.append(say("schema.pattern", path=path, pattern=schema["pattern"], value=value[:60]))
    if "minimum" in schema and value < schema["minimum"] or "maximum" in schema and value > schema["maximum"]:
        problems.append(say("schema.range", path=path, low=schema.get("minimum"), high=schema.get("maximum")))
    size = len(value) if isinstance(value, (str, list)) else None
    for key, ok in (("minLength", lambda n: size >= n), ("maxLength", lambda n: size <= n),
                    ("minItems", lambda n: size >= n), ("maxItems", lambda n: size <= n)):
        if key in schema and not ok(schema[key]):
            problems.append(say("schema.length", path=path, key=key, limit=schema[key]))
    if kind == "object":
        problems += _validate_object(schema, value, path, say)
    if kind == "array" and "items" in schema:
        for i, item in enumerate(value):
            problems += validate(schema["items"], item, f"{path}[{i}]", say)
    return problems


def closed(schema):
    """A tool's arguments schema, closed: no field beyond its `properties`, whatever its `additionalProperties`
    says (an empty `properties` takes none). Its properties' own schemas are left as they are."""
    return {**schema, "additionalProperties": False} if isinstance(schema, dict) else schema


def _validate_object(schema, value, path, say):
    """An object's fields: a field the schema does not define is refused wherever the schema lists its
    `properties` (it would run unseen: never shown, never checked), unless `additionalProperties` allows it
    (true, or a schema the field must meet); an object schema with no properties is free-form."""
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", not props)
    problems = [say("schema.required", path=path, key=k) for k in schema.get("required", []) if k not in value]
    for key, item in value.items():
        if key in props:
            problems += validate(props[key], item, f"{path}.{key}", say)
        elif isinstance(extra, dict):
            problems += validate(extra, item, f"{path}.{key}", say)
        elif extra is not True:
            problems.append(say("schema.extra", path=path, key=key, allowed=", ".join(props) or say("schema.no_fields")))
    return problems


def normalise(schema, value):
    """`value` with every string that is ASCII in its compatibility form (dates, ids, choices,
    numbers written full-width: ２０２６-１０-０１, ＸＡ-００１) in that ASCII form from here on."""
    kind = schema.get("type")
    if kind == "string" and isinstance(value, str) and not value.isascii():
        plain = unicodedata.normalize("NFKC", value)
        return plain.strip() if plain.isascii() else value
    if kind == "object" and isinstance(value, dict):
        props, extra = schema.get("properties", {}), schema.get("additionalProperties")
        return {k: normalise(props[k], v) if k in props else normalise(extra, v) if isinstance(extra, dict) else v
                for k, v in value.items()}
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


def cut(text, limit, say=ZH):
    """Head and tail of a long text, with a note of how much was dropped."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 3
    return text[:head] + say("cut.text", dropped=len(text) - head - tail) + text[-tail:]


def fit(result, limit, say=ZH):
    """A JSON object result whose encoding fits `limit` characters, still a JSON object: its long
    strings are cut head-and-tail and its long lists shortened, with a note of what was dropped.
    What memory absorbs and what the tool message holds are this same object."""
    text = json.dumps(result, ensure_ascii=False)
    if len(text) <= limit:
        return result
    for size, items in ((limit * 3 // 4, 200), (limit // 4, 100), (2000, 50), (500, 20), (120, 10), (40, 3)):
        shrunk = _fitted(result, size, items, say)
        if len(json.dumps(shrunk, ensure_ascii=False)) <= limit:
            break
    note = say("cut.result", size=len(text), limit=limit)
    shrunk = dict(shrunk, _cut=note) if isinstance(shrunk, dict) else {"value": shrunk, "_cut": note}
    if len(json.dumps(shrunk, ensure_ascii=False)) > limit:          # too many keys even so: its text, cut
        shrunk = {"_cut": note, "text": cut(text, max(100, limit - 200), say)}
    return shrunk


def wrapped(value):
    """A tool's result as the JSON object its tool message holds: an object as it is, any other JSON value
    (a string, a list, a number) as {"value": it}; texts/stated.returned reads it back as the tool returned it."""
    return value if isinstance(value, dict) else {"value": value}


COMPACT = (",", ":")     # a tool message's JSON: no spaces, which the model would pay for in every request


def settled(result, limit, say=ZH):
    """A result as the record holds it: fitted to `limit` and encoded once (compact), strict JSON
    (no NaN) of valid Unicode (lone surrogates replaced). Returns (object, text), the object being
    exactly what the text decodes to (memory absorbs it, the tool message says it). Objects of
    other types are written as their text; Unencodable when JSON cannot hold the result at all."""
    try:
        text = json.dumps(result, ensure_ascii=False, default=str, separators=COMPACT, allow_nan=False)
    except Exception as exc:            # TypeError, ValueError, RecursionError, or a str() that raised
        raise Unencodable(_why(exc)) from None
    text = valid_text(text)
    if len(text) > limit:
        text = json.dumps(fit(json.loads(text), limit, say), ensure_ascii=False, separators=COMPACT)
    return json.loads(text), text


STRICT_DEPTH = 200      # containers nested deeper than this are written as null in a strict form


def strict(value):
    """`value` in a form JSON can hold, and where it had to change: (value, ["where=what", ...]). NaN and the
    infinities become null, a key that is not a string, number, true, false or null its text, a container met
    again inside itself (a cycle), nesting past STRICT_DEPTH and an int too long to write become null, any
    other object its text (as `settled` writes it); tuples are lists. The same value when nothing changed."""
    changed: list[str] = []
    return _strict(value, "", changed, set(), 0), changed


def _strict(value, where, changed, inside, depth):
    if isinstance(value, float) and not math.isfinite(value):
        changed.append(f"{where or '.'}={json.dumps(value)}")
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            str(value)
        except ValueError:                     # more digits than int -> str converts
            changed.append(f"{where or '.'}=<int of {value.bit_length()} bits>")
            return None
        return value
    if value is None or isinstance(value, (str, bool, float)):
        return value
    if not isinstance(value, (dict, list, tuple)):
        try:
            return str(value)
        except Exception:
            changed.append(f"{where or '.'}=<{type(value).__name__}>")
            return None
    if id(value) in inside or depth >= STRICT_DEPTH:
        changed.append(f"{where or '.'}=<{'cycle' if id(value) in inside else 'too deep'}>")
        return None
    inside.add(id(value))
    try:
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                name = _key_text(key, where, changed)
                out[name] = _strict(item, f"{where}.{name}" if where else name, changed, inside, depth + 1)
            return out
        return [_strict(item, f"{where}[{i}]", changed, inside, depth + 1) for i, item in enumerate(value)]
    finally:
        inside.discard(id(value))


def _key_text(key, where, changed):
    """A key as JSON writes it: a string as it is, a number, true, false or null as json.dumps converts it, any
    other key its text (noted)."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int)) or isinstance(key, float) and math.isfinite(key):
        return json.dumps({key: 0})[2:-4]
    try:
        text = str(key)
    except Exception:
        text = type(key).__name__
    changed.append(f"{where or '.'}<key {text[:40]}>")
    return text


def _unencodable(value):
    """Why JSON cannot encode `value` as it is (no conversions), or None."""
    try:
        json.dumps(value, allow_nan=False)
    except Exception as exc:
        return _why(exc)
    return None


def _why(exc):
    """An exception as one short line, even when its own str() fails."""
    try:
        text = str(exc)
    except Exception:
        text = ""
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_STDLIB = tuple(os.path.abspath(p) + os.sep for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]})


def told_at(exc: BaseException) -> str:
    """A failure of the user's own code (an offline model, a function model, a hook) as one line naming where it
    happened: "agent.py:8: IndexError: list index out of range". Where: the innermost frame of its traceback that
    is neither this package's nor the standard library's (the user's line that called into either), else the
    innermost one outside this package, else the innermost; a path under the working directory is said relative to it."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if not os.path.abspath(f.filename).startswith(_PACKAGE + os.sep)]
    theirs = [f for f in ours if not os.path.abspath(f.filename).startswith(_STDLIB)]
    found = theirs or ours or list(frames)
    return (f"{_shown_path(found[-1].filename)}:{found[-1].lineno}: " if found else "") + _why(exc)


def defined_at(fn: object) -> str:
    """Where a function of the user's was defined ("agent.py:12"), for a failure that has no traceback (it
    returned what it must not); its repr when that cannot be told."""
    code = getattr(fn, "__code__", None) or getattr(getattr(fn, "__call__", None), "__code__", None)
    return f"{_shown_path(code.co_filename)}:{code.co_firstlineno}" if code else repr(fn)[:100]


def _shown_path(path):
    try:
        relative = os.path.relpath(path)
    except ValueError:                  # another drive (Windows)
        return path
    return path if relative.startswith(os.pardir) else relative


SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(value):
    """`value` (a string, or lists and objects of them) as valid Unicode: lone surrogates, which no
    UTF-8 can carry, become U+FFFD (a surrogate pair written as two halves becomes its character).
    The same object when there is nothing to replace."""
    if isinstance(value, str):
        if not SURROGATE.search(value):
            return value
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        fixed = [valid_text(v) for v in value]
        return fixed if any(a is not b for a, b in zip(fixed, value)) else value
    if isinstance(value, dict):
        mapped = {valid_text(k): valid_text(v) for k, v in value.items()}
        return mapped if list(mapped) != list(value) or any(mapped[k] is not v for k, v in value.items()) else value
    return value


def _fitted(value, size, items, say):
    if isinstance(value, str):
        return cut(value, size, say)
    if isinstance(value, list):
        kept = [_fitted(v, size, items, say) for v in value[:items]]
        return kept + ([say("cut.items", count=len(value) - items)] if len(value) > items else [])
    if isinstance(value, dict):
        return {k: _fitted(v, size, items, say) for k, v in list(value.items())[:items * 2]}
    return value


HIDDEN = "***"                                   # what a secret is shown as
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]*@")     # scheme://user:password@ in a text


def redacted_url(url):
    """`url` with everything between its `scheme://` and the last `@` after it (a user name and password)
    as ***; any other value as it is. Hides too much rather than too little: an `@` in a path hides the host."""
    if not isinstance(url, str):
        return url
    head, sep, rest = url.partition("://")
    return f"{head}{sep}{HIDDEN}@{rest.rpartition('@')[2]}" if sep and "@" in rest else url


def scrubbed(text, secrets=()):
    """`text` (a line about to be shown) with every URL's user name and password and every one of `secrets`
    (values the caller knows are secret: a token, a header value) as ***."""
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{HIDDEN}@", str(text))
    for secret in sorted({s for s in secrets if isinstance(s, str) and s.strip()}, key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return text

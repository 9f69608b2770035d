"""The shapes of untrusted JSON, and the first place a value breaks its shape: what the transcript readers
(judge/formats.py) check each field they use against, so that a damaged file is one error naming the field, never a
field read as absent or as another type.

A shape is a kind ("text", "flag", "count", "number", "double", "id", "any", "otlp_value"), ("null", shape): null
or that shape, [shape]: a list of it, ("table", shape): an object whose every value has it, {field: shape}: an
object whose fields have theirs (a field whose name ends in "?" may be absent; any other field is not read), or
("by", field, {value: shape}): an object whose shape is the one its field's value names (any object otherwise).
The special shapes (a message's content, a tool call, an OTLP value) are the readers' own: they register a checker
under their name in SPECIAL, which `wrong` calls with the value and its place.

Invariants: imports no project module but the judge's catalogue judge/texts.py (what a value must be is a Said);
pure functions of the value and its shape.
"""
import math
from typing import Any, Callable

from .texts import Joined, Said

SPECIAL: dict[str, Callable[[Any, tuple], Any]] = {}     # name -> checker(value, where): what `wrong` returns


KINDS = {"text": lambda v: isinstance(v, str), "flag": lambda v: isinstance(v, bool),
         "count": lambda v: isinstance(v, int) and not isinstance(v, bool),
         "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
         "double": lambda v: isinstance(v, (int, float, str)) and not isinstance(v, bool),    # "NaN" in proto JSON
         "id": lambda v: isinstance(v, str) or isinstance(v, int) and not isinstance(v, bool),
         "any": lambda v: True}


class Damaged(Exception):
    """A field that does not have its shape: (where, what it must be: a Said, or None when it is missing). read_all
    says it as Unreadable naming the file and the field."""


def check(value, shape, where):
    """Damaged naming the field when `value` (at `where`) does not have `shape`."""
    found = wrong(value, shape, where)
    if found:
        raise Damaged(*found)


def wrong(value, shape, where):
    """(where, what it must be: a Said, None when it is missing) of the first part of `value` that does not have
    `shape`; None when all of it does."""
    if isinstance(shape, str):
        if shape in SPECIAL:
            return SPECIAL[shape](value, where)
        return None if KINDS[shape](value) else (where, Said(f"shape.{shape}"))
    if isinstance(shape, tuple) and shape[0] == "by":       # ("by", field, {its value: shape}[, otherwise])
        field, table, otherwise = shape[1], shape[2], shape[3] if len(shape) > 3 else {}
        chosen = table.get(value[field]) if isinstance(value, dict) and isinstance(value.get(field), str) else None
        return wrong(value, chosen if chosen is not None else otherwise, where)
    if isinstance(shape, tuple) and shape[0] == "null":
        found = None if value is None else wrong(value, shape[1], where)
        return (where, Said("shape.or_null", expected=found[1])) if found and found[0] == where and found[1] else found
    if isinstance(shape, list):
        if not isinstance(value, list):
            return where, Said("shape.list")
        return next(filter(None, (wrong(item, shape[0], (*where, i)) for i, item in enumerate(value))), None)
    if not isinstance(value, dict):
        return where, Said("shape.object")
    if isinstance(shape, tuple):                    # ("table", shape)
        return next(filter(None, (wrong(item, shape[1], (*where, key)) for key, item in value.items())), None)
    for name, inner in shape.items():
        key = name.rstrip("?")
        if key not in value:
            if not name.endswith("?"):
                return (*where, key), None
            continue
        found = wrong(value[key], inner, (*where, key))
        if found:
            return found
    return None


def field(where):
    """A field's place as an error names it: resourceSpans[0].scopeSpans[0].spans[3].attributes[2].value, with the
    item of a JSONL file or the message of a span said in words before what follows."""
    pieces: list[Said | str] = [] if where and isinstance(where[0], Said) else [Said("field.plain")]
    text = ""
    for key in where:
        if isinstance(key, Said):
            pieces += [text, key] if text else [key]
            text = ""
        else:
            text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return Joined([*pieces, text] if text else pieces, sep=None)

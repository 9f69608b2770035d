"""A tool's arguments read from a plain Python function (calls.Tool.from_function): its description and the JSON
Schema of its arguments, from its signature, its type hints and its docstring.

- Hints: `str`, `int`, `float`, `bool` → their JSON types; `Literal[...]` of one type → that type with an `enum`;
  `list[X]` → an array of X (bare `list`: of anything); `dict[str, X]` → an object of X values (bare `dict`: any);
  a TypedDict or a dataclass → an object with its fields as properties (required: the TypedDict's required keys,
  the dataclass's fields without a default), no other property; `X | None` (`Optional[X]`) → X, not required,
  and the parameter (or dataclass field) must have a default; `Annotated[X, "text", {...}]` → X with that
  description and those JSON Schema keywords (`minimum`, `pattern`, ...).
- Required: the parameters without a default. A default JSON can write and X's schema accepts is shown (`default`).
- Docstring, Google style: its text up to the first section (`Args:`, `Returns:`, `Raises:`, ...) is the tool's
  description; each `name (type): text` entry of `Args:` (its indented lines continuing it) describes that
  argument, unless an Annotated text already does. A TypedDict's or a dataclass's own docstring describes its
  object, and its `Attributes:` entries its fields.
- The parameters the loop supplies (`takes`) are no arguments: the model never sees them.
- A dataclass argument reaches the function as an instance (built from the validated JSON object, nested ones and
  those in lists too): `read` then gives a function that builds them and calls the original.

Anything else is a problem naming the parameter — a hint not listed above (`dict[str]`, `list[int, str]` too), a hint
that cannot be read (a forward reference that does not parse or fails to evaluate, one nested too deep: whatever
reading it raises), a missing hint, `*args`, a
positional-only parameter, an Optional without a default, a reserved name not in `takes`, an `Args:` entry naming
no parameter — never a schema that silently accepts anything.

Invariants: imports only values.py (a default is checked against its schema there); pure functions; no state.
"""
import dataclasses
import functools
import inspect
import json
import re
import types
import typing
from typing import Any, Callable, Literal, Union, get_args, get_origin

from .values import validate

SUPPORTED = ("str, int, float, bool, Literal[...], list[X], dict[str, X], a TypedDict, a dataclass, "
             "X | None with a default, Annotated[X, ...]")
PRIMITIVES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
SECTIONS = ("args", "arguments", "parameters", "params", "attributes", "returns", "return", "yields", "yield",
            "raises", "raise", "examples", "example", "note", "notes", "see also", "warning", "warnings", "todo",
            "references")
ENTRIES = ("args", "arguments", "parameters", "params", "attributes")     # sections whose entries name a field


class Unsupported(Exception):
    """A hint (or a part of one) no JSON Schema is read from; the message says which and what would do."""


def read(fn: Callable[..., Any], takes: tuple = (), reserved: tuple = ()) -> tuple[str, dict, Callable[..., Any],
                                                                               list[str]]:
    """A function read as a tool: (description, parameters, the function to call, problems).

    Args:
        fn: the tool's function (plain or `async def`; a bound method or a callable object too).
        takes: the parameters the loop supplies, left out of the schema.
        reserved: parameter names only the loop may supply: each one not in `takes` is a problem.

    Returns:
        The docstring's description ("" when it has none), the JSON Schema of the arguments, `fn` itself or, when
        an argument is a dataclass, a function that builds it and calls `fn`, and the problems found, each naming
        its parameter (empty when the function can be a tool).
    """
    try:
        params = list(inspect.signature(fn).parameters.values())
    except Exception as exc:                  # not a function, or one whose signature breaks when read
        return "", {"type": "object", "properties": {}}, fn, [f"fn has no signature to read ({_failure(exc)})"]
    hints, unread = _hints(fn)
    problems: list[str] = []
    description, entries = docstring(_doc(fn))
    props, required, builders = {}, [], {}
    for p in params:
        if p.kind is p.VAR_KEYWORD or p.name in takes:
            continue
        where = f"parameter {p.name!r}"
        if p.kind is p.VAR_POSITIONAL or p.kind is p.POSITIONAL_ONLY:
            problems.append(f"{where} is {'*' + p.name if p.kind is p.VAR_POSITIONAL else 'positional-only'}: "
                            "a tool is called with its arguments by name")
        elif p.name in reserved:
            problems.append(f"{where} is supplied by the loop, never by the model: add takes=({p.name!r},)")
        elif p.name in unread:
            problems.append(f"{where}: its type hint cannot be read ({unread[p.name]})")
        elif p.name not in hints:
            problems.append(f"{where} has no type hint (one of {SUPPORTED})")
        else:
            try:
                props[p.name] = _field(hints[p.name], p.default is not p.empty, p.default, entries.get(p.name))
                built = _builder(_bare(hints[p.name]))
            except Unsupported as exc:
                problems.append(f"{where}: {exc}")
                continue
            except Exception as exc:          # a hint whose reading breaks (one nested too deep, say)
                problems.append(f"{where}: its type hint cannot be read ({_failure(exc)})")
                continue
            if p.default is p.empty:
                required.append(p.name)
            if built is not None:
                builders[p.name] = built
    named = {p.name for p in params}
    problems += [f"the docstring's Args: names {name!r}, which is not a parameter of fn" for name in entries
                 if name not in named]
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return description, schema, _building(fn, builders), problems


def _doc(fn):
    """`fn`'s docstring; a partial's: its function's; a callable object's: its `__call__`'s, else its class's."""
    if inspect.isroutine(fn):
        return inspect.getdoc(fn)
    inner = getattr(fn, "func", None)
    if callable(inner):
        return inspect.getdoc(inner)
    own = getattr(getattr(type(fn), "__call__", None), "__doc__", None)      # not one inherited from object
    return inspect.cleandoc(own) if isinstance(own, str) and own.strip() else inspect.getdoc(fn)


def _hints(fn):
    """The type hints of `fn`'s parameters, resolved (a callable object's or a partial's: its function's), and why
    each of those that cannot be resolved cannot ({parameter: the failure})."""
    for target in (fn, getattr(fn, "func", None), getattr(type(fn), "__call__", None)):
        if target is None:
            continue
        try:
            return typing.get_type_hints(target, include_extras=True), {}
        except TypeError:
            if not (inspect.isroutine(target) and isinstance(getattr(target, "__annotations__", None), dict)):
                continue                      # not a function (a callable object): its function's hints
            return _one_by_one(target)
        except Exception:                     # a forward reference that does not parse, nests too deep, fails
            return _one_by_one(target)
    return {}, {}


def _one_by_one(target):
    """The hints of a function whose hints cannot all be resolved: each parameter's on its own, and why each that
    cannot be resolved cannot."""
    hints, unread = {}, {}
    scope = getattr(inspect.unwrap(target), "__globals__", None) if inspect.isfunction(inspect.unwrap(target)) \
        else getattr(target, "__globals__", None)
    for name, hint in dict(target.__annotations__).items():
        if name == "return":
            continue
        try:
            hints[name] = typing.get_type_hints(_Hinted({name: hint}), globalns=scope, include_extras=True)[name]
        except Exception as exc:
            unread[name] = _failure(exc)
    return hints, unread


class _Hinted:
    """One parameter's hint alone, as typing.get_type_hints reads an object's annotations."""

    def __init__(self, annotations):
        self.__annotations__ = annotations


def _failure(exc):
    """An exception raised while reading a hint, in a problem's words (short: a hint may be long)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text[:117] + '...' if len(text) > 120 else text}"


def _field(hint, has_default, default, text, seen=()):
    """The schema of one argument (or one field of an object): its hint's, with its description and default."""
    inner, optional = _unoptional(hint)
    if optional and not has_default:
        raise Unsupported(f"{_named(hint)} may be left out, so it needs a default (= None)")
    prop = schema_of(inner, seen)
    if text and not _annotated_text(inner):
        prop["description"] = text
    if has_default and default is not None and _writable(default) and not validate(prop, default):
        prop["default"] = default
    return prop


def schema_of(hint: Any, seen: tuple = ()) -> dict[str, Any]:
    """The JSON Schema of a value of type `hint` (Optional aside: see _field); Unsupported otherwise.

    Args:
        hint: a type hint, resolved (no strings).
        seen: the TypedDicts and dataclasses being read around it (one that contains itself is refused).

    Returns:
        A new JSON Schema dict.
    """
    origin, args = get_origin(hint), get_args(hint)
    if origin is typing.Annotated:
        return _annotated(args[0], args[1:], seen)
    if origin in (typing.Required, typing.NotRequired):
        return schema_of(args[0], seen)
    if isinstance(hint, type) and hint in PRIMITIVES:
        return {"type": PRIMITIVES[hint]}
    if origin is Literal:
        return _literal(args)
    if hint is list or origin is list:
        if len(args) > 1:
            raise Unsupported(f"{_named(hint)}: a list holds one type of item (list[X])")
        return {"type": "array", "items": schema_of(args[0], seen)} if args else {"type": "array"}
    if hint is dict or origin is dict:
        if len(args) not in (0, 2):
            raise Unsupported(f"{_named(hint)}: a dict hint names its keys and its values (dict[str, X])")
        if args and args[0] is not str:
            raise Unsupported(f"{_named(hint)}: the keys of a JSON object are strings (dict[str, X])")
        return {"type": "object", "additionalProperties": schema_of(args[1], seen)} if args else {"type": "object"}
    if isinstance(hint, type) and (typing.is_typeddict(hint) or dataclasses.is_dataclass(hint)):
        if hint in seen:
            raise Unsupported(f"{_named(hint)} contains itself, which no JSON Schema of ours can say")
        return _record(hint, (*seen, hint))
    if origin in (Union, types.UnionType):
        raise Unsupported(f"{_named(hint)}: a union is not supported (only X | None, for an argument with a default)")
    raise Unsupported(f"{_named(hint)} is not supported (use one of {SUPPORTED})")


def _annotated(base, metadata, seen):
    out = schema_of(base, seen)
    for item in metadata:
        if isinstance(item, str):
            out["description"] = item
        elif isinstance(item, dict) and all(isinstance(k, str) for k in item) and _writable(item):
            out.update(item)
        else:
            raise Unsupported(f"Annotated metadata {item!r}: give a description (str) or JSON Schema keywords (dict)")
    return out


def _literal(values):
    if all(isinstance(v, str) for v in values):
        kind = "string"
    elif all(isinstance(v, bool) for v in values):
        kind = "boolean"
    elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        kind = "integer"
    else:
        raise Unsupported(f"Literal{list(values)!r}: its values must be all strings, all integers or all booleans")
    return {"type": kind, "enum": list(values)}


def _record(cls: Any, seen: tuple) -> dict[str, Any]:
    """A TypedDict's or a dataclass's object schema: its fields, required ones, no others, its docstring."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:
        raise Unsupported(f"{_named(cls)}'s type hints cannot be resolved ({_failure(exc)})") from None
    description, entries = docstring(_own_doc(cls))
    props, required = {}, []
    if dataclasses.is_dataclass(cls):
        fields = [(f.name, f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING,
                   None if f.default is dataclasses.MISSING else f.default) for f in dataclasses.fields(cls) if f.init]
    else:
        fields = [(name, name not in cls.__required_keys__, None) for name in hints]
    for name, optional, default in fields:
        hint = hints[name]
        if not dataclasses.is_dataclass(cls) and _unoptional(_bare_required(hint))[1]:
            optional = True                       # a TypedDict key that may be None may be left out
        try:
            props[name] = _field(_bare_required(hint), optional, default, entries.get(name), seen)
        except Unsupported as exc:
            raise Unsupported(f"{_named(cls)}.{name}: {exc}") from None
        if not optional:
            required.append(name)
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    if description:
        out["description"] = description
    return out


def _own_doc(cls):
    """A class's own docstring, not the one dataclasses writes (its signature) or one inherited."""
    doc, name = cls.__dict__.get("__doc__"), getattr(cls, "__name__", "")
    if not isinstance(doc, str) or (dataclasses.is_dataclass(cls) and doc.startswith(name + "(")):
        return ""
    return doc


def _unoptional(hint):
    """(X, True) for X | None (Optional[X], also inside Annotated), else (hint, False)."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is typing.Annotated:
        inner, optional = _unoptional(args[0])
        return (typing.Annotated[(inner, *args[1:])], True) if optional else (hint, False)
    if origin in (Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return rest[0], True
    return hint, False


def _bare_required(hint):
    """A TypedDict field's hint without Required[...] / NotRequired[...] around it."""
    return get_args(hint)[0] if get_origin(hint) in (typing.Required, typing.NotRequired) else hint


def _bare(hint):
    """`hint` without Annotated, Required, NotRequired and Optional around it."""
    while True:
        origin = get_origin(hint)
        if origin in (typing.Annotated, typing.Required, typing.NotRequired):
            hint = get_args(hint)[0]
            continue
        inner, optional = _unoptional(hint)
        if not optional:
            return hint
        hint = inner


def _annotated_text(hint):
    return get_origin(hint) is typing.Annotated and any(isinstance(m, str) for m in get_args(hint)[1:])


def _writable(value):
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def _named(hint):
    """A hint as a person reads it: `str`, `datetime.date`, `list[int] | None`."""
    if isinstance(hint, type) and not get_args(hint):
        return hint.__qualname__ if hint.__module__ in ("builtins", "typing") else \
            f"{hint.__module__}.{hint.__qualname__}"
    return str(hint).replace("typing.", "")


# ---- dataclass arguments, built ----

def _builder(hint):
    """How the JSON value of `hint` becomes what the function expects (a dataclass instance, at any depth), or None
    when it is used as it comes."""
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        hints = typing.get_type_hints(hint)
        inner = {f.name: _builder(_bare(hints[f.name])) for f in dataclasses.fields(hint) if f.init}
        return functools.partial(_instance, hint, {k: b for k, b in inner.items() if b is not None})
    origin, args = get_origin(hint), get_args(hint)
    if origin is list and args:
        item = _builder(_bare(args[0]))
        return None if item is None else functools.partial(_each, item)
    if origin is dict and len(args) == 2:
        value = _builder(_bare(args[1]))
        return None if value is None else functools.partial(_values, value)
    if isinstance(hint, type) and typing.is_typeddict(hint):
        hints = typing.get_type_hints(hint)
        inner = {name: _builder(_bare(h)) for name, h in hints.items()}
        inner = {k: b for k, b in inner.items() if b is not None}
        return functools.partial(_keys, inner) if inner else None
    return None


def _instance(cls, inner, value):
    return cls(**_keys(inner, value)) if isinstance(value, dict) else value


def _keys(inner, value):
    return {k: inner[k](v) if k in inner and v is not None else v for k, v in value.items()} \
        if isinstance(value, dict) else value


def _each(item, value):
    return [item(v) if v is not None else v for v in value] if isinstance(value, list) else value


def _values(inner, value):
    return {k: inner(v) if v is not None else v for k, v in value.items()} if isinstance(value, dict) else value


def _building(fn, builders):
    """`fn`, or, when some arguments are built (dataclasses), a function of the same signature and kind (async
    stays async) that builds them and calls `fn`."""
    if not builders:
        return fn

    def built(kwargs):
        return {k: builders[k](v) if k in builders and v is not None else v for k, v in kwargs.items()}

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def call_async(**kwargs):
            return await fn(**built(kwargs))
        return call_async

    @functools.wraps(fn)
    def call(**kwargs):
        return fn(**built(kwargs))
    return call


# ---- docstrings ----

def docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """A Google-style docstring read: (its text up to the first section, as paragraphs of one line each; the
    entries of its `Args:` and `Attributes:` sections, {name: text}).

    Args:
        doc: the docstring (None or "" for none).

    Returns:
        The description and the entries (a `*args` or `**kwargs` entry is left out).
    """
    prose, entries = [], {}
    section, indent, current = None, None, None
    for line in inspect.cleandoc(doc or "").splitlines():
        header = re.fullmatch(r"([A-Za-z][A-Za-z ]*):\s*", line)
        if header and header.group(1).strip().lower() in SECTIONS:
            section, indent, current = header.group(1).strip().lower(), None, None
            continue
        if section is None:
            prose.append(line.strip())
        elif section in ENTRIES and line.strip():
            depth = len(line) - len(line.lstrip())
            entry = re.fullmatch(r"\s*(\*{0,2})([A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*:\s*(.*)", line)
            if entry and (indent is None or depth <= indent):
                indent, current = depth, None if entry.group(1) else entry.group(2)
                if current:
                    entries[current] = entry.group(3).strip()
            elif current and depth > (indent or 0):
                entries[current] = f"{entries[current]} {line.strip()}".strip()
    paragraphs = " ".join(line or "\n" for line in prose).split("\n")
    return "\n".join(" ".join(p.split()) for p in paragraphs if p.strip()), entries

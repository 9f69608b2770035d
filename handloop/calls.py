"""The data every layer passes around: a tool's declaration (`Tool`, with its `Source`s and `Rule`s), a call, its
outcome, the error a tool raises, the user's interrupt. An agent's declaration is agents.py's, an MCP server's
mcp/servers.py's; the measures they share (JSON Schema validation, character counting, cutting, settling a result) are
values.py's.

A tool is checked when it is made, so that no declaration mistake (a misspelt kind, an effect kind, a context name,
a Source naming an argument the tool lacks) can make a guard allow more than was meant: each is a DeclarationError
(errors.py; a ValueError too) naming the tool, the field and the allowed values. A tool is declared with its
hand-written JSON Schema (`Tool(...)`) or read from a plain function (`Tool.from_function`: signature.py reads the
schema from its type hints and docstring); an effect may be a dict, a Source written by keywords (`Source.of`).
`declared_tool` is how a run records a tool for the judge (a write's choices with the schema's enum and aliases,
its count units).

A `Source` names a tool's results, or the user's own messages (`Source.user`, the reserved source name USER: no
tool of an agent that uses it may be called "user"); a tool declared `outside=True` (its arguments leave the
user's trust boundary: a URL fetched, a search, a message sent) names a Source for every argument that can carry
text, and none of them is its own results.

A tool's arguments are closed: a call with an argument outside its schema's `properties` never runs, whatever the
schema's `additionalProperties` says (an empty `properties` takes none), unless the tool declares
`open_arguments=True` (then `additionalProperties` decides, as JSON Schema does); an outside tool never may.

Invariants: imports only texts/__init__.py (the catalogue, which imports only leaves), the leaf texts/stated.py (how a
source's argument paths read; USER), values.py, errors.py and signature.py (which imports only values.py), so any layer
may import it; holds no state; each declaration fact is defined here once. Texts come from the caller's catalogue (`say`,
default Chinese).
"""
import dataclasses
import functools
import inspect
import json
import re
import signal
import threading
from typing import Any, Callable, Iterable, Mapping

from . import signature, texts
from .errors import DeclarationError
from .texts import stated
from .values import _unencodable, told_at

ZH = texts.ZH_TEXTS
KINDS = ("read", "state", "write")                   # a tool's kind
EFFECTS = ("id", "choice", "date", "count")          # how a proposal states a write's effect argument
CONTEXT = ("run_id", "idempotency_key", "plan", "tool_names", "done_tools")    # what a tool may take besides its arguments


class ToolError(Exception):
    """A failure the model can act on (bad value, unknown city, sold out...)."""


class Interrupted(KeyboardInterrupt):
    """The user stopping a run (Ctrl-C, SIGTERM), as the command line's signal handlers raise it."""


class HookError(Exception):
    """A tool's own memory or proposal hook (absorb, render, describe) raised, or returned what it must
    not: the agent's code failed, not the loop. The run stops (reason "hook"), its record kept; once
    the code is fixed, --resume goes on."""

    def __init__(self, tool: str, hook: str, error: str) -> None:
        super().__init__(texts.Said("stop.hook", tool=tool, hook=hook, error=error))
        self.tool, self.hook, self.error = tool, hook, error

    def __str__(self) -> str:
        return f"tool {self.tool!r}: {self.hook} failed: {self.error}"


def hooked(tool: str, hook: str, fn: Callable, *args: Any, returns: type | None = None) -> Any:
    """`fn(*args)`, a tool's hook; any failure of it (or, `returns` given, a value of another type) is
    a HookError naming the tool, the hook and where it failed (file:line, values.told_at). The user
    stopping the run passes through."""
    try:
        value = fn(*args)
    except BaseException as exc:
        if by_user(exc):
            raise
        raise HookError(tool, hook, told_at(exc)[:300]) from None
    if returns is not None and not isinstance(value, returns):
        raise HookError(tool, hook, f"returned {type(value).__name__}, not {returns.__name__}")
    return value


def by_user(exc):
    """Whether `exc`, caught around a tool, is the user stopping the run rather than the tool's own
    failure: an Interrupted, or a KeyboardInterrupt in the main thread while Python's own Ctrl-C
    handler is in place (nobody told the two apart there). Anything else a tool raises, SystemExit
    and a KeyboardInterrupt of its own included, is that tool's failure."""
    if isinstance(exc, Interrupted):
        return True
    return isinstance(exc, KeyboardInterrupt) and threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGINT) is signal.default_int_handler


@dataclasses.dataclass(frozen=True)
class Source:
    """Provenance: the arguments `args` of a call must equal (or, `near`, equal to 4 decimals) the
    fields `fields` of one record found at `path` in an earlier successful result of `tool`.
    `path` is dotted, `[]` stepping into a list, `*` into the values of a mapping: "items[]", "data.slots[]",
    "payment_methods.*" (records keyed by id), or "" for the result itself; the field "*" of a record reached by a
    last `*` step is its key. An argument may step into a list the same way: "item_ids[]" (each element must be
    sourced on its own), "passengers[].name" (that field of each element). `Source.of(tool, "order_id", path=...)`
    writes one by keywords; `Source.any(a, b)`: any one of these sources holds (two sources naming one argument must
    both hold); a mistake in them is a DeclarationError. texts/stated.py reads them, for the guards and the judge.
    `Source.user("iban")`: the argument comes from the user's own messages instead (tool USER, "user")."""
    args: tuple
    tool: str
    fields: tuple
    path: str = ""
    near: bool = False
    alternatives: tuple = ()                  # Source.any: the sources any one of which must hold

    def __post_init__(self) -> None:
        for name in ("args", "fields", "alternatives"):
            value = getattr(self, name)
            object.__setattr__(self, name, (value,) if isinstance(value, str) and name != "alternatives" else
                               tuple(value) if isinstance(value, list) else value)
        problems = _source_problems(self)
        if problems:
            raise DeclarationError(f"source {self.tool!r}: " + "; ".join(problems))

    @classmethod
    def any(cls, *sources: "Source") -> "Source":
        """A source that holds when any one of `sources` does ("the original payment method, or a gift card"):
        each a Source of the same arguments (its own tool, fields, path and near); alternatives nested in one
        are its own alternatives. A mistake in them is a DeclarationError."""
        flat = tuple(o for s in sources for o in (s.options() if isinstance(s, Source) else (s,)))
        problems = [f"alternative {s!r} must be a Source" for s in flat if not isinstance(s, Source)]
        if not flat:
            problems.append("Source.any needs at least one source")
        elif not problems and any(sorted(s.args) != sorted(flat[0].args) for s in flat):
            problems.append("alternatives must source the same arguments (got "
                            + ", ".join(repr(list(s.args)) for s in flat) + ")")
        if problems:
            raise DeclarationError("Source.any: " + "; ".join(problems))
        first = flat[0]
        return cls(first.args, first.tool, first.fields, first.path, first.near, flat if len(flat) > 1 else ())

    @classmethod
    def user(cls, *args: str) -> "Source":
        """The arguments `args` must each appear in what the user wrote before the call (an IBAN, a URL, an
        address the user typed): in one of the user's own messages, never in a tool's result, the model's text
        or a message the loop sent (texts/stated.py `typed` says how a value is found in a text). An alternative
        like any other: `Source.any(Source.user("url"), Source.of("bookmarks", "url"))`."""
        return cls(tuple(args), stated.USER, tuple(args))

    @property
    def from_user(self) -> bool:
        """Whether this source is the user's own messages only (each alternative, if it has any)."""
        return all(o.tool == stated.USER for o in self.options())

    def options(self) -> tuple:
        """The sources any one of which must hold: its alternatives, or itself."""
        return self.alternatives or (self,)

    def declared(self) -> dict[str, Any]:
        """The source as a run records it and texts/stated.py reads it (`any`: its alternatives)."""
        out = {"args": list(self.args), "tool": self.tool, "fields": list(self.fields), "path": self.path,
               "near": self.near}
        if self.alternatives:
            out["any"] = [o.declared() for o in self.alternatives]
        return out

    @classmethod
    def of(cls, tool: str, *names: str | Mapping[str, str], path: str = "", near: bool = False) -> "Source":
        """A source written by keywords: `Source.of("get_order", "order_id")` (the argument order_id must equal
        the field order_id of a get_order result), `Source.of("list_slots", "slot_id", path="slots[]")` (of one
        record in its `slots` list), `Source.of("rooms", {"room_id": "id"})` (the argument and the field named
        differently), `Source.of("locate", "latitude", "longitude", near=True)` (two arguments from one record).

        Args:
            tool: the tool whose earlier successful result the values must come from.
            *names: the arguments, each a name that is both the argument and the result's field, or a mapping
                {argument: field} where they differ; several come from one and the same record.
            path: where the records sit in the result: dotted, `[]` stepping into a list ("slots[]",
                "data.items[]"); "" (the default) is the result itself.
            near: numbers equal to 4 decimals count as equal (coordinates), not only equal values.

        Returns:
            The Source (args, tool, fields, path, near).
        """
        pairs: list[tuple[Any, Any]] = []
        for name in names:
            pairs += list(name.items()) if isinstance(name, Mapping) else [(name, name)]
        return cls(tuple(a for a, _ in pairs), tool, tuple(f for _, f in pairs), path, near)


def _source_problems(source):
    if not isinstance(source.tool, str) or not source.tool:
        return [f"tool must be the name of the tool the values come from (got {source.tool!r})"]
    problems = [f"{name} must be a non-empty list of names (got {value!r})"
                for name, value in (("args", source.args), ("fields", source.fields))
                if not isinstance(value, tuple) or not value or not all(isinstance(v, str) and v for v in value)]
    if not problems and len(source.args) != len(source.fields):
        problems.append(f"args {list(source.args)} and fields {list(source.fields)} must be as many: each argument "
                        "equals one field")
    if not isinstance(source.path, str):
        problems.append(f"path={source.path!r} must be a dotted path such as 'items[]', 'methods.*' or '' (the result "
                        "itself)")
    if not isinstance(source.near, bool):
        problems.append(f"near={source.near!r} must be True or False")
    if not isinstance(source.alternatives, tuple) or not all(isinstance(o, Source) for o in source.alternatives):
        problems.append("alternatives must be Sources (write Source.any(a, b))")
    if not problems and source.tool == stated.USER and (source.fields != source.args or source.path or source.near):
        problems.append("Source.user(...) reads the user's own messages: it names arguments only (no other fields, "
                        "path or near)")
    return problems


@dataclasses.dataclass(frozen=True)
class Rule:
    """A rule of the agent over a call and the run's facts, decided before the call runs (the guard `rule`: a
    call that breaks it is blocked before it becomes a proposal, its reason the tool message the model reads)
    and applied again by --check to the record. `check(args, facts)` returns why a call with these validated
    arguments breaks the rule (a text for the model, in the agent's language), or None when it holds; `facts`
    is a texts.rules.Facts, what the run's tools gave before the call (each successful call's arguments and
    result, by tool). Declared on a Tool, it applies to that tool's calls; on the Agent, to the calls of the
    tools it names in `tools`, or, naming none, to every write. `name` is how the run records it and how
    --check finds it again: the judge runs the code of a rule only when it has it, from the agent given with
    --agent FILE (or, for the built-in Xi'an agent, its own check of the same name)."""
    name: str
    check: Callable
    tools: tuple = ()

    def __post_init__(self) -> None:
        if isinstance(self.tools, list):
            object.__setattr__(self, "tools", tuple(self.tools))
        problems = []
        if not isinstance(self.name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", self.name):
            problems.append(f"name must be 1-64 letters, digits, _ . or - (got {self.name!r})")
        if not callable(self.check):
            problems.append("check must be callable: check(args, facts) -> the reason the call breaks it, or None")
        if not isinstance(self.tools, tuple) or not all(isinstance(t, str) and t for t in self.tools):
            problems.append("tools must be a list of tool names")
        if problems:
            raise DeclarationError(f"rule {self.name!r}: " + "; ".join(problems))


@dataclasses.dataclass(frozen=True)
class Tool:
    """One tool, declared once, in the module that implements it. The loop's layers read this and
    never name a tool: the guards its kind, prerequisites, sources and effect; memory its absorb
    and render; the executor its kind, timeout, inline and fn; compaction its kind and keep; the
    command line its gist.

    `fn(**args, **context)` returns any JSON value (an object is its tool message; a string, a list or a
    number reaches the model as {"value": ...}) or raises ToolError; it may be `async def`.
    `takes` names the context it needs, passed as keyword arguments: `run_id`, `idempotency_key`
    (writes), `plan` (the current plan), `tool_names`, `done_tools` (the tools that succeeded in the run).
    `Tool.from_function(fn, kind=...)` reads the name, the description and `parameters` from a plain
    function instead of their being written by hand; `effect` may be a dict {argument: how}.
    """
    name: str
    description: str
    parameters: dict                          # JSON Schema of the arguments
    fn: Callable | None                       # None: a tool an MCP server runs (toolset.py routes it)
    kind: str = "read"                        # read (may run concurrently) | state (changes the run) | write
    timeout: float | None = None              # seconds; None: the policy's default
    inline: bool = False                      # pure and bounded: runs in the loop's thread, no hop, no timeout
    takes: tuple = ()
    requires: tuple = ()                      # tools that must have succeeded in the run before this one runs
    sources: tuple = ()                       # Source rules: where arguments must come from
    effect: tuple | dict = ()                 # a write's (argument, how a proposal states it): "id" | "choice" |
                                              # "date" | "count" (pairs, or a dict {argument: how}); the
                                              # proposal shown and the idempotency key
    aliases: dict = dataclasses.field(default_factory=dict)   # choice value -> other names users read
    units: dict = dataclasses.field(default_factory=dict)     # count argument (or a number the receipt gives)
                                                              # -> the words after its number
    keep: tuple = ()                          # result fields compaction keeps whole, however long
    outside: bool = False                     # its arguments leave the user's trust boundary (a URL fetched, a
                                              # search, a message sent): every one that can carry text is sourced
    ordered: tuple = ()                       # list effect arguments whose order is part of the write (a route's
                                              # stops); every other list effect is a set of its items
    open_arguments: bool = False              # it takes arguments beyond its schema's `properties` (as its
                                              # `additionalProperties` says); never an outside tool
    absorb: Callable | None = None            # absorb(facts, args, result): a success into this tool's facts
                                              # (add or replace entries; never mutate a value stored before)
    render: Callable | None = None            # render(facts) -> lines of the memory block
    describe: Callable | None = None          # describe(args, facts) -> fields shown with a proposal (facts:
                                              # every tool's facts by namespace)
    gist: Callable | None = None              # gist(result) -> one line on screen
    reconcile: Callable | None = None         # write: reconcile(idempotency_key) -> the receipt stored, or None
    facts: str = ""                           # namespace of memory facts absorb writes (default: the name)
    initial: dict = dataclasses.field(default_factory=dict)   # those facts before any result
    rules: tuple = ()                         # Rule: decided before a call of this tool runs (and by --check)
    shown: dict | None = None                 # the schema the model is shown when the description says the
                                              # rest in words (default: toolset.shown(parameters)); calls are
                                              # validated against `parameters` all the same

    def __post_init__(self) -> None:
        if isinstance(self.effect, Mapping):
            object.__setattr__(self, "effect", tuple(self.effect.items()))
        if isinstance(self.sources, Source):
            object.__setattr__(self, "sources", (self.sources,))
        if isinstance(self.rules, Rule):
            object.__setattr__(self, "rules", (self.rules,))
        for name in ("takes", "requires", "keep"):
            if isinstance(getattr(self, name), str):
                object.__setattr__(self, name, (getattr(self, name),))
        problems = _tool_problems(self)
        if problems:
            raise DeclarationError(f"tool {self.name!r}: " + "; ".join(problems))
        for name in ("takes", "requires", "sources", "effect", "keep", "rules"):
            object.__setattr__(self, name, tuple(tuple(x) if isinstance(x, list) else x for x in getattr(self, name)))

    @property
    def namespace(self) -> str:
        return self.facts or self.name

    def spec(self, parameters: dict | None = None) -> dict[str, Any]:
        """The OpenAI function spec with `parameters` as its schema (default: the declared one, which
        calls are validated against; toolset.shown() makes what the model is shown)."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters if parameters is None else parameters}}

    @classmethod
    def from_function(cls, fn: Callable[..., Any], *, kind: str = "read", name: str | None = None,
                      description: str | None = None, takes: Iterable[str] | str = (),
                      requires: Iterable[str] | str = (), sources: Iterable[Source] | Source = (),
                      effect: Mapping[str, str] | Iterable[tuple[str, str]] = (), timeout: float | None = None,
                      **more: Any) -> "Tool":
        """A tool read from a plain function (or `async def`): its name, its description and the JSON Schema of
        its arguments come from the signature, the type hints and the Google-style docstring (signature.py says
        which hints are read, and how). The parameters in `takes` are supplied by the loop and never shown to the
        model; a dataclass argument reaches `fn` as an instance.

            def refund(order_id: str, idempotency_key: str) -> dict:
                \"\"\"Refund an order.

                Args:
                    order_id: The order's id, as get_order gave it.
                \"\"\"
            Tool.from_function(refund, kind="write", takes=("idempotency_key",), effect={"order_id": "id"},
                               sources=[Source.of("get_order", "order_id")])

        Args:
            fn: the tool's function; it returns a JSON object or raises ToolError.
            kind: "read" (may run concurrently), "state" (changes the run) or "write" (only once the user confirmed).
            name: the tool's name (default: the function's).
            description: what the model reads of the tool (default: the docstring's text before its sections).
            takes: the context the loop passes: run_id, idempotency_key (writes), plan, tool_names, done_tools.
            requires: tools that must have succeeded in the run before this one runs.
            sources: Source rules: where arguments must come from (Source.of(...)).
            effect: a write's {argument: how a proposal states it}: "id", "choice", "date" or "count".
            timeout: seconds per call (None: the policy's default).
            **more: any other field of Tool (aliases, units, keep, inline, absorb, render, describe, gist,
                reconcile, facts, initial, rules), as the constructor takes it.

        Returns:
            The Tool, checked as any Tool is.

        Raises:
            DeclarationError: (a ValueError) naming the tool and the parameter: a hint that is not supported, a
                missing hint or docstring, `idempotency_key` not in `takes`, or any mistake the constructor refuses.
        """
        label = name if name is not None else getattr(fn, "__name__", repr(fn))
        fixed = ("name", "description", "parameters", "fn", "kind", "takes", "requires", "sources", "effect", "timeout")
        unknown = [k for k in more if k not in {f.name for f in dataclasses.fields(cls)} or k in fixed]
        if unknown:
            hint = " (a hand-written schema: use Tool(name, description, parameters, fn, ...))" \
                if "parameters" in unknown else ""
            raise DeclarationError(f"tool {label!r}: from_function takes no {', '.join(map(repr, unknown))}{hint}")
        taken = (takes,) if isinstance(takes, str) else tuple(takes)
        needed = (requires,) if isinstance(requires, str) else tuple(requires)
        rules = (sources,) if isinstance(sources, Source) else tuple(sources)
        effects = tuple(effect.items()) if isinstance(effect, Mapping) else tuple(effect)
        said, parameters, call, problems = signature.read(fn, taken, reserved=("idempotency_key",))
        if name is None and not isinstance(getattr(fn, "__name__", None), str):
            problems.insert(0, "fn has no __name__: give name=...")
        if description is None and not said:
            problems.append("fn has no docstring: write one (its text before Args: is the tool's description), "
                            "or give description=...")
        if problems:
            raise DeclarationError(f"tool {label!r}: " + "; ".join(problems))
        return cls(str(label), said if description is None else description, parameters, call, kind=kind,
                   timeout=timeout, takes=taken, requires=needed, sources=rules, effect=effects, **more)


def _tool_problems(tool):
    """What is wrong with a tool's declaration, each naming the field and what it may be."""
    if not isinstance(tool.name, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool.name):
        return [f"name must be 1-64 letters, digits, _ or - (got {tool.name!r})"]
    props = tool.parameters.get("properties", {}) if isinstance(tool.parameters, dict) else None
    problems = [] if isinstance(props, dict) and tool.parameters.get("type") == "object" else \
        ["parameters must be a JSON Schema of type object with properties"]
    why = None if problems else _unencodable(tool.parameters)
    if why:
        return [f"parameters cannot be sent as JSON ({why}): a JSON Schema is plain JSON, without cycles, "
                "NaN or objects of other types"]
    props = props if isinstance(props, dict) else {}
    if tool.shown is not None and not (isinstance(tool.shown, dict) and tool.shown.get("type") == "object" and
                                       set(tool.shown.get("properties") or {}) == set(props) and
                                       not _unencodable(tool.shown)):
        problems.append("shown must be a JSON Schema of type object with the same properties as parameters")
    if tool.kind not in KINDS:
        problems.append(f"kind={tool.kind!r} is not one of {', '.join(KINDS)}")
    effect = list(tool.effect)
    for item in effect:
        if not (isinstance(item, (tuple, list)) and len(item) == 2 and item[1] in EFFECTS and item[0] in props):
            problems.append(f"effect entry {item!r} must be (argument of the tool, one of {', '.join(EFFECTS)})")
    if tool.kind == "write" and not effect:
        problems.append("a write must declare effect: the (argument, how) pairs that define what it does")
    lists = {item[0] for item in effect if isinstance(item, (tuple, list)) and len(item) == 2 and
             _is_array(props.get(item[0]))}
    problems += [f"ordered entry {name!r} must be an effect argument whose schema is an array (a list whose order "
                 "is part of the write)" for name in (tool.ordered if isinstance(tool.ordered, (tuple, list)) else
                                                       [tool.ordered]) if name not in lists]
    problems += [f"takes={name!r} is not one of {', '.join(CONTEXT)}" for name in tool.takes if name not in CONTEXT]
    if "idempotency_key" in tool.takes and tool.kind != "write":
        problems.append("takes idempotency_key, which only a write gets (kind='write')")
    for source in tool.sources:
        if not isinstance(source, Source) or any(stated.base(a) not in props for o in source.options() for a in o.args):
            problems.append(f"sources entry {source!r} must be a Source whose args are arguments of the tool")
        else:
            problems += _path_problems(source)
    if tool.timeout is not None and not (isinstance(tool.timeout, (int, float)) and tool.timeout > 0):
        problems.append(f"timeout={tool.timeout!r} must be a positive number of seconds or None")
    for rule in tool.rules if isinstance(tool.rules, (tuple, list)) else [tool.rules]:
        if not isinstance(rule, Rule):
            problems.append(f"rules entry {rule!r} must be a Rule")
        elif rule.tools:
            problems.append(f"rule {rule.name!r}: a tool's rule applies to that tool; tools= is for an agent's rule")
    return problems + _open_problems(tool) + _outside_problems(tool.name, tool.kind, tool.outside, tool.sources, props) + \
        _signature_problems(tool, props)


def _open_problems(tool):
    """A tool takes arguments outside its schema's `properties` only when it declares so (`open_arguments`), and
    an outside tool never does (an argument no Source names would carry text out)."""
    if not isinstance(tool.open_arguments, bool):
        return [f"open_arguments={tool.open_arguments!r} must be True or False"]
    if tool.open_arguments and tool.outside is True:
        return ["open_arguments=True: an outside tool takes only the arguments its schema's properties name (each "
                "one sourced)"]
    return []


def _outside_problems(name, kind, outside, sources, props):
    """An outside tool (its arguments leave the trust boundary) declares where each of its arguments that can carry
    text comes from: every property but a boolean, an integer, a number or one held to an enum or const is named
    by a Source, as a whole or element by element ("urls[]"; a field of each, "pages[].url", leaves the rest free);
    none comes from its own results (a link found in a fetched
    page is not fetched)."""
    problems: list[str] = []
    if not isinstance(outside, bool):
        return [f"outside={outside!r} must be True or False"]
    if not outside:
        return problems
    if kind not in ("read", "write"):
        problems.append(f"outside=True is for a read or a write (kind={kind!r})")
    sourced = {stated.base(a) for s in sources if isinstance(s, Source) for a in s.args   # whole, or each element whole
               if not stated.arg_path(a)[2]}
    free = [arg for arg, schema in props.items() if arg not in sourced and not _closed(schema)]
    if free:
        problems.append(f"outside=True: the arguments {', '.join(free)} can carry any text out and have no Source: "
                        "declare where each comes from (Source.user(...) for the user's own words, "
                        "Source(..., tool, ...) for a trusted tool's results)")
    problems += [f"outside=True: sources entry {s!r} takes values from this tool's own results (what it brought in "
                 "is not trusted)" for s in sources if isinstance(s, Source) and any(o.tool == name for o in s.options())]
    return problems


def _closed(schema):
    """Whether an argument's schema lets it carry no free text: a boolean, an integer, a number, an enum, a const."""
    if not isinstance(schema, dict):
        return False
    given = schema.get("type")
    kinds: list = given if isinstance(given, list) else [given]
    return "enum" in schema or "const" in schema or \
        (None not in kinds and all(k in ("boolean", "integer", "number", "null") for k in kinds))


def _path_problems(source):
    """What is wrong with the argument paths of a source: at most one `[]` each, into one list for all of them."""
    problems = []
    for option in source.options():
        stepping = {stated.base(a) for a in option.args if stated.arg_path(a)[1]}
        if any(str(a).count("[]") > 1 for a in option.args) or len(stepping) > 1:
            problems.append(f"sources entry {option!r}: its args may step into one list argument, once "
                            "(\"item_ids[]\", \"passengers[].name\")")
        if not isinstance(option.path, str):
            problems.append(f"sources entry {option!r}: path must be a dotted path such as 'items[]' or 'methods.*'")
    return problems


def _signature_problems(tool, props):
    """Whether `fn` can be called with the tool's arguments and the context it takes."""
    if tool.fn is None:
        return []
    if not callable(tool.fn):
        return ["fn must be callable"]
    try:
        params = inspect.signature(tool.fn).parameters.values()
    except (TypeError, ValueError):
        return []
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    problems = [f"fn needs {p.name!r}, which is neither an argument in parameters nor in takes"
                + (f" (add takes=({p.name!r},))" if p.name in CONTEXT else "")
                for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is p.empty
                and p.name not in props and p.name not in tool.takes]
    if not any(p.kind == p.VAR_KEYWORD for p in params):
        problems += [f"fn does not accept {name!r} (in parameters or takes)" for name in [*props, *tool.takes]
                     if name not in named]
    return problems

def declared_tool(tool, rules=None):
    """One tool as a run records it and the judge reads it: kind, requires, sources (with their alternatives,
    `any`; a source of the user's words has tool "user"), `outside` and `ordered` when declared, and a write's effect with the values each choice may take (the schema's enum, with its aliases), the
    units of its counts (and of any number it declares units for: what an answer states it in) and its list arguments
    (`lists`: each element one effect value); the names of the rules its
    calls must keep (`rules`, default its own), when it has any."""
    out = {"kind": tool.kind, "requires": list(tool.requires), "effect": [list(e) for e in tool.effect],
           "sources": [s.declared() for s in tool.sources]}
    if tool.outside:                     # recorded only when declared: an older record reads as before
        out["outside"] = True
    if tool.ordered:
        out["ordered"] = list(tool.ordered)
    named = [r.name for r in (tool.rules if rules is None else rules)]
    if named:
        out["rules"] = named
    many = [arg for arg, _ in tool.effect if _is_array((tool.parameters.get("properties") or {}).get(arg))]
    if many:
        out["lists"] = many
    if tool.effect:
        out["choices"] = {arg: {v: list(names) for v, names in choices(tool, arg).items()}
                          for arg, how in tool.effect if how == "choice"}
        out["units"] = {arg: list(tool.units.get(arg, ())) for arg, how in tool.effect if how == "count"}
        out["units"].update({arg: list(units) for arg, units in tool.units.items() if isinstance(units, (list, tuple))
                             and arg not in out["units"]})      # a number field's units: what an answer says it in
    return out


def _is_array(schema):
    """Whether an argument's schema makes it a list (type "array", alone or among its types)."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    return kind == "array" or isinstance(kind, list) and "array" in kind


def choices(tool, arg):
    """The values a `choice` effect argument may take, each with the other names users read for it: the
    argument schema's `enum`, and any value its `aliases` name."""
    prop = (tool.parameters.get("properties") or {}).get(arg)
    enum = prop["enum"] if isinstance(prop, dict) and isinstance(prop.get("enum"), list) else []
    values = [v for v in enum if isinstance(v, str)] + [v for v in tool.aliases if v not in enum]
    return {v: tuple(tool.aliases.get(v, ())) for v in values}


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
    notice: dict | None = None     # an MCP result's: what its cut dropped (toolset.trim), for the trace and printout
    blocks: tuple = ()             # an MCP text result's content blocks (mcp/results.py), for the trace

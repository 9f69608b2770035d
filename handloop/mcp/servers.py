"""An MCP server of an agent, as declared (`MCPServer`): how to reach it, which of its tools the agent allows, and
each allowed tool's declaration (`MCPTool`, typed; a tuple of fields or a string-keyed dict still accepted) (the result fields kept, as paths into nested records: `field_path`, `field_tree`;
what its input schema must take: `needed`; its sources, hooks, and, for a write, its effect and the argument that
receives the idempotency key), checked when it is made.

Invariants: imports only calls.py (Source, Rule, EFFECTS), values.py and errors.py, so toolset.py and agents.py may
import it (it lives with the rest of MCP, in handloop/mcp/); holds no state; a declaration mistake is a DeclarationError naming the server, the tool and the field.
"""
import dataclasses
import re
from typing import Any, Iterable, Mapping

__all__ = ["MCPServer", "MCPTool", "MCP_RULES", "field_path", "field_tree", "needed"]

from ..calls import EFFECTS, Rule, Source, _path_problems
from ..errors import DeclarationError
from ..values import redacted_url

MCP_RULES = ("fields", "required", "arguments", "sources", "timeout", "requires", "absorb", "render", "gist",
             "facts", "initial", "keep", "description", "outside",     # what an MCPServer may declare of one of its tools
             "kind", "effect", "aliases", "units", "describe", "rules", "reconcile", "key")   # ... and of a write
MCP_KINDS = ("read", "write")                                 # an MCP tool changes the world or not, never the run
DESCRIPTION_LIMIT = 500                                       # characters of a server-given description kept


@dataclasses.dataclass(frozen=True)
class MCPTool:
    """One allowed MCP tool's declaration, typed (the spelling to use; the older ones, a tuple of the fields kept or a
    dict of these same names as strings, are still accepted and mean the same). `fields`: the result fields kept
    (paths, see field_path; none for a tool that answers in text); `required`: fields a result must have, else a tool
    error; `arguments`: what its input schema must take; `sources`, `requires`, `keep`, `timeout` (seconds per MCP
    request, None: the server's), `description` (ours, shown instead of the server's), `outside` (its arguments leave
    the user's trust boundary), the memory and screen hooks of a local tool (`absorb`, `render`, `gist`, `facts`,
    `initial`), and for a write (`kind="write"`): `effect` ({argument: how}), `key` (the server's argument that
    receives the idempotency key), `aliases`, `units`, `describe`, `rules`, `reconcile`. Checked with its server."""
    fields: tuple = ()
    required: tuple = ()
    arguments: tuple = ()
    sources: tuple = ()
    requires: tuple = ()
    keep: tuple = ()
    timeout: float | None = None
    description: str | None = None
    outside: bool = False
    kind: str = "read"
    effect: Any = ()
    key: str | None = None
    aliases: Mapping = dataclasses.field(default_factory=dict)
    units: Mapping = dataclasses.field(default_factory=dict)
    describe: Any = None
    rules: Any = ()
    reconcile: Any = None
    absorb: Any = None
    render: Any = None
    gist: Any = None
    facts: str = ""
    initial: Mapping = dataclasses.field(default_factory=dict)

    def declared(self) -> dict[str, Any]:
        """The same declaration in the string-keyed spelling MCPServer reads."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclasses.dataclass(frozen=True)
class MCPServer:
    """One MCP server of an agent, declared once: how to reach it (`command`: argv of a stdio server,
    or `url`: a Streamable HTTP endpoint, with the bearer token read from the environment variable
    `token_env` when the run starts, sent to this server only, never recorded; a URL never carries a user
    name or password) and which of its tools the agent uses.

    `tools` maps each allowed tool to its declaration, an MCPTool (typed), or in the older spellings still accepted,
    the result fields kept (a tuple of field paths) or a dict of the MCPTool's options by name: `fields` (kept: paths, see field_path: "doctor", "doctor.name", "slots[].slot_id" for a
    field of each record of a list), `required` (fields a result must have, else a tool error), `arguments` (what its input schema must take), `sources`, `requires`, `timeout`, `keep`,
    and the memory and screen hooks a local tool declares (`absorb`, `render`, `gist`, `facts`,
    `initial`), `description` (ours, shown instead of the server's). A tool the server runs may be a write, exactly
    as a local one: `kind="write"` with its `effect` (a dict {argument: how} or pairs), `aliases`, `units`,
    `describe`, `rules` and `reconcile` as a Tool takes them, and `key`: the server's argument that receives the
    run's idempotency key (幂等键; filled by the loop, never shown to the model, so the server's store can refuse a
    write made twice). Only these tools reach the
    model; every structured result is cut to its fields, always (toolset.trim says what it dropped), and a text
    result (content blocks with no structured content, mcp/results.py) reaches the model as text cut by length, never
    as records a Source reads; a tool declared with no fields (`()`) is a text tool: a structured result of it
    passes nothing; a server's own description is untrusted text,
    kept to DESCRIPTION_LIMIT characters. `timeout`: seconds per MCP request (None: the default).
    `replaces`: local tools of the agent its tools stand in for while it is used (they take over
    the local tool's hooks); `optional`: used only when the run asks for MCP (--mcp), as the Xi'an
    agent's weather server; otherwise every run of the agent uses it."""
    name: str
    command: tuple | None = None
    url: str | None = None
    token_env: str | None = None
    tools: dict = dataclasses.field(default_factory=dict)
    timeout: float | None = None
    replaces: tuple = ()
    optional: bool = False

    def __post_init__(self):
        if isinstance(self.tools, dict):          # the typed spelling (MCPTool) read as the string-keyed one
            object.__setattr__(self, "tools", {n: r.declared() if isinstance(r, MCPTool) else r
                                               for n, r in self.tools.items()})
        if isinstance(self.command, (list, tuple)):
            object.__setattr__(self, "command", tuple(self.command))
        object.__setattr__(self, "replaces", tuple(self.replaces) if isinstance(self.replaces, (list, tuple))
                           else self.replaces)
        problems = _server_problems(self)
        if problems:
            raise DeclarationError(f"MCP server {self.name!r}: " + "; ".join(problems))
        object.__setattr__(self, "tools", {n: _remote_rule(r) for n, r in self.tools.items()})

    def rule(self, tool):
        """The declaration of one allowed tool: {fields, required, arguments, sources, ...}."""
        return self.tools[tool]


FIELD_DEPTH = 8                                  # steps a declared result field may go down ("slots[].slot_id": 2)
FIELD_STEP = re.compile(r"[^.\[\]]+(\[\])?")


def field_path(path: Any) -> tuple[tuple[str, bool], ...] | None:
    """A declared result field as its steps, each (name, whether it steps into a list of that name): "doctor" →
    (("doctor", False),), "slots[].slot_id" → (("slots", True), ("slot_id", False)); None when it is no path (names
    joined by ".", "[]" after the name of a list, at most FIELD_DEPTH steps). A path's last step keeps a JSON scalar
    ("tags[]": a list of them); a step before it, the object it names ("doctor.name"), or with "[]" each object of
    the list it names ("slots[].slot_id")."""
    if not isinstance(path, str) or not path:
        return None
    steps = path.split(".")
    if len(steps) > FIELD_DEPTH or not all(FIELD_STEP.fullmatch(s) for s in steps):
        return None
    return tuple((s[:-2], True) if s.endswith("[]") else (s, False) for s in steps)


def field_tree(paths: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
    """Declared result fields as a tree, {name: (into a list, {name: ...} of the fields under it, or None for a
    value)}, and what is wrong with them: a path that is none (field_path), a field declared in two shapes (a
    value, a list of values, an object, records of a list: "slots" beside "slots[].slot_id")."""
    tree: dict[str, Any] = {}
    problems = []
    for path in paths:
        steps = field_path(path)
        if steps is None:
            problems.append(f"field {path!r} is not a field path: names joined by '.', '[]' after the name of a "
                            f"list, at most {FIELD_DEPTH} steps (e.g. 'doctor', 'slots[].slot_id')")
            continue
        level, at = tree, ""
        for i, (name, into) in enumerate(steps):
            last, at = i == len(steps) - 1, f"{at}.{name}" if at else name
            had = level.setdefault(name, (into, None if last else {}))
            if last != (had[1] is None) or had[0] != into:
                problems.append(f"field {path!r} disagrees with another about {at!r}: declare it as one value ({at}), "
                                f"a list of values ({at}[]), an object ({at}.x) or records of a list ({at}[].x)")
                break
            if not last:
                level = had[1]
    return tree, problems


def _remote_rule(rule):
    """One allowed MCP tool's declaration, every key present."""
    rule = {"fields": rule} if isinstance(rule, (tuple, list)) else dict(rule)
    out: dict[str, Any] = {"fields": (), "required": (), "arguments": (), "sources": (), "requires": (), "keep": (), "timeout": None,
                           "absorb": None, "render": None, "gist": None, "facts": "", "initial": {}, "description": None,
                           "outside": False, "kind": "read", "effect": (), "aliases": {}, "units": {}, "describe": None,
                           "rules": (), "reconcile": None, "key": None}
    out.update(rule)
    if isinstance(out["effect"], Mapping):
        out["effect"] = tuple(out["effect"].items())
    if isinstance(out["rules"], Rule):
        out["rules"] = (out["rules"],)
    for key in ("fields", "required", "arguments", "sources", "requires", "keep", "effect", "rules"):
        out[key] = tuple(tuple(x) if isinstance(x, list) else x for x in out[key])
    return out


def needed(rule: dict[str, Any], listed: bool = True) -> tuple:
    """The arguments an MCP tool's input schema must take for its declaration to hold: those it names (`arguments`),
    a write's effect arguments, and (`listed`: the server's own listing, not the schema a run recorded, which the
    model saw without it) the argument that receives the idempotency key."""
    effect = tuple(arg for arg, _ in rule["effect"] if isinstance(arg, str))
    key = (rule["key"],) if listed and rule["key"] else ()
    return tuple(dict.fromkeys([*rule["arguments"], *effect, *key]))


def _server_problems(server):
    if not isinstance(server.name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", server.name):
        return [f"name must be 1-64 letters, digits, _ . or - (got {server.name!r})"]
    problems = []
    if (server.command is None) == (server.url is None):
        problems.append("give exactly one of command=[argv...] (a stdio server) or url=... (Streamable HTTP)")
    if server.command is not None and not (isinstance(server.command, tuple) and server.command and
                                           all(isinstance(a, str) and a for a in server.command)):
        problems.append(f"command={server.command!r} must be a non-empty list of strings (argv)")
    if server.url is not None and not (isinstance(server.url, str) and re.match(r"https?://", server.url)):
        problems.append(f"url={redacted_url(server.url)!r} must be an http:// or https:// URL")
    elif server.url is not None and "@" in server.url.partition("://")[2].split("/")[0]:
        problems.append(f"url={redacted_url(server.url)!r} must not carry a user name or password: "
                        f"name the environment variable of its token in token_env")
    if server.token_env is not None and not (isinstance(server.token_env, str) and
                                             re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", server.token_env)):
        problems.append(f"token_env={server.token_env!r} must name an environment variable")
    if server.timeout is not None and not (isinstance(server.timeout, (int, float)) and server.timeout > 0):
        problems.append(f"timeout={server.timeout!r} must be a positive number of seconds or None")
    if not isinstance(server.optional, bool):
        problems.append(f"optional={server.optional!r} must be True or False")
    if not isinstance(server.tools, dict) or not server.tools:
        return problems + ["tools must map each allowed tool to the result fields kept, e.g. {'lookup': ('id',)}"]
    for name, rule in server.tools.items():
        problems += [f"tool {name!r}: {p}" for p in _rule_problems(name, rule)]
    return problems


def _rule_problems(name, rule):
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name):
        return ["a tool name must be 1-64 letters, digits, _ or -"]
    if isinstance(rule, (tuple, list)):
        rule = {"fields": rule}
    if not isinstance(rule, dict):
        return [f"must be the result fields kept (a tuple of names) or a dict of {', '.join(MCP_RULES)}"]
    problems = [f"{key!r} is not one of {', '.join(MCP_RULES)}" for key in rule if key not in MCP_RULES]
    fields = rule.get("fields")
    if not isinstance(fields, (tuple, list)) or not all(isinstance(f, str) and f for f in fields):
        problems.append("fields must be a list of the result fields kept (paths such as 'doctor' or "
                        "'slots[].slot_id'): a structured result is cut to them, always; () for a tool that "
                        "answers in text")
    else:
        problems += field_tree(fields)[1]
    for key in ("required", "arguments", "requires", "keep"):
        value = rule.get(key, ())
        if not isinstance(value, (tuple, list)) or not all(isinstance(v, str) for v in value):
            problems.append(f"{key} must be a list of names")
    problems += [f"required field {f!r} is not one of fields" for f in rule.get("required", ())
                 if isinstance(fields, (tuple, list)) and f not in fields]
    for source in rule.get("sources", ()):
        if not isinstance(source, Source):
            problems.append(f"sources entry {source!r} must be a Source")
        else:
            problems += _path_problems(source)
    outside, sources = rule.get("outside", False), tuple(rule.get("sources", ()))
    if not isinstance(outside, bool):
        problems.append(f"outside={outside!r} must be True or False")
    elif outside:         # the server's schema is known once it is listed: its arguments are checked then (toolset)
        problems += [f"outside=True: sources entry {s!r} takes values from this tool's own results (what it brought "
                     "in is not trusted)" for s in sources if isinstance(s, Source) and
                     any(o.tool == name for o in s.options())]
    timeout = rule.get("timeout")
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
        problems.append(f"timeout={timeout!r} must be a positive number of seconds or None")
    return problems + _remote_write_problems(rule)


def _remote_write_problems(rule):
    """What is wrong with an MCP tool's declaration as a write (the rest is checked when the server lists its schema:
    the effect's arguments must be the schema's, as a local tool's)."""
    kind, effect, key = rule.get("kind", "read"), rule.get("effect", ()), rule.get("key")
    if kind not in MCP_KINDS:
        return [f"kind={kind!r} is not one of {', '.join(MCP_KINDS)} (a tool a server runs cannot change the run)"]
    items = list(effect.items()) if isinstance(effect, Mapping) else effect
    problems = [] if isinstance(items, (tuple, list)) else [f"effect={effect!r} must be a dict {{argument: how}}"]
    for item in items if isinstance(items, (tuple, list)) else ():
        if not (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str) and item[1] in EFFECTS):
            problems.append(f"effect entry {item!r} must be (argument of the tool, one of {', '.join(EFFECTS)})")
    if kind == "write" and not items:
        problems.append("a write must declare effect: the {argument: how} that define what it does")
    if kind != "write":
        problems += [f"{name} is for a write (kind='write')" for name in ("effect", "key", "reconcile", "describe")
                     if rule.get(name)]
    if key is not None and not (isinstance(key, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,64}", key)):
        problems.append(f"key={key!r} must name the server's argument that receives the idempotency key")
    elif key is not None and key in dict(items if isinstance(items, (tuple, list)) else ()):
        problems.append(f"key={key!r} is filled by the loop: it cannot be an effect argument the model gives")
    for name in ("reconcile", "describe"):
        if rule.get(name) is not None and not callable(rule[name]):
            problems.append(f"{name} must be callable or None")
    for name in ("aliases", "units"):
        if not isinstance(rule.get(name, {}), Mapping):
            problems.append(f"{name} must be a dict")
    rules = rule.get("rules", ())
    problems += [f"rules entry {r!r} must be a Rule" for r in (rules if isinstance(rules, (tuple, list)) else [rules])
                 if not isinstance(r, Rule)]
    return problems

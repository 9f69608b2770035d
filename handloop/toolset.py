"""What the model sees and where a call goes: the run's tool declarations (local, or from the
MCP server), the argument parsing ladder, validation, and routing a call to its tool.

Invariants: a call is validated against its schema before any tool runs, and a call that
fails parsing or validation carries the problem instead of arguments (never a silent `{}`);
tools get what they need passed in explicitly (their declared `takes`: plan, run id,
idempotency key), never memory itself; every result handed back is a JSON object (a state
call's preview wraps any other value as {"value": ...}, as the executor does). The tool set
knows no tool by name and imports no agent: it is given its agent (agents.Agent) and reads its
declarations (calls.Tool). The planning tools are always there.
MCP: the agent declares its servers (servers.MCPServer) and, for each, the tools it allows; only
those reach the model, standing where the local tools a server `replaces` stood (and taking over
their memory and screen hooks); every MCP result is cut to that tool's declared fields, always, at
any depth (paths such as `slots[].slot_id`; lists and strings bounded), and what the cut dropped goes
with the result (Cut.notice: the trace and the printout say it), and every MCP failure (isError, protocol
error, timeout, dead server) is a ToolError. A bearer token goes to
the one server it belongs to (its own `token_env`; AGENT_MCP_TOKEN only to the server `mcp_url` names). One session
per server per tool set, started when first needed (a new run needs it at once, for the schemas;
a resumed run reuses the schemas it recorded and starts a server only for its first call).
"""
from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
import re
from typing import Any

from . import config
from . import mcp_tools
from . import plan
from . import texts
from .agents import Agent
from .mcp import results
from .calls import Call, Tool, ToolError, by_user
from .mcp.servers import DESCRIPTION_LIMIT, field_path, field_tree, needed
from .texts.stated import identity
from .values import normalise, settled, valid_text, validate, wrapped

FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.S)


MAX_DEPTH = 32       # arguments nested deeper than this are refused (no schema of ours goes near it)


def parse_arguments(text, say=texts.ZH_TEXTS):
    """The ladder: strip Markdown fences → json → json5 → give up with the problem stated. The
    value's strings are valid Unicode (values.valid_text).

    Returns (value, None) or (None, problem).
    """
    if not isinstance(text, str):
        return None, say("call.not_string")
    match = FENCE.match(text)
    body = (match.group(1) if match else text).strip() or "{}"
    value, problem = _decoded(body, say)
    if problem is None and _depth(value) > MAX_DEPTH:
        problem = say("call.too_deep", depth=MAX_DEPTH)
    if problem is not None:
        return None, say("call.not_json", problem=problem, text=text[:200])
    return valid_text(value), None        # a \ud800 escape decodes to a lone surrogate: replaced


def _decoded(body, say):
    """(value, None) or (None, why) for the text of the arguments: json, then json5."""
    try:
        return json.loads(body), None
    except ValueError as exc:
        problem = str(exc)
    except RecursionError:
        return None, say("call.nested")
    try:
        import json5
        return json5.loads(body), None
    except RecursionError:
        return None, say("call.nested")
    except Exception:       # json5 raises several types for bad text; all mean "not parseable"
        return None, problem


def _depth(value):
    """How deeply `value` nests lists and objects, counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:
                stack.extend((v, level + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def idempotency_key(run_id, call):
    """Covers the run, the tool and every argument the call carries: the write as the user was shown it and
    confirmed it (two messages to one recipient with other bodies are two writes; the same call again is one). An
    effect's list is the same effect whatever the order of its elements (texts/stated.identity)."""
    effects = {k for k, _ in call.tool.effect} if call.tool and call.tool.effect else set()
    body = json.dumps({"run": run_id, "tool": call.name, "args": identity(call.args, effects)}, sort_keys=True,
                      ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()


class ToolSet:
    """The tools of one run: declarations, schemas for the model, preparation and routing of calls."""

    timeout = config.TOOL_TIMEOUT     # seconds the executor gives a call whose tool declares none
    lock: Any = None                  # the run's lock (audit.RunLock) when runs.start/confirm/... took it: close() releases it

    def __init__(self, run_id: str, agent: Agent, mode: str = "local", *, mcp_command: list[str] | None = None,
                 schemas: list[dict] | None = None, visible: list[str] | None = None, mcp_url: str | None = None,
                 mcp_token: str | None = None, env: dict | None = None) -> None:
        """`agent`: the agent whose tools these are (required: a tool set is given its agent and picks
        none); `mode` "mcp": every MCP server the agent declares (else those not optional); `schemas`: the tool list a resumed run recorded (its MCP
        tools are taken from it instead of asking the servers, which start at their first call);
        `mcp_command` / `mcp_url`: the agent's first MCP server runs as that process or is reached at that URL
        instead of where it is declared (the command line's --mcp-server, --mcp-url); `mcp_token`: the bearer
        token of the server at `mcp_url` and of no other (default: AGENT_MCP_TOKEN of `env`); every server at
        its declared URL gets the token its own `token_env` names, or none; `visible`: the names this run may
        see (the planning tools always), filtered before the schemas are built; `env`: where the tokens are
        read (default os.environ). TypeError when `agent` is not an Agent."""
        if not isinstance(agent, Agent):
            raise TypeError(f"ToolSet(run_id, agent): agent must be a handloop.Agent (the agent whose tools "
                            f"these are), not {type(agent).__name__}")
        self.agent, self.say = agent, agent.say
        self.run_id, self.mode = run_id, mode
        self._async: dict[str, tuple[Any, bool]] = {}
        declared = list(agent.tools)
        if agent.planning and not any(t.name == "set_plan" for t in declared):
            declared = plan.tools(agent.plan_example, agent.say) + declared
        servers = agent.servers(mcp=mode == "mcp")
        self.mode = "mcp" if servers else mode                    # a run using MCP servers is recorded as one
        self.mcp_url = mcp_url if servers else None
        self.servers = {s.name: s for s in servers}
        self.clients = {s.name: self._client(s, i == 0 and mcp_command, i == 0 and mcp_url, mcp_token, env)
                        for i, s in enumerate(servers)}
        self.mcp: Any = next(iter(self.clients.values()), None)  # the first server's session (what is printed)
        self.remote: set[str] = set()                             # the MCP tools
        self.server_of: dict[str, str] = {}                       # each one's server's name
        made: dict[str, Tool] = {}
        try:
            for server in servers:
                listed = _recorded(schemas, server, self.say) if schemas is not None else self._listed(server)
                made.update({name: self._mcp_tool(server, name, spec, declared) for name, spec in listed.items()})
                self.server_of.update(dict.fromkeys(listed, server.name))
                self.remote |= set(listed)
        except BaseException:
            self.close()
            raise
        replaced = {r for s in servers for r in s.replaces}
        self.tools = _placed(declared, made, replaced)
        if visible is not None:
            self.tools = {n: t for n, t in self.tools.items() if n in visible or t.namespace == plan.NAMESPACE}
        self.schemas = [t.spec(t.parameters if n in self.remote else shown(t.shown or t.parameters))
                        for n, t in self.tools.items()]

    def _client(self, server, command, url, token, env):
        """A session with one server (not connected yet): over HTTP when it has a URL, else a process. A
        token goes only to the server it belongs to: the server at the caller's `url` gets the caller's `token`
        (else AGENT_MCP_TOKEN), a server at its declared URL the variable it declares (`token_env`), if any; a
        process gets our environment without the model's key and the other servers' tokens."""
        env = os.environ if env is None else env
        timeout = server.timeout or config.MCP_TIMEOUT
        if url or (server.url and not command):
            from .mcp import http as mcp_http
            named = config.MCP_TOKEN_ENV if url else server.token_env
            if url and token is not None:
                named = named if token == env.get(named) else None         # the caller's own token
            else:
                token = (env.get(named) or None) if named else None
            return mcp_http.HTTPClient(url or server.url, token, timeout=timeout, max_restarts=config.MCP_RESTARTS,
                                       say=self.say, token_env=named)
        others = {config.MCP_TOKEN_ENV, *(s.token_env for s in self.agent.mcp if s.token_env)} - {server.token_env}
        return mcp_tools.Client(command or server.command, env=mcp_tools.child_environment(hidden=others),
                                timeout=timeout, max_restarts=config.MCP_RESTARTS, say=self.say)

    def _listed(self, server):
        """The allowed tools of one MCP server, as OpenAI function specs (one tools/list)."""
        client = self.clients[server.name]
        offered = {t["name"]: t for t in client.start().list_tools()}
        return allowed_specs(offered, server, say=self.say)

    def _mcp_tool(self, server, name, spec, declared):
        """An MCP tool's declaration: the server's schema, its server's rules for it, and the memory and
        screen hooks it declares, else those of the local tool it replaces. Rules that do not fit the schema the
        server listed (a Source naming an argument it lacks, an outside tool's argument without a Source) are an
        MCPError naming the server: the run cannot use it as declared."""
        rule = server.rule(name)
        local = next((t for t in declared if t.name == name), None)
        hooks: dict[str, Any] = {k: rule[k] or (getattr(local, k) if local else None) for k in ("absorb", "render", "gist")}
        hooks.update(facts=rule["facts"] or (local.facts if local else ""), initial=rule["initial"] or
                     (local.initial if local else {}))
        writes = {k: rule[k] for k in ("kind", "effect", "aliases", "units", "describe", "rules", "reconcile")}
        try:
            return Tool(name, spec["description"], spec["parameters"], fn=None, sources=rule["sources"],
                        requires=rule["requires"], timeout=rule["timeout"], keep=rule["keep"], outside=rule["outside"],
                        **writes, **hooks)
        except ValueError as exc:      # the declaration does not fit the schema the server listed (a Source's
            raise mcp_tools.MCPError(self.say("mcp.declaration", name=server.name, problem=str(exc))) from None

    def tool(self, name: str) -> Tool | None:
        """The declaration of the tool of this name, or None."""
        return self.tools.get(name)

    def kind(self, name: str) -> str:
        """'read' (may run concurrently), 'state' (changes the run) or 'write' (changes the world)."""
        tool = self.tools.get(name)
        return tool.kind if tool else "read"

    def timeout_for(self, call: Call) -> float:
        return call.tool.timeout if call.tool and call.tool.timeout else self.timeout

    def inline(self, call: Call) -> bool:
        """Whether the call runs in the loop's thread: its tool is pure and bounded."""
        return bool(call.tool and call.tool.inline and not self.is_async(call))

    def is_async(self, call: Call) -> bool:
        fn = call.tool.fn if call.tool else None
        if fn is None:
            return False
        known = self._async.get(call.name)
        if known is None or known[0] is not fn:
            known = self._async[call.name] = (fn, inspect.iscoroutinefunction(fn))
        return known[1]

    def prepare(self, raw_calls: list[dict[str, Any]]) -> list[Call]:
        """Raw tool calls → Calls, each with valid arguments or the problem that stops it."""
        return [self._prepare(raw) for raw in raw_calls]

    def _prepare(self, raw):
        function = raw.get("function") or {}
        name, arguments, tool = function.get("name", ""), function.get("arguments", ""), self.tools.get(function.get("name", ""))
        if tool is None:
            return Call(raw.get("id", ""), name, arguments,
                        problem=self.say("call.unknown_tool", name=name, tools=", ".join(self.tools)))
        value, problem = parse_arguments(arguments, self.say)
        if problem is None:
            value = normalise(tool.parameters, value)
            problems = validate(tool.parameters, value, say=self.say)
            problem = self.say("schema.sep").join(problems) if problems else None
        return Call(raw.get("id", ""), name, arguments, args=value if problem is None else None, problem=problem, tool=tool)

    def run(self, call: Call, memory: Any) -> dict[str, Any]:
        """Execute a prepared, allowed call: its result (raises ToolError); for an async tool, the
        coroutine that computes it."""
        if call.name in self.remote:
            return self._remote(call)
        return self._invoke(call, memory)

    def _invoke(self, call, memory):
        """The declared function, with the context it takes."""
        context = {"run_id": self.run_id, "plan": memory.plan, "tool_names": set(self.tools),
                   "done_tools": set(memory.done_tools)}
        if "idempotency_key" in call.tool.takes:
            context["idempotency_key"] = idempotency_key(self.run_id, call)
        return call.tool.fn(**call.args, **{k: context[k] for k in call.tool.takes})

    def preview(self, call: Call, view: Any) -> Any:
        """The result a state call will have, for the guards' view of the turn: its tool is pure, so
        its function is simply called on the view (not through `run`, the executor's way in); None
        when it is not inline, so cannot be run ahead."""
        if not self.inline(call) or call.name in self.remote:
            return None
        try:
            return settled(wrapped(self._invoke(call, view)), config.TOOL_RESULT_MAX_CHARS, self.say)[0]
        except ToolError as exc:
            return {"error": str(exc)}
        except BaseException as exc:        # the executor will say what; the guards need only know it failed
            if by_user(exc):
                raise
            return {"error": self.say("tool.internal", kind=type(exc).__name__, error="")}

    def _remote(self, call):
        server = self.servers[self.server_of[call.name]]
        rule, args = server.rule(call.name), call.args
        if rule["key"] and call.kind == "write":           # the server's store refuses a write made twice by its key
            args = {**args, rule["key"]: idempotency_key(self.run_id, call)}
        try:
            payload = self.clients[server.name].call_tool(call.name, args)
        except mcp_tools.ToolFailed as exc:
            raise ToolError(self.say("tool.mcp_failed", tool=call.name, error=" ".join(exc.message.split())[:300])) from None
        except mcp_tools.MCPAuthError as exc:                 # names the server; a retry would not help
            raise ToolError(exc.message[:300]) from None
        except mcp_tools.MCPError as exc:
            raise ToolError(self.say("tool.mcp_error", tool=call.name, error=exc.message[:300])) from None
        if isinstance(payload, results.TextResult):
            return text_cut(call.name, payload, self.say, rule)
        return trim(call.name, payload, self.say, rule)

    def reconcile(self, call: Call) -> Any:
        """After a write's outcome went unknown: the receipt its idempotency key stored, or None."""
        if call.tool is None or call.tool.reconcile is None:
            return None
        return call.tool.reconcile(idempotency_key(self.run_id, call))

    def close(self) -> None:
        """Release what the tool set holds: its MCP server sessions, if any, and the run's lock when it holds one
        (a run begun or reopened by the library is its tool set's until that is closed)."""
        for client in getattr(self, "clients", {}).values():
            client.close()
        lock, self.lock = self.lock, None
        if lock is not None:
            lock.release()


HIDDEN = ("pattern", "minLength", "maxLength", "minItems", "maxItems", "minimum", "maximum", "additionalProperties")


def shown(schema):
    """The part of a declared JSON Schema the model is shown; calls are still validated against the
    whole declaration (values.validate), whose error names the field and the rule broken.

    Kept (all but HIDDEN): `type`, `properties`, `items`, `required` (the shape of a call), `enum`
    (the choices: room types, step status), `description` (hints such as the date format
    YYYY-MM-DD, which stands in for the date `pattern`).
    Dropped (HIDDEN, at every level of `properties` and `items`): what a sensible call never
    reaches, and every request pays for (the tool list opens each request: billed in full on the
    first, at the cached price on every later one):
    - `pattern`: a regex costs more than the format hint beside it, and a model writes a date
      from the hint;
    - `minLength`/`maxLength`/`minItems`/`maxItems`/`minimum`/`maximum`: limits against garbage
      (nights 1-14, steps 1-12); a call past one gets the error naming the field and the range;
    - `additionalProperties`: our requests are not strict. OpenAI and DeepSeek enforce it only
      under `strict: true`, which needs every property required (our optional nights, tool, after
      and note rule that out); vLLM and llama.cpp with tool_choice "auto" constrain nothing, they
      print the schema into the chat template. set_plan's description names a step's only fields,
      and a stray field gets the validation error that names the allowed ones.
    MCP tools are shown their schema whole (ToolSet): a resumed run validates against the schemas
    it recorded, so the record must keep every rule.
    """
    out = {k: v for k, v in schema.items() if k not in HIDDEN}
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: shown(v) if isinstance(v, dict) else v for k, v in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = shown(out["items"])
    return out


def _placed(declared, remote, replaced=()):
    """Declarations by name, in order; the MCP tools stand where the first local tool they replace stood
    (a local tool in `replaced` gives way to the MCP tools, whatever their names)."""
    placed, waiting = {}, dict(remote)
    for tool in declared:
        if tool.name in remote or tool.name in replaced:
            placed.update(waiting)
            waiting = {}
        if tool.name not in replaced:
            placed.setdefault(tool.name, tool)
    placed.update(waiting)
    return placed


def allowed_specs(offered, server, where=None, say=texts.ZH_TEXTS, listed=True):
    """The tools `server` allows, as OpenAI function specs. A tool the server does not offer, or whose
    input schema lacks an argument the declaration needs (servers.needed: those it names, a write's effects, its
    idempotency key's), is an MCPError naming the server and the tool: the run cannot use this server as declared.
    The argument that receives the idempotency key is the loop's: the model is not shown it (`listed` False: the
    schemas a run recorded, which never had it). A server's description is untrusted: kept to
    servers.DESCRIPTION_LIMIT characters (the declaration's own description wins)."""
    specs, wrong = {}, []
    for name, rule in server.tools.items():
        tool = offered.get(name) or {}
        schema = tool.get("inputSchema")
        props = schema.get("properties") if isinstance(schema, dict) and schema.get("type") == "object" else None
        args = needed(rule, listed)
        if not isinstance(props, dict) or any(arg not in props for arg in args):
            wrong.append(f"{name}({', '.join(args)})")
            continue
        description = rule["description"] or (tool["description"] if isinstance(tool.get("description"), str) else "")
        specs[name] = {"description": " ".join(description.split())[:DESCRIPTION_LIMIT],
                       "parameters": _safe_schema(schema, hidden=rule["key"])}
    if wrong:
        raise mcp_tools.MCPError(say("mcp.missing_tools", where=where or say("mcp.server_named", name=server.name),
                                     wrong=say.join(wrong), offered=", ".join(offered) or say("mcp.nothing")))
    return specs


def _safe_schema(schema, hidden=None, depth=0):
    """What validate() understands of an untrusted input schema: an object of simple typed properties, lists of
    them and objects of them (at most SCHEMA_DEPTH levels down; `hidden`: a property the loop fills, left out). The
    model is shown exactly this, and calls are checked against it."""
    props = {key: _safe_rule(rule, depth) for key, rule in list(schema["properties"].items())[:20]
             if isinstance(key, str) and len(key) <= 64 and isinstance(rule, dict) and key != hidden}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    safe: dict[str, Any] = {"type": "object", "properties": props,
                            "required": [k for k in required if isinstance(k, str) and k in props]}
    if schema.get("additionalProperties") is False:
        safe["additionalProperties"] = False
    return safe


SAFE_KEYWORDS = {"string": ("pattern", "minLength", "maxLength"), "number": ("minimum", "maximum"),
                 "integer": ("minimum", "maximum"), "boolean": ()}


SCHEMA_DEPTH = 3            # levels of lists and objects an MCP tool's input schema keeps (passengers[].name: 2)


def _safe_rule(rule, depth=0):
    kind = rule.get("type") if isinstance(rule.get("type"), str) else ""
    if kind == "array" and depth < SCHEMA_DEPTH:
        items = rule.get("items")
        safe: dict[str, Any] = {"type": "array"}
        if isinstance(items, dict):
            safe["items"] = _safe_rule(items, depth + 1)
        if isinstance(rule.get("description"), str):
            safe["description"] = rule["description"][:200]
        return safe
    if kind == "object" and depth < SCHEMA_DEPTH and isinstance(rule.get("properties"), dict):
        return _safe_schema(rule, depth=depth + 1) | ({"description": rule["description"][:200]}
                                                     if isinstance(rule.get("description"), str) else {})
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


def _recorded(schemas, server, say=texts.ZH_TEXTS):
    """The tools `server` allows among the schemas a run recorded, checked as the server's would be."""
    found = {s["function"].get("name"): s["function"] for s in schemas
             if isinstance(s, dict) and isinstance(s.get("function"), dict)}
    offered = {name: {"description": found[name].get("description"), "inputSchema": found[name].get("parameters")}
               for name in server.tools if name in found}
    return allowed_specs(offered, server, where=say("mcp.recorded_tools"), say=say, listed=False)


class Cut(dict):
    """An MCP result as trim() cut it: the object kept, and `notice`, what the cut took (None when it took nothing):
    {"dropped": [paths of the fields not declared, sorted, at most NOTICE_PATHS], "more": how many other paths,
    "cut": [{"path", "items", "of"} of a list cut to config.MCP_LIST_ITEMS, {"path", "chars"} of strings shortened]}.
    The executor hands the notice to the call's Outcome (the record's trace says it once per tool and path)."""

    notice: dict | None = None
    blocks: tuple = ()          # a text result's content blocks, as mcp/results.py records them (the trace keeps them)


def text_cut(name, reading, say=texts.ZH_TEXTS, rule=None):
    """An MCP text result (mcp/results.TextResult) as the model reads it: {"text": its blocks, each kind in its
    own way}, cut by length (config.MCP_TEXT_CHARS), never by the declared fields, which are those of a structured
    result (so a text result is never records a Source reads: no declared field is there). A ToolError when the
    tool declares required fields: a text result has none."""
    if rule and rule["required"]:
        raise ToolError(say("mcp.missing_fields", tool=name, fields=", ".join(rule["required"])))
    notice = _Notice()
    if reading.cut_chars:
        notice.shortened("text", chars=config.MCP_TEXT_CHARS)
    if reading.more_blocks:
        notice.shortened("content[]", items=config.MCP_BLOCKS, of=config.MCP_BLOCKS + reading.more_blocks)
    out = Cut({"text": reading.text})
    out.notice, out.blocks = notice.said(), reading.blocks
    return out


NOTICE_PATHS = 50           # dropped paths a notice names (the rest counted)
_SEEN_PATHS = 1000          # dropped paths told apart while cutting one result (a hostile one may have millions)
_UNDECLARED_DEPTH = 4       # how far below an undeclared field its own paths are looked for, to name them
_UNDECLARED_ITEMS = 20      # and how many items of each of its lists


def trim(name, payload, say=texts.ZH_TEXTS, rule=None):
    """An MCP result cut to the tool's declared fields (`rule`: its server's declaration of it, see
    servers.field_path), always: at any depth only what a declared path names passes, whatever the server sent
    beside it (so a result none of whose fields is declared becomes {}). A path's value is a JSON scalar (`tags[]`:
    a list of them; strings shortened to config.MCP_STRING_CHARS); a path stepping through an object keeps the
    object's declared fields, through `name[]` those of each record of the list (at most config.MCP_LIST_ITEMS
    items of any list). A value of another shape than declared (records or a list where a value was declared, a
    NaN) is dropped like an undeclared field. Returns a Cut whose notice names every path dropped and every cut made; a
    ToolError when a required path is missing (any record on its way lacking it)."""
    tree, _ = field_tree(rule["fields"])
    notice = _Notice()
    kept = _kept(payload, tree, "", notice)
    missing = [path for path in rule["required"] if _absent(kept, field_path(path) or ())]
    if missing:
        raise ToolError(say("mcp.missing_fields", tool=name, fields=", ".join(missing)))
    out = Cut(kept)
    out.notice = notice.said()
    return out


class _Notice:
    """What a cut took, gathered while it cuts (bounded, whatever the result)."""

    def __init__(self):
        self.dropped, self.more, self.cut = set(), 0, {}

    def drop(self, path):
        if path in self.dropped:
            return
        if len(self.dropped) < _SEEN_PATHS:
            self.dropped.add(path)
        else:
            self.more += 1

    def shortened(self, path, **what):
        self.cut.setdefault(path, dict(path=path, **what))

    def said(self):
        if not self.dropped and not self.cut:
            return None
        paths = sorted(self.dropped)
        return {"dropped": paths[:NOTICE_PATHS], "more": self.more + max(0, len(paths) - NOTICE_PATHS),
                "cut": list(self.cut.values())}


def _kept(record, tree, at, notice):
    """The declared fields of one object (`tree`: servers.field_tree's), the others dropped (and said)."""
    out = {}
    for key, value in record.items():
        where = f"{at}.{key}" if at else str(key)
        field = tree.get(key)
        if field is None:
            _undeclared(value, where, notice)
            continue
        into, fields = field
        if fields is None:
            value = _values(value, where, notice) if into else _value(value, where, notice)
        elif into:
            value = _records(value, where, fields, notice)
        elif isinstance(value, dict):
            value = _kept(value, fields, where, notice)
        else:
            _undeclared(value, where, notice)
            value = None
        if value is not None:
            out[key] = value
    return out


def _records(value, where, fields, notice):
    """The declared fields of each record of a list (`where`: its name, said with "[]"); None when it is no list."""
    if not isinstance(value, list):
        _undeclared(value, where, notice)
        return None
    out = []
    for item in _listed(value, where, notice):
        if isinstance(item, dict):
            out.append(_kept(item, fields, where + "[]", notice))
        else:
            _undeclared(item, where + "[]", notice)
    return out


def _values(value, where, notice):
    """A declared list of values ("tags[]"): its JSON scalars; None (dropped, and said) when it is no list."""
    if not isinstance(value, list):
        _undeclared(value, where, notice)
        return None
    kept = [_value(v, where + "[]", notice) for v in _listed(value, where, notice)]
    return [v for v in kept if v is not None]


def _value(value, where, notice):
    """A declared value: a JSON scalar; None (dropped, and said) for any other shape."""
    got = _scalar(value, where, notice)
    if got is None and value is not None:
        _undeclared(value, where, notice)
    return got


def _listed(value, where, notice):
    """The items of a list kept: the first config.MCP_LIST_ITEMS (the cut said)."""
    if len(value) > config.MCP_LIST_ITEMS:
        notice.shortened(where + "[]", items=config.MCP_LIST_ITEMS, of=len(value))
    return value[:config.MCP_LIST_ITEMS]


def _undeclared(value, where, notice, depth=0):
    """Said as dropped: the paths a value not declared holds (its fields' paths, as a declaration would name
    them), looked for only so deep and so wide."""
    if isinstance(value, dict) and value and depth < _UNDECLARED_DEPTH:
        for key, item in list(value.items())[:_UNDECLARED_ITEMS]:
            _undeclared(item, f"{where}.{key}", notice, depth + 1)
    elif isinstance(value, list) and value and depth < _UNDECLARED_DEPTH and any(isinstance(v, (dict, list)) for v in value):
        for item in value[:_UNDECLARED_ITEMS]:
            if isinstance(item, (dict, list)):
                _undeclared(item, where + "[]", notice, depth + 1)
    else:
        notice.drop(where)


def _absent(value, steps):
    """Whether a required path is missing: some object on its way lacks the next step."""
    found = [value]
    for name, _ in steps:
        if any(not isinstance(v, dict) or name not in v for v in found):
            return True
        found = [item for v in found for item in (v[name] if isinstance(v[name], list) else [v[name]])]
    return False


def _scalar(value, where="", notice=None):
    """A JSON scalar fit to pass on (finite number, bool, string of at most config.MCP_STRING_CHARS, the cut
    said to `notice`), or None."""
    if isinstance(value, str):
        if len(value) > config.MCP_STRING_CHARS and notice is not None:
            notice.shortened(where, chars=config.MCP_STRING_CHARS)
        return value[:config.MCP_STRING_CHARS]
    if isinstance(value, bool) or isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None

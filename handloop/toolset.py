"""What the model sees and where a call goes: the run's tool declarations (local, or from the
MCP server), the argument parsing ladder, validation, and routing a call to its tool.

Invariants: a call is validated against its schema before any tool runs (closed: no argument outside its
`properties` unless the tool declares open_arguments, calls.py), and a call that
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
with the result (mcp/results.Cut's notice: the trace and the printout say it; the reading and the cut live in
mcp/results.py, the tools a server's schemas allow in mcp/schemas.py), and every MCP failure (isError, protocol
error, timeout, dead server) is a ToolError. A bearer token goes to
the one server it belongs to (its own `token_env`; AGENT_MCP_TOKEN only to the server `mcp_url` names). One session
per server per tool set, started when first needed (a new run needs it at once, for the schemas;
a resumed run reuses the schemas it recorded and starts a server only for its first call).
"""
from __future__ import annotations

import hashlib
import inspect
import json
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
from .confirmation.held import effects_of, identity
from .mcp.results import text_cut, trim
from .mcp.schemas import allowed_specs, recorded
from .values import closed, normalise, settled, valid_text, validate, wrapped

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
    """Covers the run, the tool and every argument the call carries, in the canonical form of the one definition of
    the same call (confirmation/held.py): the write as the user was shown it and approved it (two messages to one
    recipient with other bodies are two writes; the same call again is one; an effect's list in any order, unless
    the tool declares it `ordered`; 120 and 120.0 alike)."""
    args = identity(call.args or {}, effects_of(call.tool))
    body = json.dumps({"run": run_id, "tool": call.name, "args": args}, sort_keys=True, ensure_ascii=False)
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
                listed = recorded(schemas, server, self.say) if schemas is not None else self._listed(server)
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
            schema = tool.parameters if tool.open_arguments else closed(tool.parameters)
            problems = validate(schema, value, say=self.say)
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

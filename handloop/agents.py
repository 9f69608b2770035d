"""An agent, declared once (`Agent`): what the loop needs that is not a tool (its prompt, goal, confirm replies,
language, planning, policy, its own checks and rules, its offline model, its MCP servers), checked when it is made,
and what a run records of it (`Agent.declared`, the dict the judge reads). The command line is agent.py.

Invariants: imports only calls.py (the tool declarations), mcp/servers.py (its MCP servers), texts/ and errors.py;
holds no state; a declaration mistake (a prerequisite naming a tool the agent lacks, a server tool named like a
local one, two rules of one name) is a DeclarationError naming what is wrong.
"""
import dataclasses
import re
from typing import Any, Callable, Iterable

from . import texts
from .calls import Rule, Tool, declared_tool
from .errors import DeclarationError
from .mcp.servers import MCPServer
from .texts import stated
from .texts.catalogue import Texts

@dataclasses.dataclass(frozen=True)
class Agent:
    """One agent, declared once: what the loop needs that is not a tool. `instructions` is the system
    prompt (the loop appends its memory block); `goal` the default goal of a new run; `confirm` the
    user replies that confirm a proposal (compared after trimming, case-insensitively for Latin
    text; the command line's --confirm sends the first); `language` what the loop and the command
    line say ("zh" or "en"); `planning` offers set_plan/mark_step and enforces plan first; `policy` a
    config.Policy (or a dict of its fields) for its runs; `checks` its own offline checks, by the
    names the judge knows (checks.AGENT_CHECKS); `plan_example` a plan of its task shown in
    set_plan's description; `offline` a model of its own for runs without an API key (a policy of
    the loopback endpoint: request dict -> reply dict; the command line uses it, or the built-in
    offline model for the Xi'an agent); `file` where it was loaded from (set by the loader,
    recorded by runs); `module` the importable "package.module:attribute" it is bound to (set by handloop.start when
    it finds it there, recorded by runs: parts.py loads it again from either); `rules` its own rules (Rule) over the calls of the tools each names (none named: every
    write), decided before a call runs, beside those its tools declare."""
    name: str
    instructions: str
    tools: tuple
    goal: str = ""
    confirm: tuple = ()                       # empty: the language's usual word (确认, confirm)
    language: str = "zh"
    planning: bool = True
    policy: object = None
    checks: tuple = ()
    plan_example: str = ""
    offline: Callable | None = None           # a scripted model for runs without an API key: request -> reply
    file: str | None = None
    mcp: tuple = ()                           # its MCP servers (MCPServer), each with the tools it allows
    rules: tuple = ()                         # Rule: its own rules over its tools' calls (tools=(): every write)
    module: str | None = None                 # "package.module:attribute" where it can be imported again

    def __post_init__(self):
        for name in ("tools", "confirm", "checks", "mcp", "rules"):
            value = getattr(self, name)
            object.__setattr__(self, name, tuple(value) if isinstance(value, (list, tuple)) else value)
        if self.confirm == () and self.language in texts.LANGUAGES:
            object.__setattr__(self, "confirm", (texts.of(self.language)("confirm.word"),))
        problems = _agent_problems(self)
        if problems:
            raise DeclarationError(f"agent {self.name!r}: " + "; ".join(problems))

    @property
    def say(self) -> Texts:
        return texts.of(self.language)

    def servers(self, mcp: bool = False) -> tuple:
        """The MCP servers a run uses: every one when the run asks for MCP (`mcp`), else those not optional."""
        return tuple(s for s in self.mcp if mcp or not s.optional)

    def confirms(self, text: str) -> bool:
        """Whether a user reply is one of the confirm replies."""
        given = " ".join(str(text).split()).casefold()
        return any(given == " ".join(c.split()).casefold() for c in self.confirm)

    def rules_for(self, tool: Tool) -> tuple:
        """The rules a call of `tool` must keep: its own, then the agent's that name it (or, naming no tool, every
        write's), each once."""
        mine = [r for r in self.rules if tool.name in r.tools or (not r.tools and tool.kind == "write")]
        return tuple(dict.fromkeys([*tool.rules, *mine]))

    def rule_checks(self) -> dict[str, Callable]:
        """{name: check} of every rule the agent and its tools declare (what --check runs, given this agent)."""
        found = {r.name: r.check for r in self.rules}
        found.update((r.name, r.check) for t in self.tools for r in t.rules)
        found.update((r.name, r.check) for s in self.mcp for rule in s.tools.values() for r in rule["rules"])
        return found

    def declared(self, tools: Iterable[Tool] | None = None) -> dict[str, Any]:
        """What a run records of its agent, and what the judge reads: plain JSON. `tools`: the tools
        the run really had (its tool set: the MCP tools and the planning tools too), default its own."""
        return {"name": self.name, "file": self.file, **({"module": self.module} if self.module else {}),
                "confirm": list(self.confirm), "language": self.language,
                "planning": self.planning, "checks": list(self.checks),
                "tools": {t.name: declared_tool(t, self.rules_for(t)) for t in (self.tools if tools is None else tools)}}


def located(agent: Agent) -> Agent:
    """The agent with how it can be loaded again, for its run's record: as it is when it names its file or module;
    else the first imported module that binds it to a name ("package.module:attribute", its file beside). An agent
    bound nowhere else (made inside a function, or in the script run as __main__, whose file is never run again: its
    top-level code may start runs) stays as it is: a command line must then be given it with --agent FILE."""
    if agent.file or agent.module:
        return agent
    import sys
    for name, module in list(sys.modules.items()):
        if name == "__main__":
            continue
        try:
            bound = [key for key, value in list(vars(module).items()) if value is agent]
        except TypeError:                  # no namespace to look in
            continue
        if bound:
            file = getattr(module, "__file__", None)
            return dataclasses.replace(agent, module=f"{name}:{bound[0]}", file=file if isinstance(file, str) else None)
    return agent


def _agent_problems(agent):
    problems = []
    if not isinstance(agent.name, str) or not agent.name.strip():
        problems.append("name must be a non-empty string")
    if not isinstance(agent.instructions, str) or not agent.instructions.strip():
        problems.append("instructions (the system prompt) must be a non-empty string")
    if agent.language not in texts.LANGUAGES:
        problems.append(f"language={agent.language!r} is not one of {', '.join(texts.LANGUAGES)}")
    if not isinstance(agent.confirm, tuple) or not agent.confirm or \
            not all(isinstance(c, str) and c.strip() for c in agent.confirm):
        problems.append("confirm must be a non-empty list of non-empty replies")
    if not isinstance(agent.planning, bool):
        problems.append(f"planning={agent.planning!r} must be True or False")
    if not isinstance(agent.goal, str):
        problems.append("goal must be a string")
    if agent.module is not None and not (isinstance(agent.module, str) and
                                         re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", agent.module)):
        problems.append(f"module={agent.module!r} must be 'package.module:attribute' (or None)")
    if not isinstance(agent.tools, tuple) or not all(isinstance(t, Tool) for t in agent.tools):
        return problems + ["tools must be a list of calls.Tool"]
    names = [t.name for t in agent.tools]
    problems += [f"two tools are named {n!r}" for n in sorted({n for n in names if names.count(n) > 1})]
    mcp_problems, remote = _mcp_problems(agent, names)
    problems += mcp_problems
    known = [*names, *remote]
    for tool in agent.tools:
        wanted = [*tool.requires, *(o.tool for s in tool.sources for o in s.options() if o.tool != stated.USER)]
        problems += [f"tool {tool.name!r}: requires or sources name {w!r}, which is not one of the agent's tools "
                     f"({', '.join(known)})" for w in wanted if w not in known]
    users = [t.name for t in agent.tools if _reads_user(t.sources)] + \
        [n for n, (_, rule) in remote.items() if _reads_user(rule["sources"])]
    if stated.USER in known and users:
        problems.append(f"a tool is named {stated.USER!r}, the source name Source.user reserves for the user's own "
                        f"messages (used by {', '.join(users)}): rename that tool")
    for name, (server, rule) in remote.items():
        wanted = [*rule["requires"], *(o.tool for s in rule["sources"] for o in s.options() if o.tool != stated.USER)]
        problems += [f"MCP server {server.name!r} tool {name!r}: requires or sources name {w!r}, which is not one "
                     f"of the agent's tools ({', '.join(known)})" for w in wanted if w not in known]
    return problems + _sourced_fields_problems(agent.tools, remote) + _rules_problems(agent, known)


def _sourced_fields_problems(tools, remote):
    """A source that takes values from an MCP tool's results must name fields that tool declares: its results are
    cut to them, so a field it does not declare never arrives (every call the source checks would be refused). A
    text tool (no fields) sources nothing: a text result is no records, and its text ({"text": ...}) is never read
    by a source, even of a tool that declares a field named so."""
    takers = [(f"tool {t.name!r}", t.sources) for t in tools] + \
        [(f"MCP server {server.name!r} tool {name!r}", rule["sources"]) for name, (server, rule) in remote.items()]
    problems = []
    for who, sources in takers:
        for option in (o for s in sources for o in s.options() if o.tool in remote):
            server, rule = remote[option.tool]
            declared = [f for f in rule["fields"] if isinstance(f, str)]
            for path in _source_field_paths(option):
                if path == "text":                 # where a text result's text is put: never records (not at all)
                    problems.append(f"{who}: its source from {option.tool!r} reads 'text', where a text result of an "
                                    f"MCP tool is put: a text result sources nothing (read a field of another name)")
                elif path not in declared and path + "[]" not in declared:
                    problems.append(f"{who}: its source from {option.tool!r} reads {path!r}, which MCP server "
                                    f"{server.name!r} does not declare for {option.tool!r} (declared fields: "
                                    f"{', '.join(declared) if declared else 'none: a text tool sources nothing'})")
    return problems


def _source_field_paths(source):
    """The result paths a source reads (its path and each of its fields, as an MCP declaration names them:
    "slots[].slot_id"); none when it steps into a mapping ("*"), which no MCP field path names."""
    steps = [p for p in source.path.split(".") if p]
    if any("*" in step for step in steps) or any("*" in f for f in source.fields):
        return []
    return [".".join([*steps, f]) for f in source.fields]


def _rules_problems(agent, known):
    """What is wrong with the rules of an agent and its tools: each a Rule naming tools the agent has, and one
    check per name (--check finds a rule's code again by its name)."""
    if not isinstance(agent.rules, tuple) or not all(isinstance(r, Rule) for r in agent.rules):
        return ["rules must be a list of calls.Rule"]
    problems = [f"rule {r.name!r}: tools names {t!r}, which is not one of the agent's tools ({', '.join(known)})"
                for r in agent.rules for t in r.tools if t not in known]
    checks: dict[str, Callable] = {}
    remote = [r for s in agent.mcp if isinstance(s, MCPServer) for rule in s.tools.values() for r in rule["rules"]]
    for rule in [*agent.rules, *(r for t in agent.tools for r in t.rules), *remote]:
        if checks.setdefault(rule.name, rule.check) is not rule.check:
            problems.append(f"two rules are named {rule.name!r}: a rule's name must say which check it is")
    return list(dict.fromkeys(problems))


def _reads_user(sources):
    """Whether any of these sources (or an alternative of one) is the user's own messages."""
    return any(o.tool == stated.USER for s in sources for o in s.options())


def _mcp_problems(agent, names):
    """What is wrong with an agent's MCP servers, and {tool: (server, rule)} of the tools they allow."""
    if not isinstance(agent.mcp, tuple) or not all(isinstance(s, MCPServer) for s in agent.mcp):
        return ["mcp must be a list of servers.MCPServer"], {}
    problems: list[str] = []
    remote: dict[str, tuple[MCPServer, Any]] = {}       # tool -> (its server, its rule as declared)
    servers = [s.name for s in agent.mcp]
    problems += [f"two MCP servers are named {n!r}" for n in sorted({n for n in servers if servers.count(n) > 1})]
    for server in agent.mcp:
        problems += [f"MCP server {server.name!r}: replaces={r!r} is not one of the agent's tools ({', '.join(names)})"
                     for r in server.replaces if r not in names]
        for name, rule in server.tools.items():
            if name in remote:
                problems.append(f"MCP server {server.name!r} tool {name!r} collides with MCP server "
                                f"{remote[name][0].name!r} tool {name!r}")
            elif name in names and name not in server.replaces:
                problems.append(f"MCP server {server.name!r} tool {name!r} collides with the local tool {name!r} "
                                f"(rename one, or declare replaces=({name!r},))")
            remote[name] = (server, rule)
    return problems, remote

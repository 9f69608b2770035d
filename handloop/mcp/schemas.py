"""An MCP server's tools as a run sees them: the tools its declaration allows, as OpenAI function specs made from the
input schemas the server lists (`allowed_specs`) or a run recorded (`recorded`), each schema kept to what validation
understands of it (untrusted: bounded, its patterns checked), the argument the loop fills (the idempotency key) left
out.

Invariants: a tool the server does not offer, or whose schema lacks an argument the declaration needs, is an
MCPError naming the server and the tool; a server's description is untrusted text, kept to DESCRIPTION_LIMIT.
"""
from __future__ import annotations

import math
import re
from typing import Any

from .. import mcp_tools
from .. import texts
from .servers import DESCRIPTION_LIMIT, needed

__all__ = ["allowed_specs", "recorded", "SCHEMA_DEPTH"]


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


def recorded(schemas, server, say=texts.ZH_TEXTS):
    """The tools `server` allows among the schemas a run recorded, checked as the server's would be."""
    found = {s["function"].get("name"): s["function"] for s in schemas
             if isinstance(s, dict) and isinstance(s.get("function"), dict)}
    offered = {name: {"description": found[name].get("description"), "inputSchema": found[name].get("parameters")}
               for name in server.tools if name in found}
    return allowed_specs(offered, server, where=say("mcp.recorded_tools"), say=say, listed=False)

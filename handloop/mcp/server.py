"""An MCP server's protocol engine, over any transport: JSON-RPC 2.0 messages in, replies out, for the tools a
server offers (the 2025 revisions, with a session opened by `initialize`, and the stateless 2026-07-28 one, whose
requests carry their version in `_meta`). `serve` runs an engine over stdio lines; mcp/http_server.py over
Streamable HTTP. What the tools are and do is the caller's (demo/weather_server.py is one).

Invariants: exactly one reply per request and none per notification; hostile input (invalid JSON,
wrong types, huge lines, early or unknown requests) gets its JSON-RPC error and never stops it;
requests are answered one at a time, in order; a tool's arguments are validated against its
inputSchema before it runs; bad argument values and tool failures (ToolFailed) are `isError`
results the model can act on; protocol misuse is a JSON-RPC error; a fault of the server's own
code is an internal error, logged on stderr, and it keeps serving.
"""
import json
import re
import sys
import traceback

from ..values import validate
from ..mcp_tools import (INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, LEGACY_VERSIONS, MCPError, META_CAPABILITIES,
                         META_SERVER_INFO, META_VERSION, METHOD_NOT_FOUND, MODERN_VERSION,
                         PARSE_ERROR, TOO_LONG, ToolFailed, UNSUPPORTED_VERSION, encode, error_reply,
                         read_line, reply, strict_loads, valid_id)

SERVER_MAX_LINE = 1 << 20           # bytes in one message the server reads


def tool_result(value):
    return {"content": [{"type": "text", "text": json.dumps(value, ensure_ascii=False)}],
            "structuredContent": value, "isError": False}


def tool_error(text):
    return {"content": [{"type": "text", "text": text}], "isError": True}


class Server:
    """The protocol engine of one session: one message in, at most one reply out. Knows nothing of pipes.
    `tools`: the tools as `tools/list` describes them; `source`: an object with a method per tool, called
    with the arguments (validated against the tool's inputSchema first); `info`: the serverInfo."""

    CAPABILITIES = {"tools": {"listChanged": False}}
    LIST_TTL_MS = 60_000

    def __init__(self, source, tools, info, instructions="", page_size=50):
        self.source, self.tools, self.info, self.instructions = source, list(tools), dict(info), instructions
        self.page_size = max(1, page_size)
        self.initialized = False

    def handle(self, line):
        """The reply to one line (bytes), or None when nothing may be said (notifications)."""
        if line is TOO_LONG:
            return error_reply(None, INVALID_REQUEST, f"Invalid Request: message longer than {SERVER_MAX_LINE} bytes")
        try:
            message = strict_loads(line)
        except ValueError:
            return error_reply(None, PARSE_ERROR, "Parse error: the line is not valid UTF-8 JSON")
        except RecursionError:
            return error_reply(None, INVALID_REQUEST, "Invalid Request: JSON nested too deeply")
        return self.dispatch(message)

    def dispatch(self, message):
        if not isinstance(message, dict):
            return error_reply(None, INVALID_REQUEST, "Invalid Request: expected one JSON object (no batches)")
        rid = message.get("id")
        if "method" not in message:
            if "id" in message and ("result" in message or "error" in message):
                return None                                # a reply to nothing we asked: ignore
            return error_reply(rid if valid_id(rid) else None, INVALID_REQUEST, "Invalid Request: no method")
        if "id" not in message:                            # a notification: never answered
            return None
        if not valid_id(rid):
            return error_reply(None, INVALID_REQUEST, "Invalid Request: id must be a string or a number")
        if message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
            return error_reply(rid, INVALID_REQUEST, 'Invalid Request: needs "jsonrpc": "2.0" and a string "method"')
        params = {} if message.get("params") is None else message["params"]
        if not isinstance(params, dict):
            return error_reply(rid, INVALID_PARAMS, "Invalid params: params must be an object")
        return self._answer(rid, message["method"], params)

    def _answer(self, rid, method, params):
        try:
            return reply(rid, self.route(method, params))
        except MCPError as exc:
            return error_reply(rid, exc.code, exc.message, exc.data)
        except Exception as exc:                           # a fault of ours: report it, keep serving
            traceback.print_exc(file=sys.stderr)
            return error_reply(rid, INTERNAL_ERROR, f"Internal error: {type(exc).__name__}")

    def route(self, method, params):
        meta = params.get("_meta")
        if isinstance(meta, dict) and META_VERSION in meta:
            return self.modern(method, params, meta)
        if method == "initialize":
            return self.initialize(params)
        if method == "ping":
            return {}
        if method == "server/discover":
            raise MCPError(f"Invalid params: server/discover needs params._meta[{META_VERSION!r}]", INVALID_PARAMS)
        if method not in ("tools/list", "tools/call"):
            raise MCPError(f"Method not found: {method}", METHOD_NOT_FOUND)
        if not self.initialized:
            raise MCPError("Invalid Request: not initialized; send initialize first, or use the 2026-07-28 "
                           "_meta envelope", INVALID_REQUEST)
        return self.list_tools(params) if method == "tools/list" else self.call_tool(params)

    def initialize(self, params):
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise MCPError("Invalid params: initialize needs params.protocolVersion (a string)", INVALID_PARAMS)
        if self.initialized:
            raise MCPError("Invalid Request: already initialized", INVALID_REQUEST)
        self.initialized = True
        return {"protocolVersion": requested if requested in LEGACY_VERSIONS else LEGACY_VERSIONS[0],
                "capabilities": self.CAPABILITIES, "serverInfo": self.info, "instructions": self.instructions}

    def modern(self, method, params, meta):
        """A 2026-07-28 request: stateless, its envelope says who asks and at which version."""
        version = meta[META_VERSION]
        if not isinstance(version, str):
            raise MCPError(f"Invalid params: _meta[{META_VERSION!r}] must be a string", INVALID_PARAMS)
        if version != MODERN_VERSION:
            raise MCPError(f"Unsupported protocol version: {version}", UNSUPPORTED_VERSION,
                           {"supported": [MODERN_VERSION, *LEGACY_VERSIONS], "requested": version})
        if not isinstance(meta.get(META_CAPABILITIES), dict):
            raise MCPError(f"Invalid params: _meta[{META_CAPABILITIES!r}] must be an object", INVALID_PARAMS)
        handlers = {"server/discover": self.discover, "tools/list": self.list_tools,
                    "tools/call": self.call_tool, "ping": lambda p: {}}
        if method not in handlers:
            raise MCPError(f"Method not found: {method}", METHOD_NOT_FOUND)
        result = dict(handlers[method](params), resultType="complete")
        if method in ("server/discover", "tools/list"):
            result.update(ttlMs=self.LIST_TTL_MS, cacheScope="public")
        return result

    def discover(self, params):
        return {"supportedVersions": [MODERN_VERSION, *LEGACY_VERSIONS], "capabilities": self.CAPABILITIES,
                "instructions": self.instructions, "_meta": {META_SERVER_INFO: self.info}}

    def list_tools(self, params):
        cursor, start = params.get("cursor"), 0
        if cursor is not None:
            match = re.fullmatch(r"page-(\d{1,6})", cursor) if isinstance(cursor, str) else None
            start = int(match.group(1)) if match else -1
            if not 0 < start < len(self.tools):
                raise MCPError("Invalid params: unknown cursor", INVALID_PARAMS)
        end = start + self.page_size
        result: dict[str, object] = {"tools": self.tools[start:end]}
        if end < len(self.tools):
            result["nextCursor"] = f"page-{end}"
        return result

    def call_tool(self, params):
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str):
            raise MCPError("Invalid params: tools/call needs params.name (a string)", INVALID_PARAMS)
        spec = next((t for t in self.tools if t["name"] == name), None)
        if spec is None:
            raise MCPError(f"Invalid params: unknown tool {name}", INVALID_PARAMS)
        arguments = {} if arguments is None else arguments
        if not isinstance(arguments, dict):
            raise MCPError("Invalid params: params.arguments must be an object", INVALID_PARAMS)
        problems = validate(spec["inputSchema"], arguments, path="参数")
        if problems:
            return tool_error(f"{name} 的参数不对：" + "；".join(problems))
        try:
            return tool_result(getattr(self.source, name)(**arguments))
        except ToolFailed as exc:
            return tool_error(exc.message)


def serve(stdin, stdout, server):
    """Answer lines from `stdin` until EOF; replies go to `stdout`, each flushed at once."""
    while True:
        line = read_line(stdin, SERVER_MAX_LINE)
        if line is None:
            return 0
        if line is not TOO_LONG and not line.strip():
            continue
        answer = server.handle(line)
        if answer is None:
            continue
        try:
            data = encode(answer)
        except ValueError:                                 # a NaN in a result: a fault of ours, still answered
            data = encode(error_reply(answer.get("id"), INTERNAL_ERROR, "Internal error: result is not JSON"))
        stdout.write(data)
        stdout.flush()

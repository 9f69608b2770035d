"""handloop: a hand-written LLM agent loop you own.

The public API is what `__all__` names; everything else may change between releases. Names are loaded
when first used (PEP 562), so the MCP weather server or the judge alone import only what they need.
`__version__` is the installed distribution's version (read when first asked for), or, in a checkout
that is not installed, the version its pyproject.toml declares.

The errors a program catches by name: HandloopError, the base of them all; DeclarationError (a declaration
mistake, also a ValueError); AuditError (a run that cannot be found, read or used now), with CorruptAuditError
(its audit file cannot be read or trusted) and Refused (not in a state that way of resuming accepts: a second
`confirm`); ModelError (the model service failed).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:                   # what type checkers see of the names __getattr__ loads (re-exported: `X as X`)
    from .audit import AuditError as AuditError, CorruptAuditError as CorruptAuditError
    from .agents import Agent as Agent
    from .mcp.servers import MCPServer as MCPServer, MCPTool as MCPTool
    from .calls import (Rule as Rule, Source as Source, Tool as Tool,
                        ToolError as ToolError)
    from .config import Policy as Policy
    from .errors import DeclarationError as DeclarationError, HandloopError as HandloopError
    from .loop import Run as Run, run as run
    from .model import (FunctionModel as FunctionModel, Model as Model, ModelError as ModelError, Reply as Reply,
                        connect as connect, offline_model as offline_model)
    from .runs import (Refused as Refused, Resume as Resume, confirm as confirm, reply as reply, resume as resume,
                       start as start)
    from .toolset import ToolSet as ToolSet

    __version__: str

_WHERE = {
    "Agent": "agents", "Tool": "calls", "Source": "calls", "Rule": "calls", "ToolError": "calls", "MCPServer": "mcp.servers", "MCPTool": "mcp.servers",
    "Policy": "config",
    "Run": "loop", "run": "loop",
    "ToolSet": "toolset",
    "Model": "model", "FunctionModel": "model", "connect": "model", "offline_model": "model", "Reply": "model", "ModelError": "model",
    "start": "runs", "confirm": "runs", "reply": "runs", "resume": "runs", "Resume": "runs",
    "HandloopError": "errors", "DeclarationError": "errors", "AuditError": "audit", "CorruptAuditError": "audit",
    "Refused": "runs",
}

__all__ = list(_WHERE)


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = _version()
    elif name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    else:
        raise AttributeError(f"module 'handloop' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def _version() -> str:
    """The version of handloop (`handloop.__version__`).

    Returns:
        The installed distribution's version; in a checkout that is not installed, the version its
        pyproject.toml declares followed by "+checkout"; "0+unknown" when neither says.
    """
    import os
    import re
    from importlib import metadata
    try:
        return metadata.version("handloop")
    except metadata.PackageNotFoundError:
        pass
    try:
        with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pyproject.toml"),
                  encoding="utf-8") as f:
            found = re.search(r'^\[project\][^\[]*?^version\s*=\s*"([^"]+)"', f.read(), re.M | re.S)
    except OSError:
        found = None
    return f"{found.group(1)}+checkout" if found else "0+unknown"

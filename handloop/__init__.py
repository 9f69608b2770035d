"""handloop: a hand-written LLM agent loop you own.

The public API is what `__all__` names; everything else may change between releases. Names are loaded
when first used (PEP 562), so the MCP weather server or the judge alone import only what they need.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .calls import Agent, MCPServer, Source, Tool, ToolError
    from .config import Policy
    from .loop import Run, run
    from .model import FunctionModel, Model, ModelError, Reply, connect, offline_model
    from .runs import Resume, confirm, reply, resume, start
    from .toolset import ToolSet

_WHERE = {
    "Agent": "calls", "Tool": "calls", "Source": "calls", "ToolError": "calls", "MCPServer": "calls",
    "Policy": "config",
    "Run": "loop", "run": "loop",
    "ToolSet": "toolset",
    "Model": "model", "FunctionModel": "model", "connect": "model", "offline_model": "model", "Reply": "model", "ModelError": "model",
    "start": "runs", "confirm": "runs", "reply": "runs", "resume": "runs", "Resume": "runs",
}

__all__ = list(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'handloop' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

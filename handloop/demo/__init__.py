"""The Xi'an demo's own pieces beside its agent (tools.py): its offline model and its MCP weather server."""

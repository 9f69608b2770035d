"""MCP over Streamable HTTP: the client (http) and the server side (http_server) beside the stdio protocol of
mcp_tools.py."""

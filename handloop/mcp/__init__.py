"""MCP beside the stdio wire and client of mcp_tools.py: the server side's protocol engine (server), and Streamable
HTTP, the client (http) and the server's transport (http_server)."""

"""MCP beside the stdio wire and client of mcp_tools.py: an agent's servers as declared (servers: MCPServer,
MCPTool), a tool's result read as the server sent it (results), the server side's protocol engine (server), and
Streamable HTTP, the client (http) and the server's transport (http_server)."""

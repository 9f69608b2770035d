"""The SDK weather server of mcp_sdk_server.py over the SDK's Streamable HTTP transport (test-only):
`python mcp_sdk_http_server.py [--json] [--stateless]` listens on 127.0.0.1, a free port, and
names its URL on the first stderr line. `--json`: JSON answers instead of SSE streams;
`--stateless`: no sessions. SIGTERM stops it."""
import socket
import sys

import uvicorn

from mcp_sdk_server import app     # noqa: E402


def main(argv):
    web = app.streamable_http_app(json_response="--json" in argv, stateless_http="--stateless" in argv,
                                  host="127.0.0.1")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)                # connections wait in the backlog until uvicorn accepts them
    print(f"MCP server at http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(web, log_level="warning", lifespan="on"))
    server.run(sockets=[sock])


if __name__ == "__main__":
    main(sys.argv[1:])

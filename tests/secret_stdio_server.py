"""The demo's weather server over stdio, which first writes the environment it was given (JSON) to the file its
first argument names: what the secrets tests read to tell which tokens a spawned MCP server received."""
import json
import os
import sys

from handloop.demo import weather_server

if __name__ == "__main__":
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump(dict(os.environ), f)
    sys.exit(weather_server.main([]))

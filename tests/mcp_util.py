"""Helpers for the MCP tests: a raw line-level peer of a stdio server, and the paths and
environments the tests start servers with."""
import json
import os
import queue
import subprocess
import sys
import threading

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
SERVER_COMMAND = [sys.executable, "-m", "handloop.demo.weather_server"]     # our weather server
FAKE = os.path.join(TESTS, "mcp_fake_server.py")
SDK_SERVER = os.path.join(TESTS, "mcp_sdk_server.py")
MODERN = "2026-07-28"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
XIAN = {"latitude": 34.2583, "longitude": 108.9286}


def server_env(**extra):
    """A clean environment for a server: no model credentials, no agent settings but `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}
    env.update({"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}, **extra)
    return env


def fake_command(flags, marker=None):
    return [sys.executable, FAKE, flags] + ([str(marker)] if marker else [])


class Peer:
    """Our side of a raw stdio connection to `python -m handloop.demo.weather_server`: write lines, read replies.
    Every line the server prints on stdout must be one JSON object (checked as read)."""

    def __init__(self, command=None, env=None):
        self.proc = subprocess.Popen(command or SERVER_COMMAND, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env or server_env())
        self.lines = queue.Queue()
        self.threads = [threading.Thread(target=self._pump, daemon=True),
                        threading.Thread(target=self.proc.stderr.read, daemon=True)]
        for thread in self.threads:
            thread.start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def write(self, data):
        self.proc.stdin.write(data if isinstance(data, bytes) else data.encode("utf-8"))
        if not (data.endswith(b"\n") if isinstance(data, bytes) else data.endswith("\n")):
            self.proc.stdin.write(b"\n")
        self.proc.stdin.flush()

    def send(self, message):
        self.write(json.dumps(message, ensure_ascii=False))

    def read(self, timeout=5.0):
        line = self.lines.get(timeout=timeout)
        assert line is not None, "server closed stdout"
        assert line.endswith(b"\n"), line[:200]
        message = json.loads(line)
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", message
        return message

    def ask(self, method, params=None, rid=1):
        message = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        reply = self.read()
        assert reply["id"] == rid
        return reply

    def initialize(self, version="2025-11-25"):
        reply = self.ask("initialize", {"protocolVersion": version, "capabilities": {},
                                        "clientInfo": {"name": "test", "version": "0"}}, rid="init")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply["result"]

    def close(self, timeout=5.0):
        """Close stdin; the server's exit code (it must exit by itself)."""
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for thread in self.threads:
                thread.join(2.0)
            self.proc.stdout.close()
            self.proc.stderr.close()

"""A real headless Chromium for the trace view's tests, driven over the DevTools protocol with the standard
library only (a minimal WebSocket client): open a page, collect what it logged (console errors, uncaught
exceptions, the browser's own error log) and every request it made, evaluate an expression in it, take a
screenshot. Chromium comes from the distribution's packages (`.ci/run` installs it)."""
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1300,1000"]


class Browser:
    def __init__(self, timeout=60):
        self.folder = tempfile.mkdtemp(prefix="chromium-")
        self.process = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={self.folder}",
                                         "--remote-debugging-port=0", "about:blank"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port = self._port(timeout)
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout))
        url = next(p["webSocketDebuggerUrl"] for p in pages if p.get("type") == "page")
        self.socket = _connect(url, timeout)
        self.next_id, self.events = 0, []

    def _port(self, timeout):
        marker, until = os.path.join(self.folder, "DevToolsActivePort"), time.monotonic() + timeout
        while time.monotonic() < until:
            if os.path.exists(marker):
                with open(marker) as f:
                    first = f.readline().strip()
                if first.isdigit():
                    return int(first)
            time.sleep(0.05)
        raise TimeoutError("chromium did not open its DevTools port")

    def close(self):
        try:
            self.socket.close()
        finally:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
            shutil.rmtree(self.folder, ignore_errors=True)

    def call(self, method, **params):
        """Send one command; its result (events that arrive meanwhile are kept in self.events)."""
        self.next_id += 1
        mine = self.next_id
        _send(self.socket, json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            message = json.loads(_receive(self.socket))
            if message.get("id") == mine:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def open(self, url, settle=0.5):
        """Load `url` and wait for its load event, then `settle` seconds more; returns the events."""
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.call(f"{domain}.enable")
        self.events = []
        self.call("Page.navigate", url=url)
        until = time.monotonic() + 30
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            if time.monotonic() > until:
                raise TimeoutError("the page never loaded")
            self.events.append(json.loads(_receive(self.socket)))
        self.socket.settimeout(settle)
        try:
            while True:
                self.events.append(json.loads(_receive(self.socket)))
        except (socket.timeout, TimeoutError):
            pass
        finally:
            self.socket.settimeout(30)
        return self.events

    def problems(self):
        """What the page logged as an error: console.error, uncaught exceptions, the browser's error log."""
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif method == "Runtime.exceptionThrown":
                out.append("exception: " + str(params.get("exceptionDetails", {}).get("text")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append("log: " + str(params["entry"].get("text")))
        return out

    def requests(self):
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(str(result["exceptionDetails"]))
        return result["result"].get("value")

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path


# ---- a minimal WebSocket client (RFC 6455): text frames out, masked; frames in, unmasked ----
def _connect(url, timeout):
    rest = url.split("://", 1)[1]
    where, path = rest.split("/", 1)
    host, port = where.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {where}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)
        if not chunk:
            raise ConnectionError("the DevTools socket closed during the handshake")
        head += chunk
    if b" 101 " not in head.split(b"\r\n", 1)[0]:
        raise ConnectionError(head.decode(errors="replace"))
    sock.settimeout(30)
    return sock


def _send(sock, text):
    payload, mask = text.encode(), os.urandom(4)
    size = len(payload)
    head = bytes([0x81]) + (bytes([0x80 | size]) if size < 126 else
                            bytes([0x80 | 126]) + struct.pack(">H", size) if size < 65536 else
                            bytes([0x80 | 127]) + struct.pack(">Q", size))
    sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))


def _receive(sock):
    parts = []
    while True:
        first, second = _exactly(sock, 2)
        size = second & 0x7F
        if size == 126:
            size = struct.unpack(">H", _exactly(sock, 2))[0]
        elif size == 127:
            size = struct.unpack(">Q", _exactly(sock, 8))[0]
        mask = _exactly(sock, 4) if second & 0x80 else None
        data = _exactly(sock, size)
        if mask:
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        opcode = first & 0x0F
        if opcode == 8:
            raise ConnectionError("the DevTools socket closed")
        if opcode in (0, 1, 2):
            parts.append(data)
            if first & 0x80:
                return b"".join(parts).decode()


def _exactly(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("the DevTools socket closed")
        out += chunk
    return out

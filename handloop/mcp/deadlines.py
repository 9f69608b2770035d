"""The deadline of an MCP HTTP exchange, however slowly its bytes come (a socket timeout bounds one read only): a
`Watch` per exchange, fired by one daemon thread (`Watchdog`) when its deadline passes, shuts every connection and
response it watches so that a blocked read or write returns at once.

Invariants: one watchdog thread per process (started on first use, again after a fork), never one per exchange; a
watch that ended in time is forgotten, never fired; shutting a socket never raises. Standard library only.
"""
import heapq
import itertools
import os
import socket
import threading
import time


def socket_of(thing):
    """A connection's socket, or (once http.client let go of it) the one its response reads from."""
    return getattr(thing, "sock", None) or getattr(getattr(getattr(thing, "fp", None), "raw", None), "_sock", None)


class Watch:
    """A deadline on a whole exchange, however its bytes dribble in (a socket timeout bounds one
    read only): when it passes, every connection and response it watches is shut, so a blocked
    read or write returns at once; `fired` says it did. Watched by the one Watchdog thread."""

    def __init__(self, deadline):
        self.deadline, self.watched, self.fired, self.over = deadline, [], False, False
        self.lock = threading.Lock()

    def __enter__(self):
        WATCHDOG.add(self)
        return self

    def __exit__(self, *exc):
        with self.lock:
            self.over, self.watched = True, []

    def watch(self, thing):
        with self.lock:
            self.watched.append(thing)
            fired = self.fired
        if fired:
            shut(thing)

    def fire(self):
        with self.lock:
            if self.over:
                return
            self.fired, watched = True, list(self.watched)
        for thing in watched:
            shut(thing)


class Watchdog:
    """One daemon thread that fires each watch whose deadline has passed (no thread per exchange:
    starting one costs more than a local MCP call); started on first use, again after a fork."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.cond, self.heap, self.thread, self.count = threading.Condition(), [], None, itertools.count()

    def add(self, watch):
        with self.cond:
            heapq.heappush(self.heap, (watch.deadline, next(self.count), watch))
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, daemon=True, name="mcp-deadlines")
                self.thread.start()
            self.cond.notify()

    def _run(self):
        while True:
            with self.cond:
                while self.heap and self.heap[0][2].over:        # finished in time: forgotten
                    heapq.heappop(self.heap)
                left = self.heap[0][0] - time.monotonic() if self.heap else None
                if left is None or left > 0:
                    self.cond.wait(left)
                    continue
                watch = heapq.heappop(self.heap)[2]
            watch.fire()


WATCHDOG = Watchdog()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=WATCHDOG.reset)


def shut(thing):
    """Shut a connection's socket (TLS too: its plain socket) so that a read blocked on it returns."""
    sock = socket_of(thing)
    if sock is not None:
        try:
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except (OSError, TypeError, ValueError):
            pass

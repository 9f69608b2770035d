"""The audit file: one JSON snapshot per run that is both the record and the resume point.

Invariants: a snapshot is written atomically (a spare file, fsync, a link renamed over the file,
fsync of the folder), so the file on disk is always a whole snapshot, never half of one, even under kill -9.
A snapshot is strict JSON: NaN and infinities are refused (ValueError), as --check reads it.
Loading checks version, structure and tool-call pairing and refuses a bad file with a clear
message (CorruptAuditError, an AuditError). A run is used by one process at a time (RunLock, released by the OS when
its holder dies). Run ids are checked before they touch a path.
"""
import datetime
import json
import os
import secrets

from . import config
from .errors import HandloopError
from .texts import Said

STATUSES = ("running", "suspended", "done", "stopped", "error")
_encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode     # no indent: keeps the C encoder
_ascii = json.JSONEncoder(allow_nan=False).encode                        # strict JSON: NaN is refused (ValueError)


def _utf8(value):
    """`value` as UTF-8 JSON. A lone surrogate (bytes that were not UTF-8, passed on by the OS or a
    JSON \\udcxx escape) cannot be UTF-8: that value is written with JSON escapes, which load back
    to the same string."""
    try:
        return _encode(value).encode()
    except UnicodeEncodeError:
        return _ascii(value).encode()


class AuditError(HandloopError):
    """A run that cannot be found, read, trusted or used now; the message (a texts.Said, or a text
    already said) says which. Its subclasses: CorruptAuditError, and runs.Refused."""


class CorruptAuditError(AuditError):
    """An audit file that cannot be read (not UTF-8 JSON, nested too deep) or is not a whole, consistent snapshot
    (version, structure, every tool call answered in order, the run it names): nothing of it is used."""


def check_run_id(run_id):
    if not isinstance(run_id, str) or not config.RUN_ID_PATTERN.fullmatch(run_id) or run_id in (".", ".."):
        raise AuditError(Said("audit.bad_id", run_id=str(run_id)[:80]))
    return run_id


def new_run_id():
    return datetime.datetime.now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def path_for(audit_dir, run_id):
    return os.path.join(audit_dir, f"run-{check_run_id(run_id)}.json")


def latest_run_id(audit_dir, cmd="handloop"):
    """The run whose audit file changed last, or AuditError when there is none (saying to start one with `cmd`,
    the command as the user ran it)."""
    try:
        names = [n for n in os.listdir(audit_dir) if n.startswith("run-") and n.endswith(".json")]
    except OSError:
        names = []
    if not names:
        raise AuditError(Said("audit.no_runs", folder=audit_dir, cmd=cmd))
    newest = max(names, key=lambda n: (os.path.getmtime(os.path.join(audit_dir, n)), n))
    return newest[len("run-"):-len(".json")]


def write(path, snapshot, fsync=True):
    """Replace the file at `path` by `snapshot`, atomically (one-off; a run keeps a Writer)."""
    Writer(path, fsync).write(snapshot)


class Writer:
    """Writes the snapshots of one run to `path`, each atomically: the bytes go to a spare file
    that is then linked and renamed over `path`, so `path` names a whole snapshot at every moment.

    The spares are two hard links beside the snapshot, `.run-<id>.json.a` and `.b`, used in turn:
    the file a rename replaces lives on under its spare name, so no file is freed per write
    (freeing costs 0.1-0.5 ms on file systems mounted with discard, as many cloud disks are).
    Where hard links are not possible, a fresh temp file is used instead. The writer remembers
    which spare it published last (the run lock keeps other processes out), so a write asks the
    file system nothing it already knows.

    Encoding is incremental: each list item (message, trace record, tool schema) is encoded once,
    by identity, so list items must never be changed in place once written (the loop only
    appends messages and trace records, and replaces messages[0] by a new dict)."""

    def __init__(self, path, fsync=True):
        self.path, self.fsync = path, fsync
        self.items = {}          # id(item) -> (item, its text)
        self.published = None    # the spare now linked at path, once this writer wrote it
        self.sizes = {}          # spare -> bytes it holds
        if path is not None:
            folder, name = os.path.split(path)
            self.folder, self.link = folder or ".", os.path.join(folder, f".{name}.new")
            self.slots = [os.path.join(folder, f".{name}.{slot}") for slot in ("a", "b")]

    def write(self, snapshot):
        parts = self.parts(snapshot)
        size = sum(map(len, parts))
        spare = self._spare()
        fd = os.open(spare, os.O_WRONLY | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
        try:
            if config.armed("mid_audit"):
                data = b"".join(parts)
                _write_all(fd, [data[:size // 2]])
                config.fault("mid_audit")
                _write_all(fd, [data[size // 2:]])
            else:
                _write_all(fd, parts)
            if self.sizes.get(spare, size + 1) > size:               # an older, longer snapshot's tail
                os.ftruncate(fd, size)
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        self.published = None
        _publish(spare, self.link, self.path)
        self.published, self.sizes[spare] = spare, size
        if self.fsync:
            _fsync_dir(self.folder)

    def _spare(self):
        """The spare not currently linked at path."""
        slots = self.slots
        if self.published in slots:
            return slots[1 - slots.index(self.published)]
        self.sizes.clear()                    # not ours yet: sizes unknown, truncate
        try:
            current = os.stat(self.path).st_ino
        except FileNotFoundError:
            current = None
        for spare in slots:
            try:
                if os.stat(spare).st_ino != current:
                    return spare
            except FileNotFoundError:
                return spare
        raise AuditError(Said("audit.spares", path=self.path))

    def encode(self, snapshot):
        """The snapshot's bytes as written (see parts)."""
        return b"".join(self.parts(snapshot))

    def parts(self, snapshot):
        """The snapshot as UTF-8 JSON, in pieces written as they are (os.writev: a 1 MB snapshot is
        not copied once more to join them): the values that are not lists on the first line, then each
        list (messages, tools, trace) with one item per line; readable, and built by the C encoder
        (json's indent forces the slow one)."""
        fresh, items = {}, self.items

        def item(value):
            hit = items.get(id(value))
            text = hit[1] if hit is not None and hit[0] is value else _utf8(value)
            fresh[id(value)] = (value, text)
            return text

        head = {k: v for k, v in snapshot.items() if not isinstance(v, list)}
        parts = [_utf8(head)[:-1] if head else b"{"]
        for key, value in snapshot.items():
            if isinstance(value, list):
                parts += (b",\n " if len(parts) > 1 or head else b"\n ", _KEYS.get(key) or _key(key))
                if value:
                    texts = list(map(item, value))
                    pieces = [_SEP] * (2 * len(texts) - 1)        # item, separator, item, ...: never joined
                    pieces[::2] = texts
                    parts += (b"[\n  ", *pieces, b"\n ]")
                else:
                    parts.append(b"[]")
        parts.append(b"\n}\n")
        self.items = fresh
        return parts


def encode(snapshot):
    """The snapshot as written to its file (see Writer.encode)."""
    return Writer(None).encode(snapshot)


def _publish(spare, link, path):
    """Rename a new link to `spare` over `path`; with no hard links, a copy of it instead."""
    for attempt in (1, 2):
        try:
            os.link(spare, link)
            break
        except FileExistsError:            # left by a crash between link and rename
            _remove(link)
        except OSError:                    # no hard links here: publish a copy
            with open(spare, "rb") as src, open(link, "wb") as dst:
                dst.write(src.read())
            break
    os.replace(link, path)


def _write_all(fd, parts):
    """Write every byte of `parts` at the descriptor's position, gathered (os.writev where it
    exists, at most IOV_MAX pieces a call), however short each write comes back."""
    views = [memoryview(p) for p in parts if p]
    gather = getattr(os, "writev", None)
    while views:
        done = gather(fd, views[:_IOV_MAX]) if gather else os.write(fd, views[0])
        while views and done >= len(views[0]):
            done -= len(views[0])
            views.pop(0)
        if done:
            views[0] = views[0][done:]


_IOV_MAX = min(os.sysconf("SC_IOV_MAX"), 1024) if hasattr(os, "sysconf") and "SC_IOV_MAX" in os.sysconf_names else 16


_KEYS: dict[str, bytes] = {}
_SEP = b",\n  "


def _key(key):
    _KEYS[key] = text = _encode(key).encode() + b": "
    return text


def load(path):
    """The snapshot at `path`, checked; AuditError with a clear message when there is none, CorruptAuditError
    when it cannot be read or used."""
    try:
        with open(path, encoding="utf-8") as f:
            snapshot = json.load(f)
    except FileNotFoundError:
        raise AuditError(Said("audit.missing", path=path)) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CorruptAuditError(Said("audit.unreadable", path=path, error=exc)) from None
    except RecursionError:
        raise CorruptAuditError(Said("audit.too_deep", path=path)) from None
    problem = structure_problem(snapshot) or pairing_problem(snapshot["messages"])
    if problem:
        raise CorruptAuditError(Said("audit.unusable", path=path, problem=problem))
    return snapshot


def structure_problem(snapshot):
    if not isinstance(snapshot, dict):
        return Said("audit.not_object")
    if snapshot.get("version") != config.AUDIT_VERSION:
        return Said("audit.version", version=snapshot.get("version"), ours=config.AUDIT_VERSION)
    kinds = {"run_id": str, "status": str, "turn": int, "mode": str, "messages": list, "memory": dict,
             "tools": list, "trace": list}
    for key, kind in kinds.items():
        if not isinstance(snapshot.get(key), kind):
            return Said("audit.field", key=key)
    if snapshot["status"] not in STATUSES or snapshot["mode"] not in ("local", "mcp"):
        return Said("audit.status", status=snapshot["status"], mode=snapshot["mode"])
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in snapshot["messages"]):
        return Said("audit.not_messages")
    return None


def pairing_problem(messages):
    """The API's rule: every tool call answered by one tool message, in order, before anything else."""
    waiting = []
    for i, message in enumerate(messages):
        if message["role"] == "tool":
            if not waiting or message.get("tool_call_id") != waiting[0]:
                return Said("audit.orphan", index=i)
            waiting.pop(0)
            continue
        if waiting:
            return Said("audit.unanswered_before", index=i, calls=waiting)
        if message["role"] == "assistant":
            calls = message.get("tool_calls") or []
            if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
                return Said("audit.bad_calls", index=i)
            waiting = [c.get("id") for c in calls]
            if len(set(waiting)) != len(waiting):
                return Said("audit.duplicate_ids", index=i)
    return Said("audit.unanswered", calls=waiting) if waiting else None


class RunLock:
    """An exclusive lock on one run for this process; the OS drops it if the process dies. Taken
    already: an AuditError, said in `say`'s language when one is given (the run's agent's)."""

    def __init__(self, audit_dir, run_id, say=None):
        self.path = os.path.join(audit_dir, f"run-{check_run_id(run_id)}.lock")
        self.run_id, self.fd, self.say = run_id, None, say

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _lock(self.fd)
        except OSError:
            os.close(self.fd)
            self.fd = None
            busy = Said("audit.busy", run_id=self.run_id)
            raise AuditError(busy(self.say) if self.say else busy) from None
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)        # closing the descriptor releases the lock
            self.fd = None


def _lock(fd):
    try:
        import fcntl
    except ImportError:             # Windows
        import msvcrt
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        return
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _fsync_dir(folder):
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:                 # not possible on every platform; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass

"""The audit file: one JSON snapshot per run that is both the record and the resume point.

Invariants: a snapshot is written atomically (a spare file, fsync, a link renamed over the file,
fsync of the folder), so the file on disk is always a whole snapshot, never half of one, even under kill -9.
The audit folder is written only through files this code made: a spare is written only when it is a plain
file with one name (else it is replaced by a fresh one: O_CREAT | O_EXCL | O_NOFOLLOW), a temporary file is
always fresh, the lock file is never opened through a link, and a name renamed over (a snapshot, a page) may
be a link, which the rename replaces: no link planted in the folder is ever written through.
A snapshot is strict JSON: NaN and infinities are refused (ValueError), as --check reads it.
Loading checks version, the shape of every field a loader or reader uses and tool-call pairing (snapshot.py),
and refuses a bad file with a clear message naming the field (CorruptAuditError, an AuditError): what load
returns, no reader of it can trip on.
A run is used by one process at a time (RunLock, released by the OS when
its holder dies). Run ids are checked before they touch a path.
"""
import datetime
import json
import os
import secrets
import stat

from . import config
from .errors import HandloopError
from . import texts
from .texts import Said
from .snapshot import pairing_problem, structure_problem

_encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode     # no indent: keeps the C encoder
_ascii = json.JSONEncoder(allow_nan=False).encode                        # strict JSON: NaN is refused (ValueError)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)        # a link at the name is refused (ELOOP), never followed
_BINARY = getattr(os, "O_BINARY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)        # a FIFO planted at a name fails at once instead of waiting


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
    already said) says which. Its subclasses: CorruptAuditError, and runs.Refused. `language`: the one to say it in
    when no agent is given (a damaged file's recorded agent's), else None."""

    language: str | None = None


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
        fd = self._open(spare)
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
            current = os.lstat(self.path).st_ino
        except FileNotFoundError:
            current = None
        for spare in slots:
            try:
                if os.lstat(spare).st_ino != current:
                    return spare
            except FileNotFoundError:
                return spare
        raise AuditError(Said("audit.spares", path=self.path))

    def _open(self, spare):
        """The spare, open for writing: the plain file with one name a writer of this run made, else a fresh
        one in its place. Anything else at that name (a link to a file outside, a hard link to another file, a
        FIFO) is not ours: it is unlinked and replaced, never written through."""
        try:
            fd = os.open(spare, os.O_WRONLY | _NOFOLLOW | _NONBLOCK | _BINARY)
        except OSError:                        # absent, a symlink (ELOOP), a FIFO nobody reads (ENXIO)...
            fd = None
        if fd is not None:
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
                return fd
            os.close(fd)
        self.sizes[spare] = 0
        return fresh(spare)

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
    """Rename a new link to `spare` over `path`; with no hard links, a fresh copy of it instead (the
    rename replaces whatever stood at `path`, a link included, and never writes through it)."""
    for attempt in (1, 2, 3):
        try:
            os.link(spare, link)
            break
        except FileExistsError:            # left by a crash between link and rename, or planted
            _remove(link)
        except OSError:                    # no hard links here: publish a copy
            with os.fdopen(os.open(spare, os.O_RDONLY | _NOFOLLOW | _BINARY), "rb") as f:
                data = f.read()
            fd = fresh(link)
            try:
                _write_all(fd, [data])
            finally:
                os.close(fd)
            break
    else:
        raise FileExistsError(f"{link} is in the way and cannot be removed")
    os.replace(link, path)


def fresh(path, mode=0o600):
    """A descriptor, open for writing, on a new empty file at `path` that this process made
    (O_CREAT | O_EXCL | O_NOFOLLOW): whatever stood at the name (a file left by a crash, a link planted
    there) is unlinked first, never written through. OSError when the name cannot be freed."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY
    for attempt in (1, 2):
        try:
            return os.open(path, flags, mode)
        except FileExistsError:
            _remove(path)
    return os.open(path, flags, mode)


def replace(path, data, fsync=True, mode=0o600):
    """Write `data` (bytes) to `path` atomically: into a temporary file of a fresh name beside it, made here
    (fresh), then renamed over `path` (a link standing at `path` is replaced, not followed)."""
    folder, name = os.path.split(path)
    spare = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")
    fd = fresh(spare, mode)
    try:
        try:
            _write_all(fd, [data])
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(spare, path)
    except BaseException:
        _remove(spare)
        raise
    if fsync:
        _fsync_dir(folder or ".")


def plain_file(path, mode=0o644):
    """Make sure `path` is a plain file, to be opened by name by a program that follows links (SQLite):
    created here when absent (O_EXCL | O_NOFOLLOW); OSError when a link or anything but a plain file
    stands there, which is left alone and never opened."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, mode))
        except FileExistsError:            # another process made it meanwhile: looked at below
            pass
        info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode):
        raise OSError(f"{path} is not a plain file (a link, or another kind of file); it is left alone")


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
    when it cannot be read or used (naming the field at fault, said in the language the file's agent records when
    that much of it can be read)."""
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
        error = CorruptAuditError(Said("audit.unusable", path=path, problem=problem))
        error.language = _language(snapshot)
        raise error
    return snapshot


def _language(snapshot):
    """The language the snapshot's agent records, when it is one of ours; else None."""
    agent = snapshot.get("agent") if isinstance(snapshot, dict) else None
    language = agent.get("language") if isinstance(agent, dict) else None
    return language if language in texts.LANGUAGES else None


class RunLock:
    """An exclusive lock on one run for this process; the OS drops it if the process dies. Taken
    already: an AuditError, said in `say`'s language when one is given (the run's agent's)."""

    def __init__(self, audit_dir, run_id, say=None):
        self.path = os.path.join(audit_dir, f"run-{check_run_id(run_id)}.lock")
        self.run_id, self.fd, self.say = run_id, None, say

    def __enter__(self):
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _NONBLOCK | _BINARY, 0o644)
        except OSError:
            if not os.path.islink(self.path):
                raise
            raise AuditError(Said("audit.link", path=self.path)) from None
        try:
            _lock(self.fd)
        except OSError:
            os.close(self.fd)
            self.fd = None
            busy = Said("audit.busy", run_id=self.run_id)
            raise AuditError(busy(self.say) if self.say else busy) from None
        return self

    def __exit__(self, kind, exc, tb):
        if kind is None:
            self.release()
        else:
            self.give_up()

    def give_up(self):
        """Release the lock of work that failed; a run with no audit file (a new run refused before its first
        snapshot, a run id that names no run) leaves no lock file behind either."""
        if self.fd is not None and not os.path.exists(self.path[:-len(".lock")] + ".json"):
            try:
                os.unlink(self.path)        # unlinked while held: whoever opens the name next makes a new file
            except OSError:
                pass
        self.release()

    def acquire(self):
        """Take the lock (AuditError when it is held); returns self."""
        return self.__enter__()

    def __del__(self):
        self.release()              # a lock nobody released goes with its holder

    def release(self):
        fd = getattr(self, "fd", None)                      # (None too when __init__ refused the run id)
        if fd is not None:
            os.close(fd)             # closing the descriptor releases the lock
            self.fd = None


def _lock(fd):
    try:
        import fcntl
    except ImportError:             # Windows
        import msvcrt
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]  # typeshed has them on win32 only
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

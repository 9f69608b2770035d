"""The audit folder is written only through files we made (issue 36, finding 7): a link planted at any name
the command line writes (a snapshot's spares and its new link, the lock file, the trace page and a
temporary file beside it, the demo's bookings.db) is never written through, nor is its target created;
a spare, a temporary file or a page is replaced by a file of our own, the lock file and the store refuse
the link in one line."""
import os

import pytest

from handloop import audit
from conftest import read_audit, run_agent

ORIGINAL = "outside, not to be touched\n"


def _outside(tmp_path, name):
    """An existing file outside the audit folder, and a name outside that does not exist."""
    folder = tmp_path / "outside"
    folder.mkdir(exist_ok=True)
    target = folder / name
    target.write_text(ORIGINAL, encoding="utf-8")
    return target, folder / (name + ".absent")


def _plant(path, target):
    if os.path.lexists(path):
        os.remove(path)
    os.symlink(target, path)


def _untouched(*targets):
    for target in targets:
        if target.name.endswith(".absent"):
            assert not os.path.lexists(target), f"{target} was created through a link"
        else:
            assert target.read_text(encoding="utf-8") == ORIGINAL, f"{target} was written through a link"


def _no_traceback(out):
    assert "Traceback" not in out.stderr + out.stdout, out.stderr


def test_confirm_never_writes_through_links_planted_at_the_snapshots_spares(tmp_path):
    assert run_agent("--run-id", "s", cwd=tmp_path).returncode == 0
    folder = tmp_path / "audit"
    one, absent = _outside(tmp_path, "a.txt")
    two, _ = _outside(tmp_path, "b.txt")
    _plant(folder / ".run-s.json.a", one)
    _plant(folder / ".run-s.json.b", absent)
    _plant(folder / ".run-s.json.new", two)
    out = run_agent("--confirm", "s", cwd=tmp_path)
    _no_traceback(out)
    assert out.returncode == 0, out.stderr
    _untouched(one, two, absent)
    snap = audit.load(str(folder / "run-s.json"))
    assert snap["status"] == "done" and read_audit(folder, "s")["turn"] == snap["turn"]
    assert not os.path.islink(folder / "run-s.json")
    for spare in (".run-s.json.a", ".run-s.json.b"):          # the spares are files of our own again
        assert not os.path.islink(folder / spare)


def test_a_hard_link_planted_as_a_spare_is_replaced_not_written_into(tmp_path):
    assert run_agent("--run-id", "h", cwd=tmp_path).returncode == 0
    folder = tmp_path / "audit"
    target, _ = _outside(tmp_path, "hard.txt")
    for slot in "ab":
        spare = folder / f".run-h.json.{slot}"
        if os.lstat(spare).st_ino != os.lstat(folder / "run-h.json").st_ino:
            os.remove(spare)
            os.link(target, spare)
    out = run_agent("--confirm", "h", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    _untouched(target)
    assert audit.load(str(folder / "run-h.json"))["status"] == "done"


def test_a_link_at_the_audit_file_itself_is_replaced_by_the_snapshot(tmp_path):
    assert run_agent("--run-id", "f", cwd=tmp_path).returncode == 0
    folder = tmp_path / "audit"
    target, _ = _outside(tmp_path, "snapshot.json")
    target.write_text((folder / "run-f.json").read_text(encoding="utf-8"), encoding="utf-8")
    before = target.read_text(encoding="utf-8")
    _plant(folder / "run-f.json", target)
    out = run_agent("--confirm", "f", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert target.read_text(encoding="utf-8") == before                     # read through, never written
    assert not os.path.islink(folder / "run-f.json") and read_audit(folder, "f")["status"] == "done"


def test_trace_never_writes_through_a_link_at_the_page_or_beside_it(tmp_path):
    assert run_agent("--run-id", "t", cwd=tmp_path).returncode == 0
    folder = tmp_path / "audit"
    page, absent = _outside(tmp_path, "page.html")
    tmp, _ = _outside(tmp_path, "page.tmp")
    _plant(folder / "trace-t.html", page)
    _plant(folder / "trace-t.html.tmp", tmp)
    _plant(folder / ".trace-t.html.tmp", absent)
    out = run_agent("--trace", "t", cwd=tmp_path)
    _no_traceback(out)
    assert out.returncode == 0, out.stderr
    _untouched(page, tmp, absent)
    written = folder / "trace-t.html"
    assert not os.path.islink(written) and "<!doctype html>" in written.read_text(encoding="utf-8")
    assert out.stdout.strip() == str(written)
    assert not [n for n in os.listdir(folder) if n.startswith(".trace-t.html.") and n != ".trace-t.html.tmp"]


@pytest.mark.parametrize("dangling", [False, True])
def test_a_link_at_the_lock_file_is_refused_in_one_line(tmp_path, dangling):
    assert run_agent("--run-id", "l", cwd=tmp_path).returncode == 0
    folder = tmp_path / "audit"
    target, absent = _outside(tmp_path, "lock")
    _plant(folder / "run-l.lock", absent if dangling else target)
    out = run_agent("--confirm", "l", cwd=tmp_path)
    _no_traceback(out)
    assert out.returncode == 2 and "run-l.lock" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    _untouched(target, absent)
    assert read_audit(folder, "l")["status"] == "suspended"                 # the run was not touched


def test_a_link_at_the_demo_bookings_db_is_never_opened(tmp_path):
    assert run_agent("--run-id", "b", cwd=tmp_path).returncode == 0
    folder = tmp_path / "audit"
    db, absent = _outside(tmp_path, "bookings.db")
    db.write_bytes(b"")                                # an empty file: SQLite would make its tables in it
    for target in (db, absent):
        _plant(folder / "bookings.db", target)
        out = run_agent("--confirm", "b", cwd=tmp_path) if target is db else run_agent("--resume", "b", cwd=tmp_path)
        _no_traceback(out)
        assert db.read_bytes() == b"" and not os.path.lexists(absent)
    snap = read_audit(folder, "b")
    told = [m["content"] for m in snap["messages"] if m["role"] == "tool"]
    assert any("bookings.db" in t for t in told) and not any("booking_id" in t for t in told)   # the store refused


def test_the_store_makes_its_database_file_when_there_is_none(tmp_path):
    from handloop import tools
    store = tools.BookingStore(str(tmp_path / "bookings.db"))
    assert store.count() == 0 and os.path.isfile(tmp_path / "bookings.db")
    assert not os.path.islink(tmp_path / "bookings.db")

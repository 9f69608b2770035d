"""A run is never left `running` by an exception of our own, and one run has one driver at a time (issue 36,
finding 10): the loop records `error/internal` with the exception's one line and the run stays resumable; the
command line says it in one line (exit 1), no traceback; the library's start/confirm/reply/resume take the run's
lock as the command line does, so a second driver (another thread, another process) is refused."""
import os
import threading

import pytest

import handloop
from handloop import audit, loop, runs, tools
from handloop.demo import offline
from conftest import read_audit, run_agent

BUG = "name 'cut' is not defined"


def _agent(folder):
    return tools.xian_agent(tools.BookingStore(os.path.join(folder, "bookings.db")))


def _broken_compact(after):
    """loop.compact failing as a bug of ours would (finding 9's NameError) from its `after`+1-th call on."""
    real, calls = loop.compact, []

    def compact(*args, **kwargs):
        calls.append(1)
        if len(calls) > after:
            raise NameError(BUG)
        return real(*args, **kwargs)
    return compact


def _cut_off(folder, run_id):
    """A run begun through the library and left `running` (its process went away before driving it)."""
    r, ts = handloop.start(_agent(folder), run_id, audit_dir=folder)
    ts.close()
    assert read_audit(folder, run_id)["status"] == "running"


def test_an_exception_of_ours_in_the_loop_is_recorded_error_internal_and_resume_goes_on(tmp_path, monkeypatch):
    folder = str(tmp_path)
    agent, model = _agent(folder), handloop.offline_model(offline.respond)
    try:
        r, ts = handloop.start(agent, "i1", audit_dir=folder)
        monkeypatch.setattr(loop, "compact", _broken_compact(after=1))
        try:
            handloop.run(r, model, ts)
        finally:
            ts.close()
        assert (r.status, r.reason, r.detail) == ("error", "internal", f"NameError: {BUG}")
        snap = audit.load(os.path.join(folder, "run-i1.json"))             # loadable, paired, on record
        assert (snap["status"], snap["reason"], snap["detail"]) == ("error", "internal", f"NameError: {BUG}")
        assert snap["turn"] == 1 and any(m["role"] == "tool" for m in snap["messages"])   # the first turn stands
        monkeypatch.undo()                                                   # fixed: resume goes on
        r, ts = handloop.resume(agent, "i1", audit_dir=folder)
        try:
            handloop.run(r, model, ts)
        finally:
            ts.close()
    finally:
        model.close()
    assert (r.status, r.reason) == ("suspended", "awaiting_confirmation") and r.turn > 1


def _break_compact():
    loop.compact = _broken_compact(after=1)


def test_the_command_line_says_an_internal_error_in_one_line_and_resume_continues_the_run(tmp_path):
    out = run_agent("--run-id", "c", cwd=tmp_path, setup=_break_compact)
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr + out.stdout and f"NameError: {BUG}" in out.stderr
    assert [line for line in out.stderr.splitlines() if BUG in line] == [out.stderr.strip().splitlines()[0]]
    snap = read_audit(tmp_path / "audit", "c")
    assert (snap["status"], snap["reason"]) == ("error", "internal")
    again = run_agent("--resume", "c", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert read_audit(tmp_path / "audit", "c")["status"] == "suspended"
    done = run_agent("--confirm", "c", cwd=tmp_path)
    assert done.returncode == 0 and read_audit(tmp_path / "audit", "c")["status"] == "done", done.stderr


def _break_reopening():
    def rebuild(*args, **kwargs):
        raise NameError(BUG)
    runs.rebuild = rebuild


def test_an_internal_error_before_the_loop_is_one_line_and_leaves_the_run_as_it_was(tmp_path):
    assert run_agent("--run-id", "p", cwd=tmp_path).returncode == 0
    before = read_audit(tmp_path / "audit", "p")
    out = run_agent("--confirm", "p", cwd=tmp_path, setup=_break_reopening)
    assert out.returncode == 1 and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert f"NameError: {BUG}" in out.stderr
    assert read_audit(tmp_path / "audit", "p") == before
    assert run_agent("--confirm", "p", cwd=tmp_path).returncode == 0


def test_two_threads_resuming_one_run_through_the_library_one_is_refused(tmp_path):
    folder = str(tmp_path)
    _cut_off(folder, "t")
    barrier, got, refused = threading.Barrier(2), [], []

    def take():
        barrier.wait()
        try:
            got.append(handloop.resume(_agent(folder), "t", audit_dir=folder))
        except audit.AuditError as exc:
            refused.append(str(exc))
    threads = [threading.Thread(target=take) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(got) == 1 and len(refused) == 1, (got, refused)
    assert "正被另一个进程使用" in refused[0]                           # as the command line says a held lock
    with pytest.raises(audit.AuditError):                                # held until its tool set is closed
        handloop.reply(_agent(folder), "t", "换成 Standard", audit_dir=folder)
    got[0][1].close()
    r, ts = handloop.resume(_agent(folder), "t", audit_dir=folder)      # released: the run is free again
    ts.close()


def test_a_run_the_library_holds_is_refused_to_the_command_line_and_to_another_start(tmp_path):
    folder = str(tmp_path / "audit")
    os.makedirs(folder)
    agent, model = _agent(folder), handloop.offline_model(offline.respond)
    try:
        r, ts = handloop.start(agent, "h", audit_dir=folder)
        try:
            out = run_agent("--resume", "h", cwd=tmp_path)               # another process
            assert out.returncode == 2 and "正被另一个进程使用" in out.stderr, out.stderr
            with pytest.raises(audit.AuditError):
                handloop.start(agent, "h", audit_dir=folder)
            handloop.run(r, model, ts)
        finally:
            ts.close()
        assert r.status == "suspended"
        out = run_agent("--confirm", "h", cwd=tmp_path)                  # closed: the command line may take it
        assert out.returncode == 0 and read_audit(folder, "h")["status"] == "done", out.stderr
    finally:
        model.close()


def test_a_refused_way_of_resuming_releases_the_lock(tmp_path):
    folder = str(tmp_path)
    _cut_off(folder, "x")
    with pytest.raises(runs.Refused):
        handloop.confirm(_agent(folder), "x", audit_dir=folder)          # a running run waits for no confirmation
    r, ts = handloop.resume(_agent(folder), "x", audit_dir=folder)
    ts.close()

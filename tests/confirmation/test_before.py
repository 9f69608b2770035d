"""Audit files written before proposals were held calls (tests/confirmation/before/, made by the code of that time)
still load, and confirm exactly once: a held write runs once on one confirmation; a proposal in words, which is no
proposal now, waits for the model's call, which is held and shown before anything runs. Through the CLI, offline."""
import shutil
import os

from conftest import read_audit, run_cli, store_rows

BEFORE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "before")


def _copy(tmp_path, run_id):
    audit = tmp_path / "audit"
    audit.mkdir(exist_ok=True)
    shutil.copy(os.path.join(BEFORE, f"run-{run_id}.json"), audit / f"run-{run_id}.json")
    return audit


def _bookings(tmp_path):
    return store_rows(tmp_path, "bookings.db", "SELECT hotel_id, room_type FROM bookings")


def test_a_held_write_of_an_old_file_runs_once_on_one_confirmation(tmp_path):
    _copy(tmp_path, "old-held")
    done = run_cli("--confirm", "old-held", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert _bookings(tmp_path) == [("XA-001", "Suite")]
    data = read_audit(tmp_path / "audit", "old-held")
    assert data["status"] == "done"
    assert [c["state"] for p in data["memory"]["proposals"] for c in p["calls"]] == ["executed"]
    again = run_cli("--confirm", "old-held", cwd=tmp_path)
    assert again.returncode == 2 and _bookings(tmp_path) == [("XA-001", "Suite")]
    assert run_cli("--check", "old-held", "--strict", cwd=tmp_path).returncode == 0


def test_an_old_proposal_in_words_books_nothing_until_its_call_is_shown_and_confirmed(tmp_path):
    _copy(tmp_path, "old-words")
    first = run_cli("--confirm", "old-words", cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert _bookings(tmp_path) == []                     # words were confirmed: nothing is approved by them
    data = read_audit(tmp_path / "audit", "old-words")
    assert (data["status"], data["reason"]) == ("suspended", "awaiting_confirmation")
    held = [c for p in data["memory"]["proposals"] for c in p["calls"]]
    assert [(c["tool"], c["args"]["room_type"], c["state"]) for c in held] == [("book_hotel", "Suite", "proposed")]
    second = run_cli("--confirm", "old-words", cwd=tmp_path)
    assert second.returncode == 0 and _bookings(tmp_path) == [("XA-001", "Suite")]

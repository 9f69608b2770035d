"""Hostile input from outside: audit files, run ids, states, directories, a locked store."""
import json
import os
import sqlite3
import threading

import pytest

from handloop import audit
from handloop import tools
from conftest import read_audit, run_agent


@pytest.fixture
def suspended(tmp_path):
    assert run_agent("--run-id", "s", cwd=tmp_path).returncode == 0
    return tmp_path, tmp_path / "audit" / "run-s.json"


def _no_traceback(out):
    assert "Traceback" not in out.stderr and "Traceback" not in out.stdout


@pytest.mark.parametrize("damage, words", [
    (lambda raw: raw[: len(raw) // 2], "已损坏"),
    (lambda raw: "", "已损坏"),
    (lambda raw: "\x00\x01garbage", "已损坏"),
    (lambda raw: raw.replace('"version": 1', '"version": 7'), "版本 7"),
    (lambda raw: json.dumps({**json.loads(raw), "messages": json.loads(raw)["messages"][:-1]}), "没有 tool 消息回答"),
    (lambda raw: json.dumps({**json.loads(raw), "status": "flying"}), "status"),
    (lambda raw: json.dumps({**json.loads(raw), "run_id": "other"}), "与文件名不符"),
])
def test_broken_audit_files_are_refused_clearly(suspended, damage, words):
    cwd, path = suspended
    path.write_text(damage(path.read_text(encoding="utf-8")), encoding="utf-8")
    out = run_agent("--confirm", "s", cwd=cwd)
    assert out.returncode == 2 and words in out.stderr
    _no_traceback(out)
    assert _count(cwd) == 0


def _count(cwd):
    return tools.BookingStore(cwd / "audit" / "bookings.db").count()


def test_memory_claiming_confirmed_without_a_confirmation_is_rebuilt(suspended):
    cwd, path = suspended
    data = json.loads(path.read_text(encoding="utf-8"))
    data["memory"]["confirmed"] = True
    data["status"] = "running"                      # and pretend it was cut off
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    out = run_agent("--resume", "s", cwd=cwd)
    assert out.returncode == 0 and "memory.confirmed 与 messages 记录不一致" in out.stderr
    assert _count(cwd) == 0 and read_audit(cwd / "audit", "s")["memory"]["confirmed"] is False


@pytest.mark.parametrize("state, reason, words", [
    ("done", "final_answer", "已经完成"), ("stopped", "spin", "已停止"), ("running", "", "--resume"),
    ("error", "timeout", "--resume"),
])
def test_confirm_on_a_run_that_is_not_waiting(suspended, state, reason, words):
    cwd, path = suspended
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(status=state, reason=reason)
    audit.write(str(path), data)
    out = run_agent("--confirm", cwd=cwd)
    assert out.returncode == 2 and words in out.stderr and _count(cwd) == 0
    _no_traceback(out)


def test_resume_of_a_run_that_waits_for_the_user_is_refused(suspended):
    out = run_agent("--resume", cwd=suspended[0])
    assert out.returncode == 2 and "--confirm" in out.stderr


@pytest.mark.parametrize("bad", ["../x", "a/b", "a\0b", "x" * 500, "..", ""])
def test_run_ids_never_reach_the_file_system(tmp_path, bad):
    with pytest.raises(audit.AuditError):
        audit.RunLock(str(tmp_path), bad)
    assert os.listdir(tmp_path) == []


def test_an_audit_dir_that_cannot_be_created(tmp_path):
    (tmp_path / "file").write_text("x")
    out = run_agent("--audit-dir", str(tmp_path / "file" / "audit"), cwd=tmp_path)
    assert out.returncode == 2 and "无法读写审计目录" in out.stderr
    _no_traceback(out)


def test_an_audit_dir_that_cannot_be_written(tmp_path):
    os.makedirs(tmp_path / "ro")
    os.chmod(tmp_path / "ro", 0o500)
    try:
        if os.access(tmp_path / "ro", os.W_OK):
            pytest.skip("running as a user that ignores directory permissions (root)")
        out = run_agent("--audit-dir", str(tmp_path / "ro"), cwd=tmp_path)
    finally:
        os.chmod(tmp_path / "ro", 0o700)
    assert out.returncode == 2 and "无法读写审计目录" in out.stderr


def test_a_missing_audit_dir_for_confirm(tmp_path):
    out = run_agent("--confirm", "--audit-dir", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert out.returncode == 2 and "还没有任何运行" in out.stderr


def test_a_booking_store_locked_by_another_process(suspended):
    cwd, _ = suspended
    db = sqlite3.connect(cwd / "audit" / "bookings.db", check_same_thread=False)
    db.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(30, db.rollback)
    release.start()
    try:
        out = run_agent("--confirm", cwd=cwd, setup=lambda: setattr(tools.BookingStore, "BUSY_TIMEOUT", 0.5))
    finally:
        release.cancel()
        db.rollback()
        db.close()
    assert out.returncode == 0 and "酒店系统暂时不可用" in out.stdout
    data = read_audit(cwd / "audit", "s")
    assert (data["status"], data["reason"]) == ("suspended", "awaiting_confirmation") and _count(cwd) == 0
    assert data["memory"]["proposal"]["args"]["hotel_id"] and not data["memory"]["confirmed"]  # the failure spent it
    assert [[c["state"] for c in p["calls"]] for p in data["memory"]["proposals"]] == [["failed"], ["proposed"]]
    again = run_agent("--confirm", cwd=cwd)                  # the store is free again: confirmed anew, books once
    assert again.returncode == 0 and _count(cwd) == 1
    assert read_audit(cwd / "audit", "s")["status"] == "done"


@pytest.mark.parametrize("args", [("--goal", "订酒店\udcff"), ("--run-id", "u", "--goal", "\udc80\udc81")])
def test_bytes_that_are_not_utf8_in_a_goal_are_refused_before_any_state(tmp_path, args):
    out = run_agent(*args, cwd=tmp_path)
    assert out.returncode == 2 and "UTF-8" in out.stderr
    _no_traceback(out)
    assert not (tmp_path / "audit").exists() or not [p for p in os.listdir(tmp_path / "audit") if p.startswith("run-")]


def test_bytes_that_are_not_utf8_in_a_reply_leave_the_run_as_it_was(suspended):
    cwd, path = suspended
    before = path.read_bytes()
    out = run_agent("--reply", "换成\udcff", "s", cwd=cwd)
    assert out.returncode == 2 and "UTF-8" in out.stderr and path.read_bytes() == before
    _no_traceback(out)
    assert run_agent("--reply", "不订了", "s", cwd=cwd).returncode == 0      # no stray lock left behind


@pytest.mark.parametrize("body", ['{"max_turns": ' + "[" * 10000 + "]" * 10000 + "}",
                                  '{"final_prompt": "\\udcff"}', "[" * 10000 + "]" * 10000])
def test_a_hostile_policy_file_is_refused(tmp_path, body):
    (tmp_path / "p.json").write_text(body, encoding="utf-8")
    out = run_agent("--policy", "p.json", cwd=tmp_path)
    assert out.returncode == 2 and "策略文件" in out.stderr
    _no_traceback(out)


@pytest.mark.parametrize("mode", [("--confirm", "s"), ("--resume", "s"), ("--reply", "好", "s"), ("--check", "s")])
def test_an_audit_file_nested_ten_thousand_deep_is_refused(suspended, mode):
    cwd, path = suspended
    path.write_text('{"messages": ' + "[" * 10000 + "]" * 10000 + "}", encoding="utf-8")
    out = run_agent(*mode, cwd=cwd)
    assert out.returncode == 2
    _no_traceback(out)


def test_a_lone_surrogate_from_the_model_is_written_and_read_back(tmp_path):
    from handloop import loop
    from handloop import runs
    from handloop import toolset
    store = tools.BookingStore(tmp_path / "b.db")
    r = runs.begin(str(tmp_path), "z", "目标\udcff", toolset.ToolSet("z", tools.xian_agent(store)), "m", fsync=False)
    r.messages.append({"role": "assistant", "content": "答复\ud800"})
    loop.save(r)
    assert audit.load(r.path)["messages"][-1]["content"] == "答复\ud800"


@pytest.mark.parametrize("body", ['{"max_turns": 0}', '{"turns": 3}', '{"tools": [1]}', '{"final_prompt": "\\udcff"}',
                                  "[]", '{"final_prompt": ""}'])
def test_a_bad_policy_is_refused_in_the_agents_language(tmp_path, body):
    from handloop import texts
    from test_own_agent import EXAMPLE
    (tmp_path / "p.json").write_text(body, encoding="utf-8")
    english = run_agent("--agent", EXAMPLE, "--policy", "p.json", cwd=tmp_path)
    assert english.returncode == 2 and "policy" in english.stderr and not texts.CJK.search(english.stderr), \
        english.stderr
    chinese = run_agent("--policy", "p.json", cwd=tmp_path)
    assert chinese.returncode == 2 and "策略" in chinese.stderr
    _no_traceback(english)

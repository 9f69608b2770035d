"""The audit file: atomic, validated on load, locked per run, safe ids."""
import json
import os

import pytest

from handloop import audit
from conftest import read_audit


def snap(messages=None, **over):
    base = {"version": 1, "run_id": "r1", "status": "suspended", "turn": 2, "mode": "local", "memory": {},
            "tools": [], "trace": [], "messages": messages or [{"role": "system", "content": "s"},
                                                               {"role": "user", "content": "u"}]}
    return {**base, **over}


def test_write_then_load_round_trips(tmp_path):
    path = str(tmp_path / "run-r1.json")
    audit.write(path, snap())
    assert audit.load(path) == snap()
    assert sorted(os.listdir(tmp_path)) == [".run-r1.json.a", "run-r1.json"]    # one spare, linked to it


def test_writes_alternate_between_two_spares_and_free_nothing(tmp_path):
    path = str(tmp_path / "run-r1.json")
    inodes = []
    for turn in range(4):
        audit.write(path, snap(turn=turn))
        inodes.append(os.stat(path).st_ino)
        assert audit.load(path)["turn"] == turn
    assert inodes[0] == inodes[2] != inodes[1] == inodes[3]
    assert sorted(os.listdir(tmp_path)) == [".run-r1.json.a", ".run-r1.json.b", "run-r1.json"]


def test_a_stale_link_from_a_crash_is_replaced(tmp_path):
    path = str(tmp_path / "run-r1.json")
    audit.write(path, snap(turn=1))
    (tmp_path / ".run-r1.json.new").write_text("stale")
    audit.write(path, snap(turn=2))
    assert audit.load(path)["turn"] == 2 and not (tmp_path / ".run-r1.json.new").exists()


def test_without_hard_links_a_copy_is_published(tmp_path, monkeypatch):
    def no_links(src, dst):
        raise PermissionError("no hard links on this file system")
    monkeypatch.setattr(os, "link", no_links)
    path = str(tmp_path / "run-r1.json")
    for turn in range(3):
        audit.write(path, snap(turn=turn))
        assert audit.load(path)["turn"] == turn


def test_a_failed_write_leaves_the_old_file_whole(tmp_path):
    path = str(tmp_path / "run-r1.json")
    audit.write(path, snap())
    with pytest.raises(TypeError):
        audit.write(path, snap(memory={"bad": object()}))
    assert audit.load(path) == snap() and [n for n in os.listdir(tmp_path) if not n.startswith(".")] == ["run-r1.json"]


@pytest.mark.parametrize("content, words", [
    (None, "找不到"), ("", "损坏"), ('{"version": 1, "run_id"', "损坏"), ("[]", "不是 JSON 对象"),
    (json.dumps(snap(version=99)), "版本 99"), (json.dumps(snap(status="flying")), "status"),
    (json.dumps({k: v for k, v in snap().items() if k != "messages"}), "messages"),
    (json.dumps(snap(messages=[{"role": "assistant", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "x", "arguments": "{}"}}]}])), "没有 tool 消息回答"),
    (json.dumps(snap(messages=[{"role": "tool", "tool_call_id": "a", "content": "{}"}])), "没有对应的调用"),
    ("\xff\xfe garbage", "损坏"),
])
def test_bad_files_are_refused_with_a_clear_message(tmp_path, content, words):
    path = tmp_path / "run-r1.json"
    if content is not None:
        path.write_text(content, encoding="latin-1" if "\xff" in content else "utf-8")
    with pytest.raises(audit.AuditError) as info:
        audit.load(str(path))
    assert words in str(info.value)


@pytest.mark.parametrize("bad", ["../x", "a/b", "a\0b", "x" * 65, "", ".", "..", "名字"])
def test_hostile_run_ids_never_reach_a_path(tmp_path, bad):
    with pytest.raises(audit.AuditError):
        audit.path_for(str(tmp_path), bad)


def test_latest_run_is_the_last_written(tmp_path):
    for i, name in enumerate(["a", "b", "c"]):
        audit.write(audit.path_for(str(tmp_path), name), snap(run_id=name))
        os.utime(tmp_path / f"run-{name}.json", (1000 + i, 1000 + i))
    os.utime(tmp_path / "run-a.json", (5000, 5000))
    assert audit.latest_run_id(str(tmp_path)) == "a"


def test_no_runs_is_a_clear_error(tmp_path):
    with pytest.raises(audit.AuditError, match="还没有任何运行"):
        audit.latest_run_id(str(tmp_path))


def test_one_process_at_a_time_per_run(tmp_path):
    with audit.RunLock(str(tmp_path), "r1"):
        with pytest.raises(audit.AuditError, match="另一个进程"):
            with audit.RunLock(str(tmp_path), "r1"):
                pass
        with audit.RunLock(str(tmp_path), "r2"):
            pass
    with audit.RunLock(str(tmp_path), "r1"):
        pass


def test_snapshot_of_a_real_run_has_the_contract_fields(new_run, tmp_path):
    r, _, _ = new_run()
    data = read_audit(str(tmp_path), r.run_id)
    for key in ("version", "run_id", "status", "reason", "turn", "mode", "model", "messages", "memory", "tools", "trace"):
        assert key in data
    for key in ("confirmed", "used_tokens", "plan", "hotel_ids"):
        assert key in data["memory"]

"""The audit file's text layout: whatever it looks like, it must load back as the same object."""
import json

import audit


def test_encode_round_trips_every_kind_of_value():
    snapshot = {"version": 1, "run_id": "r", "messages": [{"role": "user", "content": "确认 \"引号\"\n换行"},
                                                           {"role": "assistant", "content": None, "tool_calls": []}],
                "trace": [], "memory": {"hotels": {"XA-001": {"prices": {"Suite": 880}}}, "plan": []},
                "tools": [[1, 2.5, True, None]], "answer": "", "detail": "\u2028"}
    text = audit.encode(snapshot)
    assert json.loads(text) == snapshot
    assert "确认" in text                                  # readable, not \u-escaped
    assert text.count("\n") >= len(snapshot) + 2           # one key per line, one message per line


def test_written_file_loads_back(tmp_path):
    path = str(tmp_path / "run-x.json")
    snapshot = {"version": 1, "run_id": "x", "status": "done", "turn": 1, "mode": "local",
                "messages": [{"role": "user", "content": "hi"}], "memory": {}, "tools": [], "trace": []}
    audit.write(path, snapshot, fsync=False)
    assert audit.load(path) == snapshot

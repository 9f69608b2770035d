"""The audit file's text layout: whatever it looks like, it must load back as the same object."""
import json

from handloop import audit


def test_encode_round_trips_every_kind_of_value():
    snapshot = {"version": 1, "run_id": "r", "messages": [{"role": "user", "content": "确认 \"引号\"\n换行"},
                                                           {"role": "assistant", "content": None, "tool_calls": []}],
                "trace": [], "memory": {"hotels": {"XA-001": {"prices": {"Suite": 880}}}, "plan": []},
                "tools": [[1, 2.5, True, None]], "answer": "", "detail": "\u2028"}
    text = audit.encode(snapshot).decode()
    assert json.loads(text) == snapshot
    assert "确认" in text                                  # readable, not \u-escaped
    assert text.count("\n") >= len(snapshot) + 2           # one key per line, one message per line


def test_written_file_loads_back(tmp_path):
    path = str(tmp_path / "run-x.json")
    snapshot = {"version": 1, "run_id": "x", "status": "done", "turn": 1, "mode": "local",
                "messages": [{"role": "user", "content": "hi"}], "memory": {}, "tools": [], "trace": []}
    audit.write(path, snapshot, fsync=False)
    assert audit.load(path) == snapshot


def test_the_file_of_a_long_run_is_the_whole_snapshot(new_run):
    """Each save reuses the text of messages encoded before: the file must still hold them all."""
    from handloop import loop
    from handloop import model
    from conftest import PLAN

    r, ts, store = new_run()
    replies = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "p", "type": "function", "function": {"name": "set_plan", "arguments": json.dumps({"steps": PLAN})}}]}]
    for day in range(1, 6):
        args = json.dumps({"city": "西安", "check_in": f"2026-10-0{day}"})
        replies.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"s{day}", "type": "function", "function": {"name": "search_hotels", "arguments": args}}]})
    replies.append({"role": "assistant", "content": "要订哪一家？"})      # a question, asked again when nudged:
    script = iter(replies)                                               # the run waits for the user

    def ask(messages, tools, final=False):
        message = next(script, replies[-1])
        return model.Reply(message, message.get("tool_calls") or [], 10, False, 0.0, [])
    loop.run(r, ask, ts)
    assert (r.status, r.reason) == ("suspended", "awaiting_reply") and r.turn >= 7 and len(r.messages) >= 15
    on_disk = audit.load(r.path)
    expected = json.loads(json.dumps(loop.snapshot(r), ensure_ascii=False))
    for key in ("messages", "trace", "memory", "tools", "status", "turn"):
        assert on_disk[key] == expected[key], key


def test_a_shorter_snapshot_after_longer_ones_leaves_no_tail(tmp_path):
    """The writer reuses its two spare files: a snapshot shorter than the one a spare held before
    must not keep that one's tail, and a second writer on the same file (a resume) must agree."""
    path = str(tmp_path / "run-x.json")
    writer = audit.Writer(path, fsync=False)
    for size in (5000, 6000, 10, 3000, 2):
        snapshot = {"version": 1, "messages": [{"role": "user", "content": "字" * size}]}
        writer.write(snapshot)
        with open(path, encoding="utf-8") as f:
            assert json.load(f) == snapshot
    again = audit.Writer(path, fsync=False)          # knows nothing of the spares' sizes
    for size in (1, 4000, 3):
        snapshot = {"version": 1, "messages": [{"role": "user", "content": "x" * size}]}
        again.write(snapshot)
        with open(path, encoding="utf-8") as f:
            assert json.load(f) == snapshot


def test_a_spare_removed_behind_the_writers_back_is_made_again(tmp_path):
    import os
    path = str(tmp_path / "run-x.json")
    writer = audit.Writer(path, fsync=False)
    for turn in range(4):
        writer.write({"version": 1, "turn": turn, "messages": []})
        for slot in ("a", "b"):
            spare = tmp_path / f".run-x.json.{slot}"
            if turn == 2 and spare.exists():
                os.remove(spare)
    with open(path, encoding="utf-8") as f:
        assert json.load(f)["turn"] == 3
    names = {p.name for p in tmp_path.iterdir()}
    assert "run-x.json" in names and names <= {".run-x.json.a", ".run-x.json.b", "run-x.json"}


def test_a_snapshot_of_more_pieces_than_one_gathered_write_takes(tmp_path):
    path = str(tmp_path / "run-x.json")
    snapshot = {"version": 1, "messages": [{"role": "user", "content": f"第 {i} 条"} for i in range(3000)],
                "trace": [{"turn": i} for i in range(700)], "tools": []}
    audit.write(path, snapshot, fsync=False)
    with open(path, encoding="utf-8") as f:
        assert json.load(f) == snapshot


def test_short_gathered_writes_are_resumed_where_they_stopped(tmp_path, monkeypatch):
    import os
    real = os.writev

    def stingy(fd, buffers):                 # the kernel may take fewer bytes than offered
        first = bytes(buffers[0])[:7]
        return real(fd, [first])
    monkeypatch.setattr(os, "writev", stingy)
    path = str(tmp_path / "run-x.json")
    snapshot = {"version": 1, "messages": [{"role": "user", "content": "确认" * 50}, {"role": "user", "content": ""}]}
    audit.write(path, snapshot, fsync=False)
    with open(path, encoding="utf-8") as f:
        assert json.load(f) == snapshot

"""The audit file's text layout: whatever it looks like, it must load back as the same object."""
import json

import audit


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
    import loop
    import model
    from conftest import PLAN

    r, ts, store = new_run()
    replies = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "p", "type": "function", "function": {"name": "set_plan", "arguments": json.dumps({"steps": PLAN})}}]}]
    for day in range(1, 6):
        args = json.dumps({"city": "西安", "check_in": f"2026-10-0{day}"})
        replies.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"s{day}", "type": "function", "function": {"name": "search_hotels", "arguments": args}}]})
    replies.append({"role": "assistant", "content": "好的。"})
    script = iter(replies)

    def ask(messages, tools, final=False):
        message = next(script)
        return model.Reply(message, message.get("tool_calls") or [], 10, False, 0.0, [])
    loop.run(r, ask, ts)
    assert r.status == "suspended" and r.turn == 7
    on_disk = audit.load(r.path)
    expected = json.loads(json.dumps(loop.snapshot(r), ensure_ascii=False))
    for key in ("messages", "trace", "memory", "tools", "status", "turn"):
        assert on_disk[key] == expected[key], key

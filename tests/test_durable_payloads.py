"""What a run's workflow sends its activities stays bounded (handloop/durable): a save carries only what
changed and the worker's snapshot plus the file give the whole record back; an ask carries a reference
and the worker assembles the very request the loop made. No Temporal server: the workflow's writer and
the worker's activities are driven directly around a real loop."""
import json

import pytest

pytest.importorskip("temporalio")

from handloop import audit, context, loop            # noqa: E402
from handloop.durable import workflow, worker        # noqa: E402
from conftest import BOOK, PLAN, text, tool_calls    # noqa: E402

WEATHER = {"city": "西安", "date": "2026-10-01"}
HOTELS = {"city": "西安", "check_in": "2026-10-01", "nights": 2}


def _saved_through_deltas(r, acts, sizes):
    def report(kind, run, **_):
        if run.writer.snapshot is not None:
            sizes.append(len(run.writer.snapshot))
            acts._apply(run.path, workflow.unpack(run.writer.snapshot))
            run.writer.snapshot = None
            run.writer.written()
    return report


def test_saves_carry_what_changed_and_the_file_holds_the_whole_record(fake_model, new_run):
    r, ts, _ = new_run()
    r.writer = workflow.Pending(r)
    acts, sizes = worker.Activities({}), []
    try:
        big = "x" * 30_000
        ask, _ = fake_model([tool_calls(("set_plan", {"steps": PLAN})),
                             tool_calls(("get_weather", WEATHER), ("search_hotels", HOTELS)),
                             text(f"10 月 1 日有雨。{big[:10]}建议预订古城墙酒店（XA-001）Suite，2026-10-01 入住 2 晚，请确认。")])
        loop.run(r, ask, ts, _saved_through_deltas(r, acts, sizes))
        _saved_through_deltas(r, acts, sizes)("end", r)
        on_disk = audit.load(r.path)
        assert on_disk["messages"] == json.loads(json.dumps(r.messages)) and on_disk["trace"] == r.trace
        assert on_disk["status"] == r.status == "suspended"
        whole = len(workflow.pack(loop.snapshot(r)))
        assert max(sizes[1:]) < whole                    # no save after the first carries the record again
        acts.held.clear()                                 # another worker: it reads the file, then applies
        r.messages.append({"role": "user", "content": "确认"})
        loop.save(r)
        _saved_through_deltas(r, acts, sizes)("end", r)
        assert audit.load(r.path)["messages"][-1]["content"] == "确认"
    finally:
        acts.close()


def test_an_ask_by_reference_gets_the_request_the_loop_made_or_says_it_cannot(fake_model, new_run):
    r, ts, _ = new_run()
    r.writer = workflow.Pending(r)
    acts, sizes = worker.Activities({}), []
    try:
        ask, _ = fake_model([tool_calls(("set_plan", {"steps": PLAN})), tool_calls(("book_hotel", BOOK)), text("好")])
        loop.run(r, ask, ts, _saved_through_deltas(r, acts, sizes))
        _saved_through_deltas(r, acts, sizes)("end", r)
        outgoing = r.window.request(r.messages, ts.tool, r.say)
        ref = {"run": {"run_id": r.run_id, "audit_dir": str(r.path.rsplit("/", 1)[0]), "mode": r.mode,
                       "agent": r.declared, "visible": None}, "path": r.path, "count": len(r.messages), "head": None,
               "digest": workflow.digest(workflow.pack(outgoing))}
        agent = acts._agent(ref["run"])
        assert acts._request(ref, agent) == (json.loads(workflow.pack(outgoing)), audit.load(r.path)["tools"])
        final = dict(outgoing[0], content=outgoing[0]["content"] + "\n\nanswer now")
        wanted = [final, *outgoing[1:]]
        assert acts._request(dict(ref, head=final, digest=workflow.digest(workflow.pack(wanted))), agent)[0] == \
            json.loads(workflow.pack(wanted))
        assert acts._request(dict(ref, digest="0" * 64), agent) == (None, None)    # the workflow then sends it
        assert acts._request(dict(ref, count=len(r.messages) + 1), agent) == (None, None)
        assert isinstance(context.Window.from_dict(audit.load(r.path)["epoch"], r.messages), context.Window)
    finally:
        acts.close()


def test_a_large_state_goes_to_a_workflow_as_a_checkpoint_named_by_its_digest(tmp_path):
    path = str(tmp_path / "run-big.json")
    small = {"messages": [{"role": "user", "content": "hi"}]}
    assert workflow.opened(worker.reference(path, small)) == small
    big = {"messages": [{"role": "tool", "content": "y" * 300_000}]}
    refs = [worker.reference(path, dict(big, n=n)) for n in range(3)]
    assert all("checkpoint" in ref and len(json.dumps(ref)) < 500 for ref in refs)
    kept = sorted(p.name for p in (tmp_path / ".checkpoints").iterdir())
    assert len(kept) == 2 and all(ref["checkpoint"].endswith(tuple(kept)) for ref in refs[1:])   # the newest two
    assert workflow.opened(refs[2]) == dict(big, n=2)
    with open(refs[2]["checkpoint"], "r+b") as f:
        f.write(b"[")                                  # not what it was: refused, never read as something else
    with pytest.raises(Exception) as info:
        workflow.opened(refs[2])
    assert "not the one recorded" in str(info.value)


def test_a_worker_applies_a_save_to_the_file_as_another_worker_left_it_not_to_what_it_held(fake_model, new_run):
    """Saves go with asks, and asks run on any worker: a worker whose snapshot of the run is older than the file
    (another worker replaced messages[0] since) reads the file again before it applies a save."""
    r, ts, _ = new_run()
    r.writer = workflow.Pending(r)
    first, second = worker.Activities({}), worker.Activities({})
    try:
        ask, _ = fake_model([tool_calls(("set_plan", {"steps": PLAN})), text("Shall I book XA-001 Suite for 2 nights?")])
        loop.run(r, ask, ts, _saved_through_deltas(r, first, []))
        _saved_through_deltas(r, first, [])("end", r)
        r.messages[0] = dict(r.messages[0], content=r.messages[0]["content"] + "\n\nsummary of an earlier epoch")
        loop.save(r)
        _saved_through_deltas(r, second, [])("end", r)   # the other worker writes the new messages[0]
        r.messages.append({"role": "user", "content": "yes"})
        loop.save(r)
        _saved_through_deltas(r, first, [])("end", r)    # this one held the file as it was before that
        on_disk = audit.load(r.path)
        assert on_disk["messages"][0]["content"].endswith("summary of an earlier epoch")
        assert on_disk["messages"] == json.loads(json.dumps(r.messages))
    finally:
        first.close()
        second.close()

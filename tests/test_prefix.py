"""The request prefix rule: each request is the previous request plus what is new, byte for byte, so a provider's
prefix cache serves all of it but the new part. Checked on the requests the fake endpoint recorded, through the real
openai client, across the user's reply (a proposal in words made a held call, a blocked write confirmed or declined), in Chinese and in
English. The documented exception, a compaction epoch's start (context.py), is tests/test_context.py's."""
import json
import os

from handloop import loop, model, runs, toolset
from handloop.llm.endpoint import Endpoint
import policies
import trace_agent
from conftest import read_audit


def _text(request):
    """A request as a provider caches it: the tool list, then the messages, serialised in order."""
    return json.dumps(request.get("tools") or [], ensure_ascii=False) + json.dumps(request["messages"],
                                                                                  ensure_ascii=False)


def assert_prefix_rule(requests):
    """Each request's messages start with the previous request's messages, byte for byte, under the same tools."""
    assert len(requests) >= 2
    for before, after in zip(requests, requests[1:]):
        old, new = _text(before), _text(after)
        assert new.startswith(old[:-1]) and len(new) > len(old), (old[-300:], new[len(old) - 300:len(old) + 100])
        assert after["messages"][:len(before["messages"])] == before["messages"]


def _xian(tmp_path, policy, replies, run_id="p1"):
    """The Xi'an run against `policy`, the user's `replies` given one after another; (the run, its requests)."""
    from handloop import tools
    recorded = []

    def respond(request):
        recorded.append(request)
        return policy(request)
    ts = toolset.ToolSet(run_id, tools.xian_agent(tools.BookingStore(tmp_path / "bookings.db")))
    r = runs.begin(str(tmp_path), run_id, "", ts, "scripted", fsync=False)
    endpoint = Endpoint(respond)
    ask = model.connect(endpoint.url, "test-key", "scripted", timeout=5, retries=0, loopback=True)
    try:
        loop.run(r, ask, ts)
        for reply in replies:
            assert r.status == "suspended", (r.status, r.reason)
            runs.add_user(r, reply)
            loop.run(r, ask, ts)
    finally:
        ask.close()
        endpoint.close()
        ts.close()
    return r, recorded


def test_a_proposal_in_words_confirmed_each_request_extends_the_last(tmp_path):
    """The model offers the booking in words; the loop forces the call (a server that obeys tool_choice), holds it,
    the user confirms, the loop books. Each request, the forced one included, extends the last."""
    r, requests = _xian(tmp_path, policies.Obeys(policies.words_question), ["确认"])
    assert r.status == "done" and r.memory.writes
    assert any(isinstance(q.get("tool_choice"), dict) for q in requests)       # the forced call was asked for
    assert_prefix_rule(requests)
    assert "【运行记忆】" not in requests[0]["messages"][0]["content"]      # nothing settled: no memory block


def test_a_blocked_write_confirmed_is_sent_as_the_models_call_answered_by_its_receipt(tmp_path):
    """The eager model books before asking: the blocked call is the proposal, the run suspends, the user confirms,
    the loop makes the call. The next request extends the last one: the model's call answered by the receipt."""
    r, requests = _xian(tmp_path, policies.eager, ["确认"])
    assert r.status == "done" and r.memory.writes
    assert_prefix_rule(requests)
    last = requests[-1]["messages"]
    receipt = next(m for m in r.messages if m["role"] == "tool" and "booking_id" in m["content"])
    assert last[-1]["content"] == receipt["content"] and "booking_id" in json.loads(last[-1]["content"])
    assert any(m.get("name") == "loop" for m in r.messages) and "确认" in [m["content"] for m in r.messages]
    assert not any(m.get("name") == "loop" for m in last)           # the approval is the record's, not the model's
    snap = read_audit(tmp_path, "p1")
    assert any("proposal" in json.loads(m["content"]) for m in snap["messages"] if m["role"] == "tool")


def test_a_blocked_write_declined_is_sent_short_and_the_prefix_holds(tmp_path):
    """The user answers the blocked proposal with a change: the proposal's tool message, never sent before, is sent in
    its short form (it went to the user), the record keeps the preview the user saw, and the prefix holds."""
    r, requests = _xian(tmp_path, policies.eager, ["不要 Suite，换成 Standard"])
    assert len(requests) >= 2
    assert_prefix_rule(requests)
    sent = [json.loads(m["content"]) for m in requests[-1]["messages"] if m["role"] == "tool"]
    short = [c for c in sent if c.get("blocked_by") == "unconfirmed_write"]
    assert short and all("proposal" not in c and c["error"] for c in short)
    recorded = [json.loads(m["content"]) for m in r.messages if m["role"] == "tool"]
    assert any(isinstance(c.get("proposal"), dict) and c["proposal"]["args"].get("hotel_id")
               and (c["proposal"].get("shows") or {}).get("total") for c in recorded)


def test_an_english_agent_without_planning_extends_each_request_and_sends_no_planning(tmp_path, monkeypatch):
    """The English desk agent (planning off): a nudge, the reads, the blocked write, "yes", the answer."""
    monkeypatch.setenv("DESKS_DB", str(tmp_path / "desks.db"))
    recorded = []

    def respond(request):
        recorded.append(request)
        return trace_agent.respond(request)
    ts = toolset.ToolSet("e1", agent=trace_agent.AGENT)
    r = runs.begin(str(tmp_path), "e1", "", ts, "scripted", fsync=False)
    endpoint = Endpoint(respond)
    ask = model.connect(endpoint.url, "test-key", "scripted", timeout=5, retries=0, loopback=True)
    try:
        loop.run(r, ask, ts)
        runs.add_user(r, "yes")
        loop.run(r, ask, ts)
    finally:
        ask.close()
        endpoint.close()
        ts.close()
    assert r.status == "done" and os.path.exists(r.path)
    assert_prefix_rule(recorded)
    for request in recorded:                                            # planning off: no planning tokens
        names = {t["function"]["name"] for t in request.get("tools") or []}
        assert not names & {"set_plan", "mark_step"}
        assert not any(word in _text(request) for word in ("set_plan", "mark_step", "[Run memory]"))


def test_a_confirmed_write_stays_sent_as_its_receipt_across_compaction_epochs(fake_model, new_run):
    """After the confirmed booking the model keeps searching (long results) until compaction starts epochs: between
    epochs each request extends the last; in every request the booking is the model's own call answered by its
    receipt (the approval never sent), and every request is valid (the fake endpoint checks the pairing rules)."""
    from conftest import PLAN, BOOK, tool_calls
    r, ts, store = new_run(max_turns=60, budget=10**9)
    r.compact_budget = 6_000

    def respond(request):
        messages = request["messages"]
        if not any(m["role"] == "tool" for m in messages):
            return tool_calls(("set_plan", {"steps": PLAN}), ("get_weather", {"city": "西安", "date": "2026-10-01"}),
                              ("search_hotels", {"city": "西安", "check_in": "2026-10-01", "nights": 2}))
        if not any(c["function"]["name"] == "book_hotel" for m in messages for c in m.get("tool_calls") or []):
            return tool_calls(("book_hotel", BOOK, "b1"))
        n = sum(1 for m in messages if m["role"] == "assistant")
        if n > 30:
            return {"content": "已订好，也查完了其他日期。"}
        return tool_calls(("search_hotels", {"city": "西安", "check_in": f"2026-11-{n % 28 + 1:02d}"}, f"s{n}"))

    class Padded(type(ts)):
        def run(self, call, memory):
            result = super().run(call, memory)
            return dict(result, notes="附近景点与交通说明。" * 150) if call.name == "search_hotels" else result
    padded = Padded("t1", ts.agent)
    ask, endpoint = fake_model(respond)
    loop.run(r, ask, padded)
    assert (r.status, r.reason) == ("suspended", "awaiting_confirmation"), r.messages[-3:]
    runs.add_user(r, "确认")
    loop.run(r, ask, padded)
    assert r.status == "done" and store.count() == 1 and r.window.start > 1
    texts = [json.dumps(q["messages"], ensure_ascii=False) for q in endpoint.requests]
    epochs = sum(1 for a, b in zip(texts, texts[1:]) if not b.startswith(a[:-1]))
    assert 1 <= epochs <= len(texts) // 4
    after = [q["messages"] for q in endpoint.requests if any(m.get("tool_call_id") == "b1" for m in q["messages"])
             and "booking_id" in json.dumps(q["messages"], ensure_ascii=False)]
    assert len(after) >= 20
    for messages in after:
        booked = next(m for m in messages if m.get("tool_call_id") == "b1")
        assert "booking_id" in json.loads(booked["content"])
        assert not any(m.get("name") == "loop" for m in messages) and "确认" not in [m["content"] for m in messages]

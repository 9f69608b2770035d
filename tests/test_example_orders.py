"""The second task (examples/orders.py) on the same loop: built only from the library's public
parts, with its own tools, goal and offline model. Plan first, provenance, confirmation, one
refund across a crash and a resume, and an audit file paired like any other."""
import json
import os

from handloop import audit
from handloop import config
from handloop import loop
from handloop import runs
from conftest import text, tool_calls

from examples import orders  # noqa: E402
from handloop.toolset import ToolSet  # noqa: E402

PLAN = {"steps": [{"title": "查订单", "tool": "get_order"}, {"title": "退款", "tool": "refund_order", "after": [1]}]}


def setup(tmp_path, run_id="o1"):
    refunds = orders.Refunds(str(tmp_path / "refunds.db"))
    tools = ToolSet(run_id, agent=orders.agent(refunds))
    return runs.begin(str(tmp_path), run_id, orders.GOAL, tools, "m", fsync=False), tools, refunds


def results(r):
    return [json.loads(m["content"]) for m in r.messages if m["role"] == "tool"]


def test_the_example_runs_offline_through_the_loopback_endpoint(tmp_path):
    assert orders.main(str(tmp_path)) == 0
    data = audit.load(str(tmp_path / "run-orders-demo.json"))            # loadable: structure and pairing
    assert (data["status"], data["memory"]["writes"][0]["tool"]) == ("done", "refund_order")
    assert data["memory"]["orders"]["A1001"]["amount"] == 899 and audit.pairing_problem(data["messages"]) is None
    system = data["messages"][0]["content"]                             # its own prompt, not the hotel one
    assert system.startswith(orders.INSTRUCTIONS) and "酒店" not in system and data["agent"]["name"] == "orders"


def test_the_model_sees_only_the_example_tools_and_the_plan_is_first(tmp_path, fake_model):
    r, tools, refunds = setup(tmp_path)
    assert [s["function"]["name"] for s in r.tools] == ["set_plan", "mark_step", "get_order", "track_shipment",
                                                        "refund_order"]
    ask, _ = fake_model([tool_calls(("get_order", {"order_id": "A1001"})), text("好")])
    loop.run(r, ask, tools)
    assert results(r)[0]["blocked_by"] == "plan_first"


def test_an_order_id_that_no_lookup_returned_is_blocked(tmp_path, fake_model):
    r, tools, refunds = setup(tmp_path)
    ask, _ = fake_model([tool_calls(("set_plan", PLAN), ("get_order", {"order_id": "A1001"})),
                         tool_calls(("track_shipment", {"tracking": "YT5566"})),      # not the order's
                         tool_calls(("track_shipment", {"tracking": "SF7788"})),
                         tool_calls(("refund_order", {"order_id": "A1002", "amount": 459})), text("请确认")])
    loop.run(r, ask, tools)
    blocked = [x for x in results(r) if "blocked_by" in x]
    assert [x["blocked_by"] for x in blocked] == ["provenance", "provenance"] and refunds.count() == 0
    assert "A1001" in blocked[1]["error"]                  # it says which order ids may be used


def test_a_refund_needs_the_users_confirmation_and_happens_once_across_a_crash(tmp_path):
    r, tools, refunds = setup(tmp_path)
    ask, close = orders.offline_model()
    try:
        loop.run(r, ask, tools)
        assert (r.status, r.reason, refunds.count()) == ("suspended", "awaiting_confirmation", 0)
        runs.add_user(r, "确认")
        pid = os.fork()
        if pid == 0:                             # the child dies right after the refund is stored
            config._FAULT = "after_tool"
            loop.run(r, ask, tools)
            os._exit(0)
        os.waitpid(pid, 0)
        assert refunds.count() == 1 and audit.load(r.path)["status"] == "running"
        again, tools2, _ = runs.reopen(str(tmp_path), "o1", lambda snap: tools, lambda snap: None)
        loop.run(again, ask, tools2)
    finally:
        close()
        config._FAULT = None
    assert (again.status, refunds.count()) == ("done", 1)
    assert audit.pairing_problem(again.messages) is None


def when_forced(call, otherwise):
    """A scripted reply: `call` when the request forces its tool (the loop asks for the call words offered),
    else `otherwise`."""
    def reply(request):
        choice = request.get("tool_choice")
        forced = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
        return tool_calls(call) if forced == call[0] else otherwise
    return reply


OFFER = "建议退款 A1001 ¥899，确认吗？"
REFUND = ("refund_order", {"order_id": "A1001", "amount": 899})
OTHER = ("refund_order", {"order_id": "A1001", "amount": 500})


def held(r):
    return [(p["state"], [(c["tool"], c["args"], c["state"]) for c in p["calls"]]) for p in r.memory.proposals]


def test_a_refund_other_than_the_one_approved_is_a_new_proposal(tmp_path, fake_model):
    """The words offer ¥899; asked for the call, the model makes it, and it is held and shown; the user's 「确认」
    runs exactly that refund, once. A refund of another amount the model calls afterwards is a new proposal: held,
    not run."""
    r, tools, refunds = setup(tmp_path)
    ask, _ = fake_model([tool_calls(("set_plan", PLAN), ("get_order", {"order_id": "A1001"})),
                         tool_calls(("track_shipment", {"tracking": "SF7788"})),
                         text(OFFER), when_forced(REFUND, text(OFFER)),
                         tool_calls(OTHER), text("A1001 的退款金额改成 ¥500 了，请再确认")])
    loop.run(r, ask, tools)
    assert (r.status, r.reason, refunds.count()) == ("suspended", "awaiting_confirmation", 0)
    assert held(r) == [("proposed", [("refund_order", REFUND[1], "proposed")])]
    runs.add_user(r, "确认")
    loop.run(r, ask, tools)
    assert (r.status, r.reason, refunds.count()) == ("suspended", "awaiting_confirmation", 1)
    assert [w["args"] for w in r.memory.writes] == [{"order_id": "A1001", "amount": 899}]
    assert held(r)[-1] == ("proposed", [("refund_order", OTHER[1], "proposed")]) and not r.memory.confirmed
    assert r.memory.proposal["args"] == OTHER[1]                       # the other refund, held for the user


def test_a_refund_the_model_insists_on_is_a_new_proposal_shown_exactly(tmp_path, fake_model):
    """The words offer ¥899 but the call the model makes refunds ¥500: that call is what is held and shown, not the
    words. The user declines it; the model insists on the same call: a new proposal, held again; nothing runs."""
    r, tools, refunds = setup(tmp_path)
    ask, _ = fake_model([tool_calls(("set_plan", PLAN), ("get_order", {"order_id": "A1001"})),
                         tool_calls(("track_shipment", {"tracking": "SF7788"})),
                         text(OFFER), when_forced(OTHER, text(OFFER)), tool_calls(OTHER), tool_calls(OTHER)])
    loop.run(r, ask, tools)
    assert (r.status, r.reason, refunds.count()) == ("suspended", "awaiting_confirmation", 0)
    assert r.memory.proposal["args"] == OTHER[1] and r.proposal["calls"][0]["args"] == OTHER[1]
    runs.add_user(r, "不对，应该退 ¥899")
    loop.run(r, ask, tools)
    assert (r.status, r.reason, refunds.count()) == ("suspended", "awaiting_confirmation", 0)
    assert held(r) == [("declined", [("refund_order", OTHER[1], "declined")]),
                       ("proposed", [("refund_order", OTHER[1], "proposed")])]
    assert not r.memory.confirmed and r.memory.writes == []

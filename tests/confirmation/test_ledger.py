"""The confirmation state on its own: held calls, their digests, the user's decisions and each call's fate.

Pure data: no run, no words. What a decision approves is named by numbers; a call runs on an approval only when it
is the same call (by digest) as one approved and not yet run, once.
"""
from handloop.confirmation import Ledger, digest


def _pay(payee, amount):
    args = {"payee": payee, "amount": amount}
    return "pay", args, digest("pay", args)


def _hold(ledger, payee, amount, call_id=""):
    tool, args, d = _pay(payee, amount)
    return ledger.hold(tool, args, d, call_id)


def test_calls_held_in_one_turn_join_one_proposal_and_each_has_its_own_number_and_state():
    ledger = Ledger()
    ledger.new_turn()
    held = [_hold(ledger, "acme", 120), _hold(ledger, "bolt", 80), _hold(ledger, "cyan", 5)]
    assert len(ledger.records) == 1 and [h["n"] for h in held] == [1, 2, 3]
    assert ledger.numbers() == [1, 2, 3] and not ledger.confirmed
    assert ledger.decide(approve=[1, 3])                       # #2 is declined: not named
    assert [h["state"] for h in held] == ["approved", "declined", "approved"]
    assert ledger.records[0]["state"] == "confirmed"
    assert ledger.ran(_pay("cyan", 5)[2], ok=False)["n"] == 3     # out of order: the call that ran, by its digest
    assert ledger.ran(_pay("bolt", 80)[2], ok=True) is None        # declined: no approval to run on
    assert ledger.ran(_pay("acme", 120)[2], ok=True)["n"] == 1
    assert [h["state"] for h in held] == ["executed", "declined", "failed"]
    assert ledger.records[0]["state"] == "failed" and ledger.current is None


def test_an_approval_runs_its_call_once_and_only_that_call():
    ledger = Ledger()
    ledger.new_turn()
    _hold(ledger, "acme", 120)
    assert ledger.decide()
    assert ledger.take(_pay("acme", 121)[2]) is None          # another amount is another call
    assert ledger.take(_pay("acme", 120)[2], taken=[1]) is None   # taken once in this turn already
    assert ledger.ran(_pay("acme", 120)[2], ok=True) is not None
    assert ledger.take(_pay("acme", 120)[2]) is None          # spent
    assert ledger.current is None and ledger.records[0]["state"] == "executed"


def test_a_decision_naming_calls_that_do_not_wait_decides_nothing():
    ledger = Ledger()
    assert not ledger.decide()                                # nothing waits
    ledger.new_turn()
    _hold(ledger, "acme", 120)
    _hold(ledger, "bolt", 80)
    assert not ledger.decide(approve=[3])                      # no call 3 waits
    assert not ledger.decide(approve=[1], decline=[1])         # both at once
    assert ledger.numbers() == [1, 2]
    assert ledger.decide(decline=[2])                          # the others approved
    assert [c["state"] for c in ledger.records[0]["calls"]] == ["approved", "declined"]


def test_the_same_call_twice_in_a_turn_is_one_line_and_a_list_effect_is_a_set():
    ledger = Ledger()
    ledger.new_turn()
    a = ledger.hold("return_items", {"ids": ["I-1", "I-2"]}, digest("return_items", {"ids": ["I-1", "I-2"]}, ["ids"]))
    b = ledger.hold("return_items", {"ids": ["I-2", "I-1"]}, digest("return_items", {"ids": ["I-2", "I-1"]}, ["ids"]))
    assert a is b and len(ledger.records[0]["calls"]) == 1
    # an argument that is no effect keeps its order: another order is another call
    assert digest("send", {"lines": ["a", "b"]}) != digest("send", {"lines": ["b", "a"]})
    # every argument counts, whatever the order of the keys
    assert digest("pay", {"a": 1, "b": 2}) == digest("pay", {"b": 2, "a": 1}) != digest("pay", {"a": 1, "b": 3})


def test_a_new_turn_opens_a_new_proposal_withdrawing_what_was_not_run():
    ledger = Ledger()
    ledger.new_turn()
    _hold(ledger, "acme", 120)
    ledger.decide()
    ledger.new_turn()
    _hold(ledger, "bolt", 80)
    assert [r["state"] for r in ledger.records] == ["withdrawn", "proposed"]
    assert ledger.records[0]["calls"][0]["state"] == "withdrawn" and ledger.numbers() == [2]


def test_a_copy_is_independent_and_spend_fails_what_was_approved_and_not_run():
    ledger = Ledger()
    ledger.new_turn()
    _hold(ledger, "acme", 120)
    ledger.decide()
    fork = ledger.copy()
    fork.ran(_pay("acme", 120)[2], ok=True)
    assert ledger.confirmed and not fork.confirmed
    ledger.spend()
    assert ledger.records[0]["calls"][0]["state"] == "failed" and ledger.current is None

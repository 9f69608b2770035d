"""The confirmation state on its own: one record per proposal, what a batch authorises, and each write's fate."""
from handloop.calls import Call
from handloop.proposals import Proposals


def _bill(payee, amount):
    return Call(id=payee, name="pay", arguments="{}", args={"payee": payee, "amount": amount})


def _shown(payee, amount):
    return {"tool": "pay", "payee": payee, "amount": amount}


def test_writes_blocked_in_one_turn_join_one_proposal_and_each_runs_once():
    ledger = Proposals()
    ledger.new_turn()
    ledger.open(_shown("acme", 120))
    assert ledger.join(_shown("bolt", 80)) and ledger.join(_shown("cyan", 5))
    assert len(ledger.records) == 1 and len(ledger.pending()) == 3
    assert ledger.confirm() and ledger.confirmed
    assert ledger.fate(_bill("bolt", 80), "executed") is None          # out of order: the matching write
    assert [c["payee"] for c in ledger.pending()] == ["acme", "cyan"]
    assert ledger.fate(_bill("acme", 120), "executed") is None
    assert ledger.fate(_bill("cyan", 5), "failed") == "failed"          # one failed: the record ends failed
    ledger.close("failed")
    assert ledger.current is None and ledger.records[0]["fates"] == ["executed", "executed", "failed"]


def test_a_new_turn_opens_a_new_proposal_and_nothing_is_confirmed_without_one():
    ledger = Proposals()
    assert not ledger.confirm() and ledger.current is None
    ledger.new_turn()
    ledger.open(_shown("acme", 120))
    ledger.new_turn()
    assert not ledger.join(_shown("bolt", 80))       # the next turn's write is not part of what was shown
    ledger.close("withdrawn")
    ledger.open(_shown("bolt", 80))
    assert [r["state"] for r in ledger.records] == ["withdrawn", "proposed"]
    assert [r["number"] for r in ledger.records] == [1, 2]


def test_a_proposal_in_words_authorises_one_write_and_a_copy_is_independent():
    ledger = Proposals()
    ledger.open(offer="Shall I pay Acme 120 EUR?")
    ledger.confirm()
    fork = ledger.copy()
    assert fork.fate(_bill("acme", 120), "executed") == "executed"
    assert ledger.records[0]["fates"] == [] and ledger.confirmed       # the original is untouched

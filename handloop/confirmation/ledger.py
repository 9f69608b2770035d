"""The run's proposals and the user's decisions on them: one record per held call.

A proposal is the write calls of one turn that the guard held for the user (a batch), each an exact call: its
tool, every argument as validated, and their digest (held.py). Each held call has its own number (counted over
the run, from 1) and its own state:

    proposed → approved → executed | failed
    proposed → declined;  proposed | approved → withdrawn (another proposal took its place before it ran)

A proposal's `state` sums its calls up: "proposed" while the user has not answered; "confirmed" while an approved
call has not run; then "executed" (every approved call succeeded), "failed" (one did not) or "declined" (none was
approved), or "withdrawn". The proposal in force (`current`) is the last one still proposed or confirmed.

Invariants: only a decision of the user's (`decide`) approves a call, and only calls of the proposal waiting for
it; an approved call runs once (`ran` takes the first approved call with the call's digest, which is then
executed or failed for good); a call that is the same call as one already held in the same proposal joins it
(one line, one run). Records are plain dicts, kept as they are in the audit file (`memory.proposals`); only this
module changes them. It reads nothing of the run, and no words: memory.py folds the run into it.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

Record = dict[str, Any]
Held = dict[str, Any]

OPEN = ("proposed", "confirmed")     # the states of a proposal in force


class Ledger:
    """The run's proposals in order (`records`) and the one this turn's held calls join (`batch`)."""

    def __init__(self, records: Optional[list[Record]] = None) -> None:
        self.records: list[Record] = records if records is not None else []
        self.batch: Optional[Record] = None

    def copy(self) -> "Ledger":
        """An independent copy (for a fork of the memory): its records can change without changing these."""
        other = Ledger([dict(p, calls=[dict(c) for c in p["calls"]]) for p in self.records])
        if self.batch is not None and self.records and self.batch is self.records[-1]:
            other.batch = other.records[-1]
        return other

    # ---- what is in force ----
    @property
    def current(self) -> Optional[Record]:
        """The proposal in force: the last record still proposed or confirmed, or None."""
        last = self.records[-1] if self.records else None
        return last if last is not None and last["state"] in OPEN else None

    def waiting(self) -> list[Held]:
        """The held calls the user has been shown and not yet answered, in order."""
        current = self.current
        return [c for c in current["calls"] if c["state"] == "proposed"] if current else []

    def approved(self) -> list[Held]:
        """The held calls the user approved that have not run yet, in order."""
        current = self.current
        return [c for c in current["calls"] if c["state"] == "approved"] if current else []

    @property
    def confirmed(self) -> bool:
        """The user approved calls of the proposal in force that have not all run yet."""
        return bool(self.approved())

    def numbers(self) -> list[int]:
        """The numbers of the calls waiting for the user's decision."""
        return [c["n"] for c in self.waiting()]

    # ---- the model's calls, held ----
    def new_turn(self) -> None:
        """A new tool round: its held calls form a proposal of their own."""
        self.batch = None

    def hold(self, tool: str, args: dict, digest: str, call_id: str = "", words: Optional[str] = None,
             shows: Optional[dict] = None) -> Held:
        """Hold a write call for the user: it joins this turn's proposal (the same call already there: that one
        stands for it), else opens a new proposal, withdrawing the one in force. Returns the held call."""
        if self.batch is not None and self.batch is self.current and self.batch["state"] == "proposed":
            same = next((c for c in self.batch["calls"] if c["digest"] == digest), None)
            if same is not None:
                return same
            record = self.batch
        else:
            self.withdraw()
            record = {"number": len(self.records) + 1, "state": "proposed", "words": words, "calls": []}
            self.records.append(record)
            self.batch = record
        held = {"n": self._next_number(), "tool": tool, "args": args, "digest": digest, "state": "proposed",
                "id": call_id, **({"shows": shows} if shows else {})}
        record["calls"].append(held)
        return held

    def _next_number(self) -> int:
        return 1 + sum(len(p["calls"]) for p in self.records)

    # ---- the user's decisions ----
    def decide(self, approve: Optional[Iterable[int]] = None, decline: Optional[Iterable[int]] = None) -> bool:
        """The user's decision on the waiting calls: `approve` names the calls approved (None: every waiting call
        not declined), `decline` those declined (None: every waiting call not approved). Returns False, deciding
        nothing, when no call waits or a number named is not waiting."""
        waiting = self.numbers()
        yes, no = set(approve or ()), set(decline or ())
        if not waiting or not (yes | no) <= set(waiting) or yes & no:
            return False
        if approve is None:
            yes = set(waiting) - no
        for held in self.waiting():                 # what is not approved is declined, named or not
            held["state"] = "approved" if held["n"] in yes else "declined"
        self._settle()
        return True

    def decline(self) -> None:
        """Any other reply declines every waiting call."""
        for held in self.waiting():
            held["state"] = "declined"
        self._settle()

    def withdraw(self) -> None:
        """The proposal in force gives way: its waiting and approved calls that have not run are withdrawn."""
        current = self.current
        if current is None:
            return
        for held in current["calls"]:
            if held["state"] in ("proposed", "approved"):
                held["state"] = "withdrawn"
        current["state"] = "withdrawn" if not any(c["state"] in ("executed", "failed") for c in current["calls"]) \
            else _summed(current)

    # ---- the approved calls, run ----
    def take(self, digest: str, taken: Iterable[int] = ()) -> Optional[Held]:
        """The first approved call not run yet, and not among `taken` (numbers), that is the same call as
        `digest`; None when there is none: then the call runs on no approval."""
        taken = set(taken)
        return next((c for c in self.approved() if c["digest"] == digest and c["n"] not in taken), None)

    def ran(self, digest: str, ok: bool) -> Optional[Held]:
        """An approved call ran: the first approved call with this digest is executed (`ok`) or failed, for good
        (a failed call's approval is spent). Returns it, or None when no approved call is that call."""
        held = self.take(digest)
        if held is None:
            return None
        held["state"] = "executed" if ok else "failed"
        self._settle()
        return held

    def spend(self) -> None:
        """The approved calls that have not run cannot run as approved (the loop could not issue them): failed."""
        for held in self.approved():
            held["state"] = "failed"
        self._settle()

    def _settle(self) -> None:
        current = self.current
        if current is not None and not any(c["state"] == "proposed" for c in current["calls"]):
            current["state"] = _summed(current)


def _summed(record: Record) -> str:
    """A decided proposal's state from its calls'."""
    states = [c["state"] for c in record["calls"]]
    if "approved" in states:
        return "confirmed"
    if "failed" in states:
        return "failed"
    if "executed" in states:
        return "executed"
    return "withdrawn" if "withdrawn" in states else "declined"

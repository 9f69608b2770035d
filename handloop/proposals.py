"""The confirmation state: one record per proposal, in order, each with its fate.

A proposal is what the user is asked to confirm: the blocked writes of one turn, each as it was shown (its tool
and its arguments; several blocked in one turn join one record, a batch), or a proposal in words (the model's
answer). A record's `state` runs proposed → confirmed → executed | failed, or ends declined | withdrawn;
`fates` says what became of each write it authorised ("executed" | "failed"; None: not run yet). The record in
force (`current`) is the last one still proposed or confirmed; opening a new one is for the caller to do after
closing the one in force. A confirmation authorises exactly the writes shown, once each: a write that ran takes
the first matching write not run yet, and the record ends once every write it authorised ran (executed when all
succeeded, else failed). Records are plain dicts, kept as they are in the audit file (`memory.proposals`), and
only this module changes them. It reads nothing of the run: memory.py decides when a proposal opens or closes.
"""
from typing import Any, Optional

from .calls import Call

Record = dict[str, Any]


class Proposals:
    """The run's proposals in order (`records`) and the one this turn's blocked writes join (`batch`)."""

    def __init__(self, records: Optional[list[Record]] = None) -> None:
        self.records: list[Record] = records if records is not None else []
        self.batch: Optional[Record] = None

    def copy(self) -> "Proposals":
        """An independent copy (for a fork of the memory): its records can change without changing these; no batch."""
        return Proposals([dict(p, calls=list(p["calls"]), fates=list(p["fates"])) for p in self.records])

    @property
    def current(self) -> Optional[Record]:
        """The proposal in force: the last record still proposed or confirmed, or None."""
        last = self.records[-1] if self.records else None
        return last if last is not None and last["state"] in ("proposed", "confirmed") else None

    def pending(self) -> list[dict[str, Any]]:
        """The writes of the proposal in force that have not run yet, as shown to the user (each with its tool)."""
        current = self.current
        return [c for c, fate in zip(current["calls"], current["fates"]) if fate is None] if current else []

    @property
    def confirmed(self) -> bool:
        """The user confirmed the proposal in force, and what it authorised has not all run yet."""
        return self.current is not None and self.current["state"] == "confirmed"

    def new_turn(self) -> None:
        """A new tool round: its blocked writes form a proposal of their own."""
        self.batch = None

    def join(self, shown: dict[str, Any]) -> bool:
        """Add a blocked write to this turn's proposal when it is still the one in force. Returns:
        True when it joined; False when a new proposal must be opened for it."""
        if self.batch is None or self.batch is not self.current:
            return False
        self.batch["calls"].append(shown)
        self.batch["fates"].append(None)
        return True

    def open(self, shown: Optional[dict[str, Any]] = None, offer: Optional[str] = None) -> Record:
        """A new proposal: a blocked write's `shown` arguments, or an `offer` in words. Returns: its record."""
        calls = [shown] if shown is not None else []
        record = {"number": len(self.records) + 1, "calls": calls, "offer": offer, "state": "proposed",
                  "fates": [None] * len(calls)}
        self.records.append(record)
        self.batch = record if shown is not None else None
        return record

    def confirm(self) -> bool:
        """The user confirmed the proposal in force (again, if it was). Returns: False when none is in force."""
        if self.current is None:
            return False
        self.current["state"] = "confirmed"
        return True

    def close(self, state: str) -> None:
        """The proposal in force, if any, ends: declined, withdrawn (another takes its place), executed or failed."""
        if self.current is not None:
            self.current["state"] = state

    def fate(self, call: Call, fate: str) -> Optional[str]:
        """A write ran on the authority of the proposal in force; `fate` is "executed" or "failed". Returns: the
        state the record must end in once every write it authorised ran ("executed" | "failed"), else None."""
        current = self.current
        if current is None:
            return None
        if current["calls"]:
            at = _matching(current, call)
            current["fates"][at if at is not None else current["fates"].index(None)] = fate
        else:                                  # a proposal in words authorises one write
            current["fates"].append(fate)
        if None in current["fates"]:
            return None
        return "executed" if all(f == "executed" for f in current["fates"]) else "failed"


def _matching(record: Record, call: Call) -> Optional[int]:
    """The index of the first write of `record` not run yet that is `call` as shown (its tool and the shown
    values of its arguments), or None."""
    args = call.args or {}
    for at, (shown, fate) in enumerate(zip(record["calls"], record["fates"])):
        if fate is None and shown.get("tool") == call.name and \
                all(args.get(k) == v for k, v in shown.items() if k in args):
            return at
    return None

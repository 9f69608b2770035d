"""What the user confirms is exactly what runs: proposals are held calls, approvals name them.

- held.py: the one definition of "the same call" (canonical arguments, digest);
- ledger.py: the run's proposals, each held call's record and state, the user's decisions, the approved calls run;
- shown.py: a held call as the user is shown it (every argument, free text quoted whole).

A confirmation approves exactly the held calls it names (all of the waiting proposal, by default), once each; the
loop runs an approved call itself, exactly as held; anything else the model calls is a new proposal. Nothing here
reads words: whether an answer offers a write, or a reply declines one, only steers the loop (texts/words.py), and
no module that decides whether a write may run imports that reading.
"""
from .held import call_digest, canonical, digest, effects_of, form, identity
from .ledger import Ledger

__all__ = ["Ledger", "call_digest", "canonical", "digest", "effects_of", "form", "identity"]

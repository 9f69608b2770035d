"""What the loop does after a model answer: the run's state decides, and words only steer.

`verdict(memory, ...)` says whether an answer ends the run (done), leaves it waiting for the user (suspended), or is
nudged with a forced call; `offering(memory, text)` reads which write an answer offers, or asks the user to confirm,
while nothing is held. Both read words (texts/words.py) and both only steer: they decide whether to ask the model for a
call, which call to force and whether the run still needs a write, never whether a write runs. A write runs only as
a held call the user approved (confirmation/, guards.py), and no module that decides that imports this one.

Invariants: reads the memory (memory.py, duck-typed: this module does not import it) and words; changes nothing;
the same memory and answer always give the same verdict, so a resume steers as the live run did.
"""
import re

from .texts import words


def offering(memory, text):
    """The write tool an answer offers, or asks the user to confirm, when it does (words.proposes,
    words.asks_confirm): the one write tool the words name a verb of, else the write the run needs next, else
    the only write tool; True when it offers a write but none of these tells which (any call is asked for);
    None when it offers nothing, claims a write that never ran or pastes a tool result. A call written as text or
    JSON in the words does not stop it: asking for the call is what such an answer needs too."""
    if not words.proposes(text) and not words.asks_confirm(text, memory.agent.confirm):
        return None
    if "write" in memory.unbacked(text) or words.RESULT.search(text):   # a claimed write, a pasted result
        return None
    named = _closest(text, [t.name for t in memory.write_tools if words.mentions(text, t.name, t.description)])
    step = memory.next_step()
    if len(named) == 1:
        return named[0]
    if memory.kinds.get(step) == "write":
        return step
    return memory.write_tools[0].name if len(memory.write_tools) == 1 else True


def _closest(text, names):
    """Of the write tools an answer names a verb of, the one whose name it spells out ("modify pending order items",
    or modify_pending_order_items itself), else those whose names' words it holds most of, outside other identifiers
    (the "payment" of payment_method_id names no payment write)."""
    plain = words.plain(text)
    spelled = [n for n in names if words.names_in(plain, n.lower(), n.lower().replace("_", " ").replace("-", " "))]
    if len(spelled) == 1:
        return spelled
    prose = IDENTIFIER.sub(" ", plain)
    score = {n: sum(words.names_in(prose, w) for w in n.lower().replace("-", "_").split("_") if len(w) > 2)
             for n in names}
    best = max(score.values(), default=0)
    return [n for n in names if score[n] == best]


IDENTIFIER = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)+")      # a snake_case name in a text: an argument, not prose


def verdict(memory, written_calls=(), text="", echo=False):
    """After a model answer (`text`; `echo`: it only gives a tool result back): ("done" | "suspended",
    reason), or ("nudge", kind) when the loop should tell the model what is wrong and ask again,
    forcing a call. An answer that offers a write, or asks the user to confirm, while nothing is held, is
    answered by asking for that write's call (or its next prerequisite's), once per user message: the user
    is then shown the exact call. An answer that moves nothing (no question to the user, no final answer
    after the write, the user did not decline) is nudged once per ready step and per user message; then the
    run waits for the user, unless the run wants no write (`wanted`: none asked by the user nor named by the
    plan): then the answer ends it, as for an agent without a write tool."""
    offer = _offer_push(memory, text) if memory.writable and not memory.ledger.waiting() else None
    asked = memory.offering is not None and words.asks(text)         # it offers another write and asks the user
    if memory.current is None and (memory.declined or memory.writes) and not offer and not asked:
        return "done", "final_answer"         # the write made (or declined), and no other offered: the answer
    if written_calls and "written_call" not in memory.nudged:
        return "nudge", "written_call"
    if echo and "echo" not in memory.nudged:
        return "nudge", "echo"
    if not memory.writable:                   # nothing to confirm: the answer is the result
        return ("nudge", "idle") if not memory.progress and "idle" not in memory.nudged else ("done", "final_answer")
    if memory.ledger.waiting():
        return "suspended", "awaiting_confirmation"
    if offer:
        return "nudge", offer
    step = memory.next_step()
    push = step is not None and step not in memory.pushed
    if push and memory.kinds.get(step) == "write":     # a write the run wants is ready: ask for its call
        return "nudge", "step"
    if not echo and words.asks(text):       # a question reaches the user
        return "suspended", "awaiting_reply"
    if push:
        return "nudge", "step" if memory.progress else "idle"
    if not memory.progress and "idle" not in memory.nudged:
        return "nudge", "idle"
    if memory.write_tools and not any(memory.wanted(t.name) for t in memory.write_tools):
        return "done", "final_answer"       # nothing asked to be written: the answer is the result
    return "suspended", "awaiting_reply"

def _offer_push(memory, text):
    """The nudge for an answer that offers a write (`offering`): "offer" to ask for the write's call, or for its
    first prerequisite that can run, when that was not asked for since the user spoke; else None. Once a write was
    made, only an offer that asks the user ("Shall I also ...?") is one: "please confirm" after the write is done
    offers nothing new."""
    tool = memory.offering
    if tool is None or memory.declined or (tool is True and "offer" in memory.nudged):
        return None
    if memory.writes and not words.asks(text):
        return None
    toward = True if tool is True else memory.toward(tool)
    return "offer" if toward is True or (toward is not None and toward not in memory.pushed) else None

"""What the loop does after a model answer: the run's state decides, and words only steer.

`verdict(memory, ...)` says whether an answer ends the run (done), leaves it waiting for the user (suspended), or is
nudged with a forced call; `offering(memory, text)` reads which write an answer offers, or asks the user to confirm,
while nothing is held; `nudge(r, kind)` is what the loop then tells the model (a user message named "loop", recorded
as such and never taken for the user's reply), and `forcing(r)` what the next request forces. Both read words (texts/words.py) and both only steer: they decide whether to ask the model for a
call, which call to force and whether the run still needs a write, never whether a write runs. A write runs only as
a held call the user approved (confirmation/, guards.py), and no module that decides that imports this one.

Invariants: reads the memory (memory.py, duck-typed: this module does not import it) and words; changes nothing;
the same memory and answer always give the same verdict, so a resume steers as the live run did.
"""
import json
import re

from .texts import words

LOOP_NAME = "loop"        # the name of the user messages the loop itself sends (never a user reply)
NUDGES = ("written_call", "echo", "idle", "step", "offer", "empty_reply", "length")
FORCING = ("idle", "written_call", "echo", "step", "offer")   # nudges whose re-ask forces a call of the next step


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


# ---- what the loop tells the model, and what the next request forces ----
def nudge(r, kind, problems=()):
    """The loop tells the model, once, what is wrong with its answer: a user message named "loop".
    Its text starts with the nudge of its kind (how memory knows it), then says what exactly was
    wrong with a call written as text (`problems`) and, for a nudge to act (FORCING), the next step
    and its tool, which the re-ask forces (forcing). Returns the text."""
    parts = [r.say(f"nudge.{kind}"), *(r.say(f"nudge.problem.{p}") for p in problems)]
    step = r.memory.target(kind) if kind in FORCING else None
    named = ([r.say("nudge.next", tool=step)] if kind == "offer" else _next(r, step)) if isinstance(step, str) else []
    text = " ".join(parts + named)
    r.messages.append({"role": "user", "name": LOOP_NAME, "content": text})
    r.memory.absorb_nudge(text)
    return text


def _next(r, tool):
    """What a nudge says of the next step: the plan's step that names `tool` (or the tool), and for a
    write, that the call is shown to the user before anything runs."""
    step = r.memory.step_of(tool)
    said = [r.say("nudge.next_step", index=step["index"], title=step["title"], tool=tool) if step else
            r.say("nudge.next", tool=tool)]
    if r.memory.kinds.get(tool) == "write":
        said.append(r.say("nudge.write_proposal", tool=tool))
    return said


def forcing(r):
    """What the next request must force when the record ends with a nudge to act (small models repeat
    their sentence to a text nudge; forced, they call the tool): the tool of the step it named, or any
    tool call (True) when it named none; False otherwise. Pushed again once: when the reply to that forced
    request was a call blocked for its arguments or by one of the agent's rules (a server without a grammar
    lets a small model answer a forced call with arguments that fail validation), the request after its tool
    messages forces that tool again; the reply to that one is never pushed a third time."""
    last = r.messages[-1]
    if not r.tools:
        return False
    if last.get("role") == "tool":
        return _again(r)
    if not _forcing_nudge(r, last):
        return False
    step = r.memory.forced
    return step if step in _names(r) else True


def _forcing_nudge(r, message):
    return message.get("name") == LOOP_NAME and message.get("role") == "user" and \
        any(str(message.get("content")).startswith(r.say(f"nudge.{kind}")) for kind in FORCING)


def _names(r):
    return {t.get("function", {}).get("name") for t in r.tools}


AGAIN = ("arguments", "rule")       # the guards whose block of a forced call pushes the forced step again


def _again(r):
    """The tool to force once more, when the record ends with the tool messages of the model's reply to a forced
    request (right after a nudge to act) and one of its calls was blocked for its arguments or by a rule; else
    False."""
    at = len(r.messages) - 1
    while at > 0 and r.messages[at].get("role") == "tool":
        at -= 1
    reply = r.messages[at]
    if at < 1 or reply.get("role") != "assistant" or reply.get("name") == LOOP_NAME or \
            not _forcing_nudge(r, r.messages[at - 1]):
        return False
    names = {c.get("id"): (c.get("function") or {}).get("name") for c in reply.get("tool_calls") or []
             if isinstance(c, dict)}
    for message in r.messages[at + 1:]:
        if _loaded(message.get("content")).get("blocked_by") in AGAIN:
            name = names.get(message.get("tool_call_id"))
            return name if name in _names(r) else True
    return False


def _loaded(content):
    try:
        value = json.loads(content)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}

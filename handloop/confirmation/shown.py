"""A held call as the user is shown it: the tool and every argument, rendered by the loop from the call itself.

Each held call is one block: its number and tool, then one line per argument (`name: value`), free text quoted
whole as a JSON string (so a newline or a quote in it is seen, never taken for layout), a list item by item
(`name[1]: ...`), a mapping as JSON; what the tool's describe hook adds is shown after the arguments, marked as
its own; the model's own words, when it wrote any beside its calls, come before the calls, marked as the model's.
No argument's name can collide with anything the rendering adds: the rendering adds no field to the arguments.

Invariants: pure; reads only the held records (confirmation/ledger.py) and the agent's catalogue (`say`); never
cuts an argument's value; the same record always renders the same text.
"""
from __future__ import annotations

import json
from typing import Any, Callable

Say = Callable[..., str]


def value(v: Any) -> str:
    """One value as shown: a string quoted whole (JSON), a number or boolean as JSON, anything else as JSON."""
    return json.dumps(v, ensure_ascii=False)


def argument_lines(name: str, v: Any) -> list[str]:
    """The lines of one argument: a non-empty list item by item, anything else on one line."""
    if isinstance(v, list) and v:
        return [line for i, item in enumerate(v, 1) for line in argument_lines(f"{name}[{i}]", item)]
    return [f"{name}: {value(v)}"]


def call_lines(held: dict, say: Say) -> list[str]:
    """One held call: its heading (number, tool) and every argument, indented; the tool's own description after."""
    args = held.get("args") or {}
    lines = [say("proposal.call", n=held.get("n"), tool=held.get("tool"))]
    lines += ["    " + line for name in args for line in argument_lines(name, args[name])]
    if not args:
        lines.append("    " + say("proposal.no_args"))
    shows = held.get("shows") or {}
    if shows:
        lines.append("    " + say("proposal.shows", shows=", ".join(f"{k}={value(v)}" for k, v in shows.items())))
    return lines


def proposal_lines(record: dict, say: Say, states: tuple[str, ...] = ("proposed",)) -> list[str]:
    """A proposal as the user reads it: the model's own words (when it wrote any), then each of its calls in
    one of `states`, in order."""
    words = " ".join(str(record.get("words") or "").split())
    lines = [say("proposal.words", words=words)] if words else []
    for held in record.get("calls") or ():
        if held.get("state") in states:
            lines += call_lines(held, say)
    return lines


def one_line(held: dict) -> str:
    """A held call on one line (the trace page, a note): tool(arg=value, ...), every argument, whole."""
    args = held.get("args") or {}
    return f"{held.get('tool')}(" + ", ".join(f"{k}={value(v)}" for k, v in args.items()) + ")"

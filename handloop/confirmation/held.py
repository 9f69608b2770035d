"""The one definition of "the same call": a write's canonical form and its digest.

A call is its tool and every argument it carries. Its canonical form is its arguments key-sorted at every depth, a
whole number in one form (120.0 is 120), each list of a declared effect argument in a canonical order (a list effect
is a set: the same items in another order are the same write) unless the tool declares its order part of the write
(`ordered`). Its digest is a SHA-256 of the tool's name and that form. Two calls are the
same call exactly when their digests are equal: what the user approved, what the guard lets run, what the
idempotency key covers and what the judge replays all read this module.

Invariants: imports no project module (a leaf); pure functions of plain JSON data; a digest never depends on the
order of a mapping's keys or of a list effect's items, and always on every argument.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable


def canonical(value: Any) -> Any:
    """A list's elements in a canonical order (each element canonical too), a mapping's values canonical; any
    other value as `number` leaves it."""
    if isinstance(value, list):
        return sorted((canonical(v) for v in value), key=_text)
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    return number(value)


def number(value: Any) -> Any:
    """`value` with every whole float an int, at any depth (120.0 is 120: one number, one form)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [number(v) for v in value]
    if isinstance(value, dict):
        return {k: number(v) for k, v in value.items()}
    return value


def identity(args: dict | None, effects: Iterable[str] = ()) -> dict:
    """What makes a write this write and no other: every argument it carries (a whole number in one form), the lists
    of its unordered effect arguments (`effects`) in a canonical order, keys sorted."""
    effects = set(effects)
    return {k: canonical(v) if k in effects else number(v) for k, v in sorted((args or {}).items())}


def form(args: dict | None, effects: Iterable[str] = ()) -> str:
    """The canonical text of a call's arguments: its identity as compact JSON with every mapping's keys sorted."""
    return _text(identity(args, effects))


def digest(tool: str, args: dict | None, effects: Iterable[str] = ()) -> str:
    """The digest of a call: "sha256:" and the hex SHA-256 of its tool's name and canonical arguments."""
    body = json.dumps([tool, identity(args, effects)], sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      default=str)
    return "sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()


def call_digest(call: Any) -> str:
    """The digest of a calls.Call: its tool's name, every argument, its effect lists as sets."""
    return digest(call.name, call.args or {}, effects_of(call.tool))


def effects_of(tool: Any) -> tuple[str, ...]:
    """The effect arguments of a declared tool (a calls.Tool, or None: none) whose lists are sets of their items:
    all of them but those it declares `ordered` (a route's stops), whose order is part of the write."""
    effect = getattr(tool, "effect", None) or ()
    ordered = set(getattr(tool, "ordered", None) or ())
    return tuple(name for name, _ in effect if name not in ordered)


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)

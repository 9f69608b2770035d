"""The judge's rule `provenance` (checks.py lists it with the others): every sourced argument of a call that took
effect holds a value its source gave before the call (a tool's successful results, found in its records at the
source's path, or the user's own messages), looked up in an index of each source's results (`_Seen`), built once.

Invariants: reads a Transcript and its declaration, never writes; each source's index is built at its first use and
reused for every later call, so the rule is linear in the conversation (up to a log factor).
"""
import math
import re
from typing import Any

from .texts import Joined, Said
from .verdicts import ARG_WORDS, judge_calls, said_args, said_tools, verdict_of
from .readings import dicts_in, has_token, plain_result
from ..texts.stated import base, records_at, rows


def provenance(t):
    sourced = [n for n in t.agent.tools if t.agent.sources(n)]
    subject = [n for n in sourced if n in t.agent.writes] or sourced       # what a pass needs: a write, if any
    others = [n for n in sourced if n not in subject]
    main = [c for c in t.ok(*subject) + t.unknown(*subject) if _applies(t, c)]
    index: dict[tuple, _Seen] = {}            # (source tool, fields, near, path) -> its _Seen, built at first use
    faults, doubts, fine = judge_calls(main, lambda c: _sourced(t, c, index))
    more = judge_calls([c for c in t.ok(*others) + t.unknown(*others) if _applies(t, c)],
                       lambda c: _sourced(t, c, index))
    faults, doubts = faults + more[0], doubts + more[1]
    seen = Joined((Said("prov.seen", count=n, tool=tool, what=said_args(source["args"]), source=_tools(source))
                   for tool in others for source in t.agent.sources(tool)
                   for n in [sum(1 for c in t.ok(tool) if _applies(t, c))] if n), sep=None)
    said = []
    for tool in subject:
        for source in t.agent.sources(tool):
            values = sorted({_shown(row) for c in t.ok(tool) if c.args is not None for row in _rows(c.args, source["args"])})
            if values:
                said.append(Said("prov.passes_user" if _all_user(source) else "prov.passes",
                                 what=said_tools([tool], bare=True), args=Joined(source["args"]), values=Joined(values),
                                 source=_tools(source)))
    passes = fine and Joined([Joined(said, "sep.clauses"), seen], sep=None)
    args = Joined(a for tool in subject for s in t.agent.sources(tool) for a in s["args"])
    return verdict_of(faults, doubts, passes, Said("prov.nothing", what=said_tools(subject), args=args, seen=seen))


def _applies(t, call):
    """Whether a call's declared sources apply to it: always for a write (what it wrote must be traced) and for a
    tool declared outside (what it sent out must be traced); for another tool, when it gives one of their
    arguments (a read's unreadable arguments changed nothing)."""
    if call.write or t.agent.outside(call.name):
        return True
    return call.args is not None and any(k in call.args for s in t.agent.sources(call.name) for a in s["args"]
                                         for k in (base(a),) + ALIASES.get(base(a), ()))


def _sourced(t, call, seen):
    """(kind, reason) for one call against its declared sources, read as the guards read them (texts/stated.py):
    each source must hold (two naming one argument both), for each element of a list argument on its own, from
    any one of its alternatives (`seen`: the indexes of their results, by source: _held)."""
    sources = t.agent.sources(call.name)
    if call.args is None:
        return "fail", Said("prov.unparseable", call=call.label, args=Joined(a for s in sources for a in s["args"]))
    for source in sources:
        tried = [(o, _rows(call.args, o["args"])) for o in source.get("any") or [source]]
        for at, values in enumerate(tried[0][1]):
            if any(at < len(found) and _held(t, call, option, list(found[at]), seen) for option, found in tried):
                continue
            names = [a.replace("[]", f"[{at + 1}]") for a in source["args"]]
            if _all_user(source):
                arg, value = next(((n, v) for n, v in zip(names, values) if not t.typed_before(v, call.pos)),
                                  (names[0], values[0]))
                return "fail", Joined([Said("prov.not_typed", call=call.label, arg=arg, value=value),
                                       _brought(t, call, value)], sep=None)
            if len(values) == 1 and any(o.get("user") for o in source.get("any") or [source]):
                return "fail", Joined([Said("prov.not_seen_or_user", call=call.label, arg=names[0], value=values[0],
                                            source=_tools(source, users=False)), _brought(t, call, values[0])], sep=None)
            if len(values) == 1 and not source["near"]:
                return "fail", Said("prov.not_seen", call=call.label, arg=names[0], value=values[0],
                                    source=_tools(source))
            key = "prov.not_from" if ",".join(source["args"]) in ARG_WORDS else "prov.not_from_args"
            return "fail", Said(key, call=call.label, what=said_args(names), values=_shown(values), source=_tools(source))
    return "ok", ""


def _rows(args, names):
    """The rows of values a source's argument paths give (stated.rows), an argument missing read under the names
    other systems give it (ALIASES), else as None (never found)."""
    given = dict(args)
    for name in {base(n) for n in names} - set(given):
        given[name] = _value(args, name)
    return rows(given, names) or []


def _held(t, call, source, values, seen):
    """Whether a successful result of `source`'s tool before `call` holds `values` (as _found reads one): looked
    up in the source's index (_Seen, built at its first use), or, when the values and the fields do not pair
    one to one, by reading each earlier result. For the user's words: whether each value appears in a message the
    user wrote before the call (texts/stated.py `typed`, as the guards read it)."""
    if source.get("user"):
        return bool(values) and all(t.typed_before(v, call.pos) for v in values)
    if len(values) != len(source["fields"]) or not values:
        return any(_found(values, source, search) for search in t.ok(source["tool"]) if search.pos < call.pos)
    where = (source["tool"], tuple(source["fields"]), bool(source["near"]), source.get("path") or "")
    if where not in seen:
        seen[where] = _Seen(t, source)
    first = seen[where].first(values)
    return first is not None and first < call.pos


def _tools(source, users=True):
    """The tools a source's values may come from (`users`: the user's own messages named among them)."""
    options = [o for o in source.get("any") or [source] if users or not o.get("user")]
    names = dict.fromkeys(("", o["tool"]) if o.get("user") else (o["tool"], "") for o in options)
    return Joined([Said("prov.the_user") if user else tool for tool, user in names], "sep.or")


def _all_user(source):
    """Whether a source is the user's own messages only (each alternative, if it has any)."""
    return all(o.get("user") for o in source.get("any") or [source])


def _brought(t, call, value):
    """Where a value that is not the user's appeared before the call: the tools whose successful results held it
    ("" when none did)."""
    tools = t.brought(value, call.pos)
    return Said("prov.brought", tools=Joined(tools)) if tools else ""


class _Seen:
    """Where a source's values were first seen: the earliest successful result of its tool that holds them (as
    _found reads a result: a record with the fields, anywhere or at the source's path, or a plain text naming
    each value), found through indexes built once over those results, so a lookup does not read every earlier
    result again. A record's fields are keyed by their text; `near` sources by a grid of NEAR_CELL degrees on the
    first field, the candidates checked with _near; plain texts by their tokens (each value's rarest token's
    texts checked as _found does). One per source (an alternative of `any` is a source of its own)."""

    def __init__(self, t, source):
        self.source, self.near = source, bool(source["near"])
        self.records: dict[tuple, int] = {}
        self.cells: dict[int, list] = {}
        self.texts: list[tuple[Any, str]] = []
        self.index: dict[Any, list[int]] = {}
        for search in t.ok(source["tool"]):
            text = plain_result(search.result)
            if text is not None:
                self._text(search, text)
                continue
            for node in dicts_in(search.result) + [r for r in records_at(search.result, source.get("path") or "")
                                                   if isinstance(r, dict)]:
                found = [_value(node, f) for f in source["fields"]]
                if self.near:
                    cell = _cell(found[0]) if found else None
                    if cell is not None:
                        self.cells.setdefault(cell, []).append((search.pos, found))
                elif all(_scalar(v) for v in found):
                    self.records.setdefault(tuple(str(v) for v in found), search.pos)

    def _text(self, search, text):
        self.texts.append((search, text))
        keys = {_cell(n) for n in re.findall(NUMBER, text)} if self.near else set(re.findall(TOKEN, text))
        for key in keys - {None}:
            self.index.setdefault(key, []).append(len(self.texts) - 1)

    def first(self, values):
        """The position of the earliest result holding `values`, or None."""
        found = [p for p in (self._in_records(values), self._in_texts(values)) if p is not None]
        return min(found, default=None)

    def _in_records(self, values):
        if not self.near:
            return self.records.get(tuple(str(v) for v in values)) if all(_scalar(v) for v in values) else None
        cell = _cell(values[0]) if values else None
        if cell is None:
            return None
        hits = [next((p for p, found in self.cells.get(c, ()) if all(_near(v, f) for v, f in zip(values, found))),
                     None) for c in (cell - 1, cell, cell + 1)]
        return min((p for p in hits if p is not None), default=None)

    def _in_texts(self, values):
        if not self.texts:
            return None
        if not values:                                    # nothing to look for: any text holds it
            return self.texts[0][0].pos
        keys: list[Any] = [_cell(v) for v in values] if self.near else [str(v) if _scalar(v) else None for v in values]
        if any(k is None for k in keys):                  # a value no text can name (not a number, not a scalar)
            return None
        candidates: list[int]
        if not self.near and not all(TOKEN_ONLY.fullmatch(k) for k in keys):
            candidates = list(range(len(self.texts)))     # a value that is no token: every text, as _found reads
        elif self.near:
            candidates = sorted({i for c in (keys[0] - 1, keys[0], keys[0] + 1) for i in self.index.get(c, ())})
        else:
            candidates = min((self.index.get(k, []) for k in keys), key=len)
        for i in candidates:
            search, _ = self.texts[i]
            if _found(values, self.source, search):
                return search.pos
        return None


NEAR_CELL = 0.02            # degrees: wider than _near's 0.01, so near values are in the same cell or the next
NUMBER = r"-?\d+(?:\.\d+)?"
TOKEN = r"[\w-]+"           # has_token's word: a value of these characters is a token iff it is one of these runs
TOKEN_ONLY = re.compile(TOKEN)


def _cell(value):
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return math.floor(number / NEAR_CELL) if math.isfinite(number) else None


def _found(values, source, search):
    """Whether an earlier result holds the values: a record with the fields (any depth, or at the source's path:
    a record keyed by id, its key as the field "*"), or, in plain text, each value as a token (`near`: a number
    within 0.01)."""
    text = plain_result(search.result)
    if text is not None:
        if source["near"]:
            numbers = re.findall(NUMBER, text)
            return all(any(_near(v, n) for n in numbers) for v in values)
        return all(_mentions(search.result, v) for v in values)
    same = _near if source["near"] else lambda a, b: _scalar(a) and _scalar(b) and str(a) == str(b)
    nodes = dicts_in(search.result) + [r for r in records_at(search.result, source.get("path") or "")
                                       if isinstance(r, dict)]
    return any(all(same(v, _value(node, f)) for v, f in zip(values, source["fields"])) for node in nodes)


def _mentions(result, value, field=None):
    """Whether a result names `value`: as a token of a plain-text result, or as `field` of a record in it."""
    if not _scalar(value):
        return False
    if plain_result(result) is not None:                  # a plain-text result from another system
        return has_token(str(value), plain_result(result))
    return field is not None and str(value) in {str(d[field]) for d in dicts_in(result) if _scalar(d.get(field))}


def _scalar(value):
    return isinstance(value, (str, int)) and not isinstance(value, bool) and str(value) != ""


ALIASES = {"latitude": ("lat",), "longitude": ("lon", "lng")}     # the same field under other systems' names


def _value(node, key):
    return next((node[k] for k in (key,) + ALIASES.get(key, ()) if k in node), None)


def _shown(values):
    return str(values[0]) if len(values) == 1 else f"({', '.join(map(str, values))})"


def _near(a, b):
    """Same place to within 0.01° (a result rounded to two decimals is still the same place)."""
    try:
        return abs(float(a) - float(b)) <= 0.01 + 1e-9
    except (TypeError, ValueError, OverflowError):
        return False

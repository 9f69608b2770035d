"""An agent's rules over its writes, read the same way by the guards (through memory.py and guards.py) and by the
offline judge: what a rule is given of the run (`Facts`), what a rule's check returned (`reason_of`), and whether an
answer after a write names a value its receipt contradicts (`contradicted`).

- A rule (calls.Rule) is the agent's own code: `check(args, facts)` returns why a call breaks it, or None. The
  guards give it the facts of the run before the call (its earlier turns, and the calls of the same turn decided
  before it, with their outcomes); the judge gives it the same facts read from the record (the calls that took
  effect before it). A rule is given deep, read-only copies (`read_only`) of the call's arguments and of the
  facts: changing them raises TypeError (the rule's code fails, as any hook's), so what runs is what was held, byte
  for byte, whatever a rule does.
- An answer contradicts a write's receipt when, for an `id`, `choice` or `date` effect argument of a write that
  took effect, it names values of that argument and none of them is a value the writes of that tool used (the
  receipt's field of that name, else the argument written): "it rains, so I booked the Suite" over a Deluxe
  receipt; and when, for a number field of the receipt (or a `count` effect's argument), it states numbers right
  after or before the field's name or one of its declared units and none is a number the writes of that tool have
  there (`numbers_near`): "Paid B1: 1200 EUR" over an amount of 120 (units EUR), 「订了三晚」 over 2 nights. An
  answer that names the written value beside others ("Deluxe, not the Suite") contradicts nothing.

Invariants: imports no project module but stated.py and words.py (leaves); pure functions of plain data; a rule's
own code is never run here (its callers run it and say what its failure is).
"""
import copy
import math
import re

from . import stated, words

READ_ONLY = "a rule's arguments and facts are read-only (copy.deepcopy(args) gives a copy it may change)"


def _refused(self, *args, **kwargs):
    raise TypeError(READ_ONLY)


class ReadOnlyDict(dict):
    """A JSON object a rule reads: a dict for every reading (isinstance, json.dumps, ==), a TypeError for every
    change; copy.copy and copy.deepcopy of it are plain, changeable dicts."""
    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refused

    def __copy__(self):
        return dict(self)

    def __deepcopy__(self, memo):
        return {k: copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce_ex__(self, protocol):
        return dict, (dict(self),)


class ReadOnlyList(list):
    """A JSON array a rule reads: a list for every reading, a TypeError for every change; its copies are plain
    lists."""
    __setitem__ = __delitem__ = __iadd__ = __imul__ = append = extend = insert = remove = pop = clear = sort = \
        reverse = _refused

    def __copy__(self):
        return list(self)

    def __deepcopy__(self, memo):
        return [copy.deepcopy(v, memo) for v in self]

    def __reduce_ex__(self, protocol):
        return list, (list(self),)


def read_only(value):
    """A deep, read-only copy of a JSON value (what a rule is given): nothing a rule does to it reaches the call
    that runs, the record or the run's facts; a change raises TypeError (READ_ONLY)."""
    if isinstance(value, dict):
        return ReadOnlyDict({k: read_only(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return ReadOnlyList(read_only(v) for v in value)
    return value


class Facts:
    """What the run's tools gave before a call: each successful call as (tool, arguments, result), oldest first, the
    result as the tool returned it (a value the model was given wrapped, unwrapped: stated.returned). A rule reads it
    with `results(tool)`, `calls(tool)` or `last(tool, **fields)`."""

    def __init__(self, done=()):
        self._done = [(str(tool), read_only(args if isinstance(args, dict) else {}), read_only(stated.returned(result)))
                      for tool, args, result in done]

    def calls(self, tool):
        """[(arguments, result)] of the successful calls of `tool`, oldest first."""
        return [(args, result) for name, args, result in self._done if name == tool]

    def results(self, tool):
        """The results of the successful calls of `tool`, oldest first."""
        return [result for _, result in self.calls(tool)]

    def last(self, tool, **fields):
        """The newest result of `tool` whose fields equal `fields` (a field the result lacks is read from the
        call's argument of that name), or None."""
        for args, result in reversed(self.calls(tool)):
            record = result if isinstance(result, dict) else {}
            if all(record.get(k, args.get(k)) == v for k, v in fields.items()):
                return result
        return None

    def __repr__(self):
        return f"Facts({[name for name, _, _ in self._done]})"


def reason_of(value):
    """What a rule's check returned, as the reason the call breaks it ('' when it holds); TypeError when it
    returned neither a text nor None (the agent's code is wrong)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"returned {type(value).__name__}, not a reason (str) or None")
    return value.strip()


def contradicted(plain, writes, records, fallback=None):
    """[(tool, argument, {values named}, {values written})] where a plain text (words.plain) contradicts the
    writes that took effect before it. `writes`: [(tool, declaration as recorded, arguments, receipt)];
    `records(tool, path)`: the records of the reads before the text (where ids and their names come from);
    `fallback`: {id: name} of any id the reads gave."""
    used: dict = {}
    decls: dict = {}
    for tool, decl, args, receipt in writes:
        decls[tool] = decl
        for arg, how in stated.effect(decl):
            if how not in ("id", "choice", "date"):
                continue
            value = receipt.get(arg, args.get(arg)) if isinstance(receipt, dict) else args.get(arg)
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                used.setdefault((tool, arg, how), set()).add(str(value))
    found = []
    for (tool, arg, how), values in used.items():
        named = _named(plain, decls[tool], arg, how, values, records, fallback)
        if named and not named & values:
            found.append((tool, arg, named, values))
    return found + _miscounted(plain, writes)


def _miscounted(plain, writes):
    """[(tool, field, {numbers named}, {numbers written})] where a text names, beside the name of a number field of a
    write's receipt (or a count effect's argument) or one of its declared units, only numbers none of that tool's
    writes has there: "Paid B1: 1200 EUR" over a receipt of amount 120 (units EUR), 「订了三晚」 over 2 nights."""
    used: dict = {}
    labels: dict = {}
    for tool, decl, args, receipt in writes:
        record = receipt if isinstance(receipt, dict) else {}
        fields = [k for k, v in record.items() if _number(v)] + \
            [arg for arg, how in stated.effect(decl) if how == "count" and arg not in record]
        for field in fields:
            value = record.get(field, args.get(field))
            if _number(value):
                used.setdefault((tool, field), set()).add(float(value))
                units = (decl.get("units") or {}).get(field) or ()
                labels[(tool, field)] = {field, field.replace("_", " "), *(u for u in units if isinstance(u, str))}
    found = []
    for (tool, field), values in used.items():
        named = numbers_near(plain, labels[(tool, field)])
        if named and not named & values:
            found.append((tool, field, {_shown(n) for n in named}, {_shown(v) for v in values}))
    return found


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _shown(number):
    return str(int(number)) if float(number).is_integer() else str(number)


NUMBER = r"(?<![\d.,])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\d])"
SPELLED = r"(?<![a-z])(" + "|".join(sorted(words.NUMERALS, key=len, reverse=True)) + r"|十[一二三四五六七八九])(?![a-z])"
LINK = r"[\s:：=]*(?:(?:of|is|was|were|came to|totals?|totalling|为|是|共计|共|合计)[\s:：=]*){0,2}"


def numbers_near(plain, labels):
    """The numbers a plain text (words.plain) states right after one of `labels` (a field's name, a unit: "amount:
    1,200", "eur 1200", 「金额为 1200」) or right before one ("1200 eur", "two nights", 「三晚」): digits with
    thousands and decimals, and the numerals words.NUMERALS knows, as floats."""
    names = [re.escape(words.plain(label).strip()) for label in labels
             if isinstance(label, str) and (len(label.strip()) >= 2 or not label.isascii())]
    if not names:
        return set()
    label = "(?:" + "|".join(sorted(names, key=len, reverse=True)) + ")"
    found = set()
    for number in (NUMBER, SPELLED):
        for pattern in (number + r"\s*(?:个\s*)?" + label, r"(?<![a-z])" + label + LINK + number):
            for match in re.finditer(pattern, plain):
                found.add(_value(match))
    return {n for n in found if n is not None}


def _value(match):
    whole, *rest = match.groups()
    if whole in words.NUMERALS:
        return float(words.NUMERALS[whole])
    if whole.startswith("十") and whole[1:] in words.NUMERALS:
        return float(10 + words.NUMERALS[whole[1:]])
    decimals = rest[0] if rest else None
    return float(whole.replace(",", "") + ("." + decimals if decimals else ""))


def _named(plain, decl, arg, how, values, records, fallback):
    """The values of one effect argument a text names (as strings)."""
    if how == "date":
        return {d for year in {v[:4] for v in values} for d in words.dates(plain, year)}
    known = stated.values_of(decl, arg, how, records, fallback)
    for value in values:
        known.setdefault(value, (value,))
    return {str(v) for v in stated.named(plain, known)}

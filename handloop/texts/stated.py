"""Where a call's arguments come from (provenance), and which values of a write's effects the run's records hold:
the one reading of a declaration against the run's records, shared by the guards (through memory.py) and the
offline judge, so that both read a declaration the same way; and whether a plain text states a value (`says`,
`states`), which only the answer-against-receipts check reads (texts/rules.py). Nothing here decides whether a write
was confirmed: that is the held calls' record (confirmation/).

A write's declaration is read as the plain dict a run records (calls.declared_tool): `effect` [(argument, how)],
`lists` [the effect arguments whose schema is an array], `sources` [{args, tool, fields, path, near}, or with
`any`: [such sources], the alternatives], `choices` {argument: {value: [other names]}}, `units` {argument:
[words after a count]}. A file recorded before `lists` and `any` existed reads as it did.
- Sources (`unsourced`): each argument of a source is a path into the call's arguments (`arg_path`): "order_id",
  "item_ids[]" (each element on its own), "passengers[].name" (that field of each element); the values must equal
  the fields of one record at `path` in an earlier successful result of the source's tool: `path` is dotted, `[]`
  steps into a list, `*` into the values of a mapping (records keyed by id: "payment_methods.*"), and the field
  "*" of a record reached by a last `*` step is the key it sits under. A source with `any` holds when one of its
  alternatives does; two sources naming one argument must both hold. A result that is no JSON object reached the
  model wrapped ({"value": ...}, `returned`): its records are read in the value the tool returned too.
- A `choice` effect takes its values from the argument schema's enum, with the aliases as extra names (as
  recorded in `choices`).
- An `id` effect is any value the run's reads produced for that argument: the fields its `sources` name (every
  alternative's; "item_ids[]" for the elements of a list), in the records of their tools' successful results,
  whatever the field is called; an id argument no source names takes the ids the reads gave (`id` or `*_id`
  fields, `fallback`).
- A source named USER ("user": `Source.user`) is the user's own messages, not a tool's results: `records(USER, "")`
  gives those messages (texts, never a tool's result, the model's text or a loop message), and a value comes from
  them when it appears in what the user wrote before the call (`typed`). They give no records. A recorded source of a tool the declaration names "user" (an older file) reads as that tool: its
  records are objects, not texts.

Invariants: imports no project module but words.py and confirmation/held.py (leaves); pure functions of plain
data; `records(tool, path)` is the caller's: the records of that tool's successful results before the write, at that path.
"""
import math
import re
import unicodedata

from . import words
from ..confirmation.held import canonical as canonical, identity as identity   # the one "same call" (re-exported)

USER = "user"        # the source that is the user's own messages (Source.user), not a tool's results


WRAPPED = ("value", "_cut")     # a result that is no JSON object reaches the model as {"value": it} (values.wrapped)


def returned(result):
    """What a tool returned, from the object its tool message holds: a result the model was given wrapped
    ({"value": x}, x not an object; a `_cut` note beside it when it was cut) is x; any other result is itself."""
    if isinstance(result, dict) and "value" in result and set(result) <= set(WRAPPED) and \
            not isinstance(result["value"], dict):
        return result["value"]
    return result


def records_at(value, path):
    """The records at a dotted path ("items[]", "payment_methods.*", "" for the value itself): `[]` steps into a
    list, `*` into the values of a mapping; a record reached by a last `*` step also has the key it sits under as
    its field "*" (a copy of it with that field; a value that is no object is then only its key). A result wrapped
    for the model (`returned`) is read both as it is and as the value the tool returned."""
    parts = [p for p in path.split(".") if p]
    inner = returned(value)
    found = [value] + ([inner] if inner is not value else [])
    for at, part in enumerate(parts):
        name, into = (part[:-2], True) if part.endswith("[]") else (part, False)
        if name == "*" and at == len(parts) - 1 and not into:
            found = [dict(v, **{"*": k}) if isinstance(v, dict) else {"*": k}
                     for f in found if isinstance(f, dict) for k, v in f.items()]
        elif name == "*":
            found = [v for f in found if isinstance(f, dict) for v in f.values()]
        elif name:
            found = [v.get(name) for v in found if isinstance(v, dict)]
        if into:
            found = [item for v in found if isinstance(v, list) for item in v]
    return found


# ---- a source's arguments: each a path into the call's arguments ----
def arg_path(arg):
    """(argument, steps into its list, the field of each element) of a source's argument: "order_id" →
    ("order_id", False, ""); "item_ids[]" (each element) → ("item_ids", True, ""); "passengers[].name" (that field of
    each element) → ("passengers", True, "name"); "details.amount" → ("details", False, "amount")."""
    arg = str(arg)
    cut = min([i for i in (arg.find("["), arg.find(".")) if i >= 0], default=len(arg))
    name, rest = arg[:cut], arg[cut:]
    each = rest.startswith("[]")
    rest = rest[2:] if each else rest
    return name, each, rest.lstrip(".")


def base(arg):
    """The call's argument a source's argument path reads ("item_ids[]" → "item_ids")."""
    return arg_path(arg)[0]


def _field(value, rest):
    for part in [p for p in rest.split(".") if p]:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def rows(args, names):
    """The values a source's arguments (`names`, paths as arg_path reads them) give in a call's `args`: one row per
    element of the list they step into (every element is sourced on its own), the arguments that step into no
    list the same in each row; one row when none steps into a list, none for an empty list. None when the call
    lacks an argument. Arguments stepping into different lists are paired by position (a missing one is None)."""
    parsed = [arg_path(n) for n in names]
    if not isinstance(args, dict) or any(name not in args for name, _, _ in parsed):
        return None
    lists = list(dict.fromkeys(name for name, each, _ in parsed if each))
    if not lists:
        return [tuple(_field(args[name], rest) for name, _, rest in parsed)]
    items = {n: args[n] if isinstance(args[n], list) else [args[n]] for n in lists}
    count = max(len(v) for v in items.values())
    return [tuple(_field(items[name][i] if i < len(items[name]) else None, rest) if each else
                  _field(args[name], rest) for name, each, rest in parsed) for i in range(count)]


def elements(value):
    """A list argument's elements, another value as its one element."""
    return list(value) if isinstance(value, list) else [value]


JOINERS = "-./@_:+"       # one of these between two letters or digits joins them into one value: 2026-10-01, a.b@c.de


def typed(value, said):
    """Whether a value is one the user typed whole (`said`: the user's own messages, never a tool's result, the
    model's text or a loop message): a string, or a number written as digits, found in one message compared in
    NFKC lower case, whitespace inside the value or the text left out (an IBAN typed in groups of four, or not), and
    found whole: it neither starts nor ends inside a run of Latin letters and digits the user typed (`_cut`). A run
    goes on over one of JOINERS between two letters or digits (2026-10-01, bob@example.com, 1.50; not a full stop
    before a capital letter, a sentence's end: "www.our-company.com.They"), over a comma
    between two digits (1,50), and over one blank between two groups that both hold a digit (an IBAN, a card, a
    phone number written in groups: "DE89 3704 0044 0532 0130 00" is one value, and neither "DE89370400440532" nor
    "00440532013000" is typed). So 50 is not read in 150 or 1.50, an IBAN not in a longer one, a part of a grouped
    number not as a value; "50" is read in "pay 50 EUR" (a group without a digit ends the run). An empty value, a
    boolean, a list or an object never appears. A web address the user wrote without a scheme is typed with
    "http://" or "https://" put before it, and any address with one "/" put after it: "https://www.example.com/" is
    the user's "www.example.com" and "https://www.example.com", but not the user's "http://www.example.com" or
    "ftp://www.example.com" (another scheme)."""
    text = _typed_form(value)
    if text is None:
        return False
    if _found(text, said):
        return True
    scheme, bare = _schemeless(text)
    return bare is not None and _found(bare, said, scheme)


def _found(text, said, scheme=None):
    found = re.compile(r"\s*".join(map(re.escape, text)), re.IGNORECASE)
    return any(isinstance(t, str) and _whole(found, unicodedata.normalize("NFKC", t), scheme) for t in said)


SCHEME = re.compile(r"https?://(?=[a-z0-9])", re.IGNORECASE)


def _schemeless(text):
    """(its http(s) scheme, the rest without one trailing "/") of a web address's text; (None, None) for any other
    value."""
    match = SCHEME.match(text)
    if match is None:
        return None, None
    rest = text[match.end():]
    return match.group(0).lower(), (rest[:-1] if rest.endswith("/") else rest) or None


def _whole(found, text, scheme=None):
    """Whether `found` matches `text` somewhere without starting or ending inside a run the user typed (given the
    `scheme` a web address was found without: nor right after another scheme the user wrote)."""
    at = 0
    while (match := found.search(text, at)) is not None:
        before = text[:match.start()].lower()
        if not _cut(text, match.start(), 1) and not _cut(text, match.end(), -1) and \
                not (scheme and before.endswith("//") and not before.endswith(scheme)):
            return True
        at = match.start() + 1
    return False


def _cut(text, at, inward):
    """Whether the edge of a match at `at` (its start, `inward` 1; its end, -1) cuts a run of letters and digits:
    the value's letter or digit there goes on, outward, with a letter or a digit, directly or over one joiner."""
    inner = at if inward == 1 else at - 1                 # the value's character at this edge
    out = at - 1 if inward == 1 else at                   # the text's character just outside it
    beyond = out - inward                                 # the one after that, further out
    if not (0 <= inner < len(text)) or not _alnum(text[inner]) or not 0 <= out < len(text):
        return False
    if _alnum(text[out]):
        return True
    if not 0 <= beyond < len(text) or not _alnum(text[beyond]):
        return False
    if text[out] == "." and text[out + 1].isupper():
        return False                                      # a sentence's end: "www.our-company.com.They sent..."
    if text[out] in JOINERS or (text[out] == "," and text[inner].isdigit() and text[beyond].isdigit()):
        return True
    return text[out].isspace() and _has_digit(text, inner, inward) and _has_digit(text, beyond, -inward)


def _alnum(char):
    return "0" <= char <= "9" or "a" <= char.lower() <= "z"


def _has_digit(text, at, inward):
    """Whether the group of letters and digits at `at`, read inward (1: rightward, -1: leftward), holds a digit."""
    while 0 <= at < len(text) and _alnum(text[at]):
        if text[at].isdigit():
            return True
        at += inward
    return False


def _typed_form(value):
    """The text a value is looked for as (NFKC, lower case, no whitespace), or None when it cannot be typed."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        value = int(value) if value.is_integer() else value
    if not isinstance(value, (str, int, float)):
        return None
    text = "".join(words.plain(value).split())
    return text or None


def ids_in(value, names, depth=0):
    """Every id a result gives (a string under `id` or `*_id`) into `names`, with the `name` beside it, if any."""
    if depth > 4:
        return
    if isinstance(value, list):
        for item in value[:200]:
            ids_in(item, names, depth + 1)
    elif isinstance(value, dict):
        name = value.get("name") if isinstance(value.get("name"), str) else None
        for key, item in value.items():
            if isinstance(item, str) and (key == "id" or key.endswith("_id")) and item.strip():
                names[item] = name or names.get(item)
            elif isinstance(item, (dict, list)):
                ids_in(item, names, depth + 1)


def same(a, b, near=False):
    """Whether an argument's value equals a record's field (`near`: to 4 decimals)."""
    if not near:
        return a == b and a is not None
    try:
        return round(float(a), 4) == round(float(b), 4)
    except (TypeError, ValueError, OverflowError):
        return False


def effect(decl):
    return [(e[0], e[1]) for e in decl.get("effect") or () if isinstance(e, (list, tuple)) and len(e) == 2]


def lists(decl):
    """The effect arguments whose schema is an array: each element is one effect value (`lists`, as recorded)."""
    return {a for a in decl.get("lists") or () if isinstance(a, str)}


def _source(s):
    return isinstance(s, dict) and isinstance(s.get("tool"), str) and isinstance(s.get("args"), (list, tuple)) and \
        len(s["args"]) == len(s.get("fields") or ())


def sources(decl):
    """A declaration's sources as recorded: {args, tool, fields, path, near}, and, for a source of alternatives
    (calls.Source.any), `any`: the alternatives, of which one must hold."""
    return [s for s in decl.get("sources") or () if _source(s)]


def options(source):
    """The alternatives of a source, any one of which must hold (itself, for a source without `any`). A recorded
    `any` none of whose entries reads as a source leaves the source itself (its first alternative): a malformed
    declaration never holds more easily."""
    found = [a for a in source.get("any") or () if _source(a)] if isinstance(source.get("any"), list) else []
    return found or [source]


def source_tools(source):
    """The tools a source's values may come from (any one of them, for alternatives)."""
    return list(dict.fromkeys(o["tool"] for o in options(source)))


def holds(row, source, records):
    """Whether one record at the source's path in its tool's successful results has its fields equal to the row's
    values (`near`: to 4 decimals); the field "*" of a record reached by a `*` step is its key. For the user's words
    (USER, whose records are the user's own messages): whether each value appears in them (`typed`)."""
    found = records(source["tool"], source.get("path") or "")
    said = [r for r in found if isinstance(r, str)]
    if source["tool"] == USER and (said or not found):
        return all(typed(v, said) for v in row)
    for record in found:
        if isinstance(record, dict) and all(same(v, record.get(f), source.get("near")) for v, f in
                                            zip(row, source["fields"])):
            return True
    return False


def unsourced(args, source, records):
    """The rows of a call's arguments no alternative of a source gives, each (its index among the rows, the row of
    the first alternative): every element of a list argument is sourced on its own, any one alternative may give
    it. [] when each row holds, or when the call lacks an argument the source names (nothing to source)."""
    tried = [(o, rows(args, o["args"])) for o in options(source)]
    if any(found is None for _, found in tried):
        return []
    first = tried[0][1]
    return [(i, first[i]) for i in range(len(first))
            if not any(i < len(found) and holds(found[i], o, records) for o, found in tried)]


def stated_args(decl):
    """The arguments a blocked write's proposal states: its effect and every sourced argument."""
    return list(dict.fromkeys([a for a, _ in effect(decl)] + [base(a) for s in sources(decl) for o in options(s)
                                                               for a in o["args"]]))


def choice_values(decl, arg):
    """{value: (other names)} a choice effect argument may take."""
    values = (decl.get("choices") or {}).get(arg)
    return {v: tuple(n for n in names if isinstance(n, str)) for v, names in values.items()} \
        if isinstance(values, dict) else {}


def id_values(decl, arg, records, fallback=None):
    """{value: name beside it or None} an id effect argument may take: what its sources' fields hold in the
    records the reads gave, every alternative's (a list argument's: what each element may be, "item_ids[]"), a
    record's key where the field is "*" (`fallback`: {id: name} of any `id`/`*_id` field, for an argument no
    source names)."""
    found: dict[str | int, str | None] = {}
    sourced = False
    for option in [o for s in sources(decl) for o in options(s)]:
        for name, field in zip(option["args"], option["fields"]):
            if name not in (arg, arg + "[]"):
                continue
            sourced = True
            for record in records(option["tool"], option.get("path") or ""):
                value = record.get(field) if isinstance(record, dict) else None
                if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
                    label = record.get("name") if isinstance(record.get("name"), str) else None
                    found[value] = label or found.get(value)
    return found if sourced else dict(fallback or {})


def values_of(decl, arg, how, records, fallback=None, done=()):
    """{value: (names a text may use for it)} of an id or choice effect argument; an id in `done` (the ids the
    run's writes already used) is what a text reports, never what it proposes, and is left out."""
    if how == "choice":
        return {v: (v, *names) for v, names in choice_values(decl, arg).items()}
    return {v: (str(v), name) if name else (str(v),) for v, name in id_values(decl, arg, records, fallback).items()
            if str(v) not in done}


def says(plain, how, value, names=(), units=()):
    """Whether a plain text (words.plain) states this value of an effect argument (one element, for a list)."""
    if isinstance(value, (dict, list)):
        return _leaves_said(plain, value)
    if how in ("id", "choice"):
        return isinstance(value, (str, int)) and words.names_in(plain, *(names or (str(value),)))
    if how == "date" and isinstance(value, str):
        return value in words.dates(plain, value[:4])
    return how == "count" and value in words.counts(plain, units)


def _leaves_said(plain, value):
    """Whether a text names every value inside an object (or a list): each string and number in it, by itself."""
    leaves = list(_leaves(value))
    return bool(leaves) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) and
                                (words.names_in(plain, str(v)) or isinstance(v, str) and v in words.dates(plain, v[:4]))
                                for v in leaves)


def _leaves(value, depth=0):
    if depth > 20:
        yield None
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item, depth + 1)
    else:
        yield value


def _names(values, value):
    """The names a text may use for one value of an argument ({value: names}), or the value itself."""
    try:
        return values.get(value) or (str(value),)
    except TypeError:                          # an object or a list is no key: it is named by what it holds
        return ()


def states(plain, decl, arg, how, value, records, fallback=None, done=(), units=()):
    """Whether a plain text states this value of a write's effect argument: each element of a list."""
    values = values_of(decl, arg, how, records, fallback, done) if how in ("id", "choice") else {}
    items = elements(value) if isinstance(value, list) else [value]
    return bool(items) and all(says(plain, how, v, _names(values, v), units) for v in items)


def named(plain, values):
    """The values (of {value: names}) a plain text names."""
    return {v for v, names in values.items() if words.names_in(plain, *names)}



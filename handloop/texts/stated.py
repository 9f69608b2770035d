"""What a proposal states and what it determines: the one reading of a write against the proposal the user
confirmed, shared by the guards (through memory.py) and the offline judge, so that both read a declaration the
same way.

A write's declaration is read as the plain dict a run records (calls.declared_tool): `effect` [(argument, how)],
`sources` [{args, tool, fields, path, near}], `choices` {argument: {value: [other names]}}, `units` {argument:
[words after a count]}.
- A `choice` effect takes its values from the argument schema's enum, with the aliases as extra names (as
  recorded in `choices`).
- An `id` effect is any value the run's reads produced for that argument: the fields its `sources` name, in the
  records of their tools' successful results, whatever the field is called; an id argument no source names takes
  the ids the reads gave (`id` or `*_id` fields, `fallback`).
- A proposal in words states a value of an id or choice effect when it names exactly one of that argument's
  values (other identifiers may be named beside it; an id a write of the run already used is reported, not
  proposed, and does not count: `done`); a date or count when it or the user's own messages state it.
- What the proposal stated fixes the whole write (`unbound`): an argument that is no effect but is sourced from
  the same tool (and path) as an effect argument must come from the record that effect's value came from; one
  sourced elsewhere must be stated by the proposal itself. An argument neither an effect nor sourced is free of
  the records, but not hidden: its value must be stated by the proposal or the user (`unstated_free`), else the
  write is shown to the user exactly.

Invariants: imports no project module but words.py (a leaf); pure functions of plain data; `records(tool, path)`
is the caller's: the records of that tool's successful results before the write, at that path.
"""
from . import words


def records_at(value, path):
    """The values at a dotted path ("items[]", "" for the value itself); `[]` steps into a list."""
    found = [value]
    for part in [p for p in path.split(".") if p]:
        name, into = (part[:-2], True) if part.endswith("[]") else (part, False)
        if name:
            found = [v.get(name) for v in found if isinstance(v, dict)]
        if into:
            found = [item for v in found if isinstance(v, list) for item in v]
    return found


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


def sources(decl):
    return [s for s in decl.get("sources") or () if isinstance(s, dict) and isinstance(s.get("tool"), str)
            and isinstance(s.get("args"), (list, tuple)) and len(s["args"]) == len(s.get("fields") or ())]


def stated_args(decl):
    """The arguments a blocked write's proposal states: its effect and every sourced argument."""
    return list(dict.fromkeys([a for a, _ in effect(decl)] + [a for s in sources(decl) for a in s["args"]]))


def choice_values(decl, arg):
    """{value: (other names)} a choice effect argument may take."""
    values = (decl.get("choices") or {}).get(arg)
    return {v: tuple(n for n in names if isinstance(n, str)) for v, names in values.items()} \
        if isinstance(values, dict) else {}


def id_values(decl, arg, records, fallback=None):
    """{value: name beside it or None} an id effect argument may take: what its sources' fields hold in the
    records the reads gave (`fallback`: {id: name} of any `id`/`*_id` field, for an argument no source names)."""
    found: dict[str | int, str | None] = {}
    sourced = False
    for source in sources(decl):
        if arg not in source["args"]:
            continue
        sourced, field = True, source["fields"][list(source["args"]).index(arg)]
        for record in records(source["tool"], source.get("path") or ""):
            if isinstance(record, dict) and isinstance(record.get(field), (str, int)) and not \
                    isinstance(record.get(field), bool) and str(record[field]).strip():
                name = record.get("name") if isinstance(record.get("name"), str) else None
                found[record[field]] = name or found.get(record[field])
    return found if sourced else dict(fallback or {})


def values_of(decl, arg, how, records, fallback=None, done=()):
    """{value: (names a text may use for it)} of an id or choice effect argument; an id in `done` (the ids the
    run's writes already used) is what a text reports, never what it proposes, and is left out."""
    if how == "choice":
        return {v: (v, *names) for v, names in choice_values(decl, arg).items()}
    return {v: (str(v), name) if name else (str(v),) for v, name in id_values(decl, arg, records, fallback).items()
            if str(v) not in done}


def says(plain, how, value, names=(), units=()):
    """Whether a plain text (words.plain) states this value of an effect argument."""
    if how in ("id", "choice"):
        return isinstance(value, (str, int)) and words.names_in(plain, *(names or (str(value),)))
    if how == "date" and isinstance(value, str):
        return value in words.dates(plain, value[:4])
    return how == "count" and value in words.counts(plain, units)


def named(plain, values):
    """The values (of {value: names}) a plain text names."""
    return {v for v, names in values.items() if words.names_in(plain, *names)}


def offers(plain, decl, records, fallback=None, done=()):
    """Whether a text states a write of this declaration: exactly one value of each id effect (among those no
    write used yet, `done`) and of each choice effect whose values are known."""
    for arg, how in effect(decl):
        if how not in ("id", "choice"):
            continue
        values = values_of(decl, arg, how, records, fallback, done)
        if how == "choice" and not values:
            continue
        if len(named(plain, values)) != 1:
            return False
    return True


def unstated(args, decl, offer, said, records, fallback=None, done=()):
    """The effect arguments of a write that a proposal in words (`offer`, plain) did not state: an id or
    choice must be the one value of its argument the offer names; a date or count may also come from the
    user's own messages (`said`, plain). Empty when the write is what the user was shown."""
    missing = []
    for arg, how in effect(decl):
        value = args.get(arg)
        if how in ("id", "choice"):
            values = values_of(decl, arg, how, records, fallback, done)
            names = values.get(value) or (str(value),)
            shown = {v for v in values if v != value and words.names_in(offer, *values[v])}
            ok = says(offer, how, value, names) and not shown
        else:
            units = tuple((decl.get("units") or {}).get(arg) or ())
            ok = any(says(text, how, value, units=units) for text in [offer, *said])
        if not ok:
            missing.append(arg)
    return missing


def unbound(args, decl, records, stated=None):
    """The arguments of a write that what the proposal stated does not determine: a sourced argument that is
    no effect must come from the record an effect argument's value came from (a source of the same tool and
    path holding an effect argument), else it must be stated (`stated(arg, value)`: whether the proposal
    says it; default: never). Arguments neither effects nor sourced are free."""
    effects = {a for a, _ in effect(decl)}
    missing = []
    for source in sources(decl):
        loose = [a for a in source["args"] if a not in effects and a in args]
        if not loose or any(a in effects for a in source["args"]):     # an effect in it: provenance binds the record
            continue
        anchors = [s for s in sources(decl) if s["tool"] == source["tool"] and (s.get("path") or "") ==
                   (source.get("path") or "") and any(a in effects and a in args for a in s["args"])]
        if anchors and all(_bound(args, source, anchor, effects, records) for anchor in anchors):
            continue
        missing += [a for a in loose if a not in missing and not (not anchors and stated and stated(a, args[a]))]
    return missing


def unstated_free(args, decl, offer, said):
    """The free arguments of a write (neither an effect nor sourced) whose values a proposal in words (`offer`,
    plain) and the user's own messages (`said`, plain) do not state: a string or a number must appear in one of
    them (a message body, a memo, an amount); a value of another kind (true, a list, an object) is never stated
    in words. Empty values (null, "") are nothing to state."""
    bound = {a for a, _ in effect(decl)} | {a for s in sources(decl) for a in s["args"]}
    missing = []
    for arg, value in args.items():
        if arg in bound or value is None or value == "":
            continue
        text = str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
        if text is None or not any(words.names_in(t, text) for t in [offer, *said]):
            missing.append(arg)
    return missing


def _bound(args, source, anchor, effects, records):
    """Whether one record of the source's tool holds both the anchor's effect values and the source's values."""
    keys = [(a, f) for a, f in zip(anchor["args"], anchor["fields"]) if a in effects and a in args]
    for record in records(source["tool"], source.get("path") or ""):
        if not isinstance(record, dict):
            continue
        if all(same(args[a], record.get(f), anchor.get("near")) for a, f in keys) and \
                all(same(args[a], record.get(f), source.get("near")) for a, f in zip(source["args"], source["fields"])
                    if a in args):
            return True
    return False

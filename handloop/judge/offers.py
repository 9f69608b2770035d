"""What another system's proposal in words left unsaid: the judge's own reading, for transcripts that keep no
record of held calls (a run of this project is judged on its records, judge/confirm.py `_walk_held`).

A write the user confirmed in words must be what the words determined: a sourced argument that is no effect comes
from the record an effect's value came from, or is stated (`unbound`); a free argument (neither an effect nor
sourced) is stated by the words or by the user (`unstated_free`).

Invariants: imports no project module but the leaves texts/words.py and texts/stated.py; pure functions of plain
data; it judges, it never decides what runs.
"""
from ..texts import words
from ..texts.stated import USER, base, effect, options, rows, same, sources


def unbound(args, decl, records, stated=None):
    """The arguments of a write that what the proposal stated does not determine: a sourced argument that is
    no effect must come from the record an effect argument's value came from (a source of the same tool and
    path holding an effect argument; for a list, each element from a record holding one of the effect's), else
    it must be stated (`stated(arg, value)`: whether the proposal says it; default: never); one sourced from the
    user's words (USER) must be stated too. Arguments neither effects nor sourced are free. A source of alternatives
    is bound when one of them is."""
    effects = {a for a, _ in effect(decl)}
    every = [o for s in sources(decl) for o in options(s)]
    missing = []
    for source in sources(decl):
        loose = list(dict.fromkeys(base(a) for a in source["args"] if base(a) not in effects and base(a) in args))
        if not loose or any(base(a) in effects for a in source["args"]):   # an effect in it: provenance binds
            continue
        bound, free = False, False
        for option in options(source):
            if option["tool"] == USER:             # the user's words hold no record to bind to: stated, or not
                free = True
                continue
            anchors = [s for s in every if s["tool"] == option["tool"] and (s.get("path") or "") ==
                       (option.get("path") or "") and any(base(a) in effects and base(a) in args for a in s["args"])]
            if anchors and all(_bound(args, option, anchor, effects, records) for anchor in anchors):
                bound = True
                break
            free |= not anchors
        if bound:
            continue
        missing += [a for a in loose if a not in missing and not (free and stated and stated(a, args[a]))]
    return missing


def unstated_free(args, decl, offer, said):
    """The free arguments of a write (neither an effect nor sourced) whose values a proposal in words (`offer`,
    plain) and the user's own messages (`said`, plain) do not state: a string or a number must appear in one of
    them (a message body, a memo, an amount); a value of another kind (true, a list, an object) is never stated
    in words. Empty values (null, "") are nothing to state."""
    bound = {a for a, _ in effect(decl)} | {base(a) for s in sources(decl) for o in options(s) for a in o["args"]}
    missing = []
    for arg, value in args.items():
        if arg in bound or value is None or value == "":
            continue
        text = str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
        if text is None or not any(words.names_in(t, text) for t in [offer, *said]):
            missing.append(arg)
    return missing


def _bound(args, source, anchor, effects, records):
    """Whether each row of the source's values sits in one record of its tool with a row of the anchor's effect
    values (one record holds both, for arguments that step into no list)."""
    keys = [(a, f) for a, f in zip(anchor["args"], anchor["fields"]) if base(a) in effects and base(a) in args]
    present = [(a, f) for a, f in zip(source["args"], source["fields"]) if base(a) in args]
    anchored, mine = rows(args, [a for a, _ in keys]) or [], rows(args, [a for a, _ in present]) or []
    fields, own = [f for _, f in keys], [f for _, f in present]
    found = [r for r in records(source["tool"], source.get("path") or "") if isinstance(r, dict)]
    return all(any(all(same(v, r.get(f), source.get("near")) for v, f in zip(row, own)) and
                   any(all(same(v, r.get(f), anchor.get("near")) for v, f in zip(key, fields)) for key in anchored)
                   for r in found) for row in mine)

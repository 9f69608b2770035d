"""What every rule of the offline judge shares in saying its verdict: how the calls it judged become one verdict
(fail on the first fault, pending on the first doubt with its cause, pass, pending when nothing happened) and how a
reason names tools and arguments (the Xi'an agent's in words, any other agent's by name).

Invariants: imports no project module but the judge's catalogue judge/texts.py; judges no call itself (the rules
in checks.py, judge/weather.py and judge/confirm.py do); a call whose outcome is unknown only ever raises a doubt,
never a fault; the words are wording only: what is judged is declared.
"""
from .texts import Joined, Said

# the report's words for the Xi'an agent's tools and arguments (wording only: what is judged is declared)
WORDS = ("get_weather", "search_hotels", "search_location", "book_hotel")     # said as check_texts "word.<tool>"
ARG_WORDS = ("hotel_id", "room_type", "latitude,longitude")                    # said as "arg.<arguments>"


def verdict_of(faults, doubts, passes, nothing):
    """Fail on the first fault; pending on the first doubt (cause, reason); pass; pending when nothing happened."""
    if faults:
        return "fail", _first(faults), None
    if doubts:
        return "pending", _first([reason for _, reason in doubts]), doubts[0][0]
    if passes:
        return "pass", passes, None
    return "pending", nothing, "not_reached"


def _first(faults):
    """The first fault, with how many there are in all."""
    return Said("reason.many", first=faults[0], count=len(faults)) if len(faults) > 1 else faults[0]


def judge_calls(calls, judge):
    """Run `judge(call) -> (kind, reason)` over calls: (faults, doubts, fine)."""
    return sort_judged([(call,) + judge(call) for call in calls])


def sort_judged(judged):
    """(call, kind, reason) triples as (faults, doubts, fine); an unanswered call only ever raises a doubt."""
    faults, doubts, fine = [], [], []
    for call, kind, reason in judged:
        if kind == "fail" and call.status == "unanswered":
            doubts.append(("unknown_outcome", Said("reason.unanswered", reason=reason)))
        elif kind == "fail":
            faults.append(reason)
        elif kind in ("ambiguous", "not_reached"):
            doubts.append((kind, reason))
        elif call.status == "ok":
            fine.append(reason)
    return faults, doubts, fine


def said_steps(names):
    """Tools done, as the report says them: 查天气、搜酒店, or 调用 list_rooms、get_calendar."""
    return _words(names) if all(n in WORDS for n in names) else Said("steps.tools", tools=Joined(names))


def said_tools(names, bare=False):
    """What calls of these tools are, as the report says them: 预订, or ' book_room 调用' ('book_room 调用' when
    `bare`)."""
    return _words(names) if all(n in WORDS for n in names) else \
        Said("the.tools_bare" if bare else "the.tools", tools=Joined(names))


def _words(names):
    return Joined(Said(f"word.{n}") for n in names)


def said_args(args):
    """Arguments as the report says them after 的: 坐标, or ' latitude、longitude ' (spaced as ASCII is)."""
    key = ",".join(args)
    return Said(f"arg.{key}") if key in ARG_WORDS else Said("what.args", args=Joined(args))

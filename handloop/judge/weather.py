"""The Xi'an agent's own check, room_type_follows_weather (checks.AGENT_CHECKS names it): each booking's room type
follows the weather of its check-in date, rain → Suite, otherwise Standard.

- Rain: a weather condition that mentions rain (rain, drizzle, shower, thunder, 雨) and does not deny it (no rain,
  无雨, 不下雨); WMO weather codes count too. The weather that counts for a booking is the last successful forecast
  for its check-in date before it; with none the check is pending (weather looked up after the booking does not
  count).

The same rule decides before a booking is proposed: the Xi'an agent declares it (tools.py, a calls.Rule of the same
name) with `weather_on` and `room_for` below, over the run's facts (texts/rules.py), so the guard and this check read
the weather alike; the check stays the judge's own, so that any file judged as the Xi'an agent (an audit file
without the agent's code, another system's transcript) is judged by it.

Invariants: imports no project module but the judge's own below it (judge/verdicts.py, judge/readings.py, its catalogue
judge/texts.py); reads a Transcript (judge/transcripts.py), never a file; returns (verdict, reason as a Said, cause) as
every rule does. Each forecast is read once (what it says of each day it names), so the check is linear in the
conversation, up to a log factor.
"""
import bisect
import re

from .texts import Joined, Said
from .verdicts import judge_calls, verdict_of
from .readings import dicts_in, iso_day, plain_result

RAIN = re.compile(r"rain|drizzle|shower|thunder|storm|雨", re.I)
NO_RAIN = re.compile(r"no rain|not rain|rain[- ]free|without rain|无雨|不下雨|没有雨|不会下雨|没雨", re.I)
RAIN_CODES = set(range(51, 68)) | set(range(80, 83)) | set(range(95, 100))
CONDITION_KEYS = ("condition", "conditions", "weather", "forecast", "summary", "description", "text", "天气")


def room_type(t):
    bookings = t.ok("book_hotel") + t.unknown("book_hotel")
    forecasts = _forecasts(t)
    faults, doubts, fine = judge_calls(bookings, lambda c: _room(forecasts, c))
    return verdict_of(faults, doubts, Joined(fine, "sep.clauses"), Said("room.nothing"))


def _forecasts(t):
    """{day: ([positions], [(forecast call, condition)])}: what each successful forecast says of each day, in order."""
    days: dict[str, tuple[list, list]] = {}
    for call in t.ok("get_weather"):
        for day, condition in _conditions(call).items():
            positions, said = days.setdefault(day, ([], []))
            positions.append(call.pos)
            said.append((call, condition))
    return days


def _room(forecasts, call):
    """(kind, reason) for one booking's room type against the weather of its check-in date."""
    if call.args is None:
        return "fail", Said("room.unparseable", call=call.label)
    day, room = iso_day(call.arg("check_in")), call.arg("room_type")
    positions, said = forecasts.get(day, ((), ()))
    earlier = bisect.bisect_left(positions, call.pos)            # the forecasts before the booking's turn
    if not earlier:
        late = Said("room.late", weather=said[0][0].label) if said else ""
        return "not_reached", Said("room.no_weather", call=call.label, room=room, day=day, late=late)
    weather, condition = said[earlier - 1]
    if condition == "":
        return "ambiguous", Said("room.unclear", weather=weather.label, day=day, call=call.label, room=room)
    wanted = room_for(condition)
    if str(room).strip().lower() != wanted.lower():
        return "fail", Said("room.wrong", call=call.label, room=room, day=day, condition=condition,
                            weather=weather.label, wanted=wanted)
    return "ok", Said("room.ok", call=call.label, room=room, day=day, condition=condition)


def room_for(condition):
    """The room the rule asks for under a weather condition: Suite when it rains, otherwise Standard."""
    return "Suite" if RAIN.search(condition) and not NO_RAIN.search(condition) else "Standard"


def weather_on(day, forecasts):
    """(index, condition) of the forecast that counts for a booking checking in on `day`: the last of `forecasts`
    ([(arguments, result)] of successful get_weather calls before it, oldest first) that speaks of that day;
    condition '' when it cannot be read; None when none speaks of it."""
    for at in range(len(forecasts) - 1, -1, -1):
        said = conditions_of(*forecasts[at])
        if day in said:
            return at, said[day]
    return None


def _conditions(call):
    return conditions_of(call.args, call.result)


def conditions_of(args, result):
    """What a forecast call (its arguments, its result) says of each day it speaks of: {day: its condition text,
    or '' when that cannot be read}. A result without a date is about the date the call asked for; a dated record
    inside it about its date; the result's own date (its top record's) about that day."""
    asked = iso_day(args.get("date")) if isinstance(args, dict) else None
    text = plain_result(result)
    if text is not None:
        return {day: text.strip()[:120] for day in (asked, iso_day(text)) if day is not None}
    nodes = dicts_in(result)
    if not nodes:
        return {}
    top = nodes[0]
    applies = _date_of(top) if _date_of(top) is not None else asked      # the day the top record speaks of
    dated: dict[str, list] = {}
    for node in nodes[1:]:
        day = _date_of(node)
        if day is not None:
            dated.setdefault(day, []).append(node)
    if not dated:
        return {applies: _said(nodes)} if applies is not None else {}
    said = {day: _said(found + ([top] if day == applies else [])) for day, found in dated.items()}
    if applies is not None and applies not in said:
        said[applies] = _said([top])
    return said


def _said(candidates):
    """The condition the first record that has one gives ('' when none does)."""
    for node in candidates:
        for key in CONDITION_KEYS:
            if isinstance(node.get(key), str) and node[key].strip():
                return node[key].strip()[:80]
        code = node.get("weather_code", node.get("weathercode"))
        if isinstance(code, int) and not isinstance(code, bool):
            return f"rain (WMO {code})" if code in RAIN_CODES else f"WMO {code}"
    return ""


def _date_of(node):
    value = next((node[k] for k in ("date", "day", "time") if k in node), None)
    return None if value is None else iso_day(value)[:10]

"""The one workload every system in the benchmark runs, and what they share to run it.

A run starts from the same conversation for everybody (PREFACE_REPLIES played through our
own loop: plan, weather, hotels, then the booking called and held by the unconfirmed-write
guard as the proposal the user sees, the run suspended; then the user's reply CHECK_AGAIN, which
is not a confirmation and so declines the held call) and then takes the three timed turns:

  turn 1  get_weather + search_hotels, in one reply (parallel)
  turn 2  book_hotel
  turn 3  the final answer

For our loop the booking of turn 2 is a held call again: the run suspends, the user's 「确认」
approves it, the loop makes that exact call itself (no model request) and then asks the model
for its answer. So our timed run holds the suspension, the confirmation and the loop's own call
too; the peers (no approval flow in this workload, as before) book at turn 2 directly.

The model is scripted and answers instantly (no HTTP): it looks at how many tool results came
back since the last user message and sends the matching reply. Every system calls the very
same tool functions (tools.py's pure functions, and tools.book_hotel over an in-memory store
so that SQLite commits do not drown the loop's own cost), and counts every call it made, so
each run can be checked: the tools really ran.
"""
import collections
import hashlib
import json
import os
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from handloop import plan, tools    # noqa: E402

GOAL = tools.GOAL
SYSTEM = tools.INSTRUCTIONS
PLAN = [{"title": "查天气", "tool": "get_weather"}, {"title": "搜酒店", "tool": "search_hotels"},
        {"title": "预订", "tool": "book_hotel", "after": [1, 2]}]
WEATHER = {"city": "西安", "date": "2026-10-01"}
SEARCH = {"city": "西安", "check_in": "2026-10-01", "nights": 2}
# the preface looked with the English city name; the timed turn 1 checks again before the
# write (with the same arguments the A-B-A-B spin guard would rightly block the re-check)
WEATHER_FIRST = {"city": "Xi'an", "date": "2026-10-01"}
SEARCH_FIRST = {"city": "Xi'an", "check_in": "2026-10-01", "nights": 2}
BOOK = {"hotel_id": "XA-001", "room_type": "Suite", "check_in": "2026-10-01", "nights": 2}
ANSWER = "已预订：古城墙酒店（XA-001）Suite，2026-10-01 入住 2 晚，共 ¥1760。当天有雨，所以订了 Suite。"
CHECK_AGAIN = "预订前再查一次天气和房价。"   # the user's reply to the preface's held booking: not a confirmation
EXPECTED = {"get_weather": 1, "search_hotels": 1, "book_hotel": 1}   # per timed run
TURNS = 3


def call(call_id, name, args):
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}


def calls_message(*calls):
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


# ---- the scripted model (chat format; each system wraps it in its own model type) ----
def timed_reply(results_since_user):
    """The scripted reply for the timed turns, from the tool results since the user's last message (CHECK_AGAIN;
    for our loop, after 「确认」, the one result of the booking the loop made)."""
    if results_since_user == 0:
        return calls_message(call("t1", "get_weather", WEATHER), call("t2", "search_hotels", SEARCH))
    if results_since_user == 2:
        return calls_message(call("t3", "book_hotel", BOOK))
    return {"role": "assistant", "content": ANSWER}


PREFACE_REPLIES = (
    lambda: calls_message(call("p1", "set_plan", {"steps": PLAN}), call("p2", "get_weather", WEATHER_FIRST),
                          call("p3", "search_hotels", SEARCH_FIRST)),
    lambda: calls_message(call("p4", "book_hotel", BOOK)),      # held: the proposal; the run suspends awaiting confirmation
)


# ---- the tools every system calls ----
class DictStore:
    """The booking store's interface (tools.BookingStore) in memory: one row per key."""

    def __init__(self):
        self.rows, self.lock = {}, threading.Lock()

    def book(self, key, run_id, booking):
        with self.lock:
            inserted = key not in self.rows
            if inserted:
                self.rows[key] = dict(booking, run_id=run_id)
            return dict(self.rows[key], replayed=not inserted)

    def find(self, key):
        return self.rows.get(key)


class Counts:
    """How many times each tool really ran, across threads."""

    def __init__(self):
        self.counts, self.lock = collections.Counter(), threading.Lock()

    def hit(self, name):
        with self.lock:
            self.counts[name] += 1

    def snapshot(self):
        with self.lock:
            return dict(self.counts)

    def expect(self, before, runs=1, expected=EXPECTED, what=""):
        """Raise unless exactly `runs` timed runs' worth of tool calls happened since `before`."""
        now = self.snapshot()
        got = {name: now.get(name, 0) - before.get(name, 0) for name in set(now) | set(before)}
        want = {name: n * runs for name, n in expected.items()}
        if {k: v for k, v in got.items() if v} != want:
            raise RuntimeError(f"{what}: tools ran {got}, expected {want}")


COUNTS = Counts()
STORE = DictStore()
AGENT = tools.xian_agent(STORE)     # the Xi'an agent over that store: what every run of ours is given
SLEEP = {"seconds": 0.0}      # the concurrency benchmark makes every business tool sleep this long


def _pause():
    if SLEEP["seconds"]:
        time.sleep(SLEEP["seconds"])


def get_weather(city, date):
    COUNTS.hit("get_weather")
    _pause()
    return tools.get_weather(city, date)


def search_hotels(city, check_in, nights=1):
    COUNTS.hit("search_hotels")
    _pause()
    return tools.search_hotels(city, check_in, nights)


def book_hotel(hotel_id, room_type, check_in, nights):
    COUNTS.hit("book_hotel")
    _pause()
    args = {"hotel_id": hotel_id, "room_type": room_type, "check_in": check_in, "nights": nights}
    key = hashlib.sha256(json.dumps(args, sort_keys=True).encode()).hexdigest()
    return tools.book_hotel(STORE, key, "peer", **args)


def set_plan(steps):
    COUNTS.hit("set_plan")
    return plan.set_plan(steps, set(tools.SCHEMAS))       # what our set_plan returns (handloop/plan.py)


def mark_step(index, status, note=""):
    COUNTS.hit("mark_step")
    return {"index": index, "status": status, "note": note}


FUNCTIONS = {"set_plan": set_plan, "mark_step": mark_step, "get_weather": get_weather,
             "search_hotels": search_hotels, "book_hotel": book_hotel}


# ---- the concurrency workload: one turn, three read tools each sleeping 0.2 s ----
CONCURRENT_SECONDS = 0.2
CONCURRENT_EXPECTED = {"get_weather": 2, "search_hotels": 1}


def concurrent_reply(results_since_user):
    if results_since_user == 0:
        return calls_message(call("s1", "get_weather", WEATHER),
                             call("s2", "get_weather", {"city": "西安", "date": "2026-10-02"}),
                             call("s3", "search_hotels", SEARCH))
    return {"role": "assistant", "content": ANSWER}


def results_since_user(messages, role_of=lambda m: m["role"]):
    """Tool results after the last user message (a loop's nudge, a user message named "loop", is not
    one): the scripted model's only input."""
    n = 0
    for message in reversed(messages):
        role = role_of(message)
        if role == "user" and not (isinstance(message, dict) and message.get("name") == "loop"):
            break
        if role == "tool":
            n += 1
    return n

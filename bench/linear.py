"""How the trace page and the judge grow with the record: each shape timed at two sizes in one run, the ratio of
their times beside the ratio of their sizes (4.0 for 1,000 against 4,000 turns: linear; 16 would be quadratic).

Shapes (each built in memory, so only what is measured is timed):
- page, ids differ: `--trace`'s work (trace/timeline.build + trace/view.render) on an audit snapshot of N turns
  whose trace records name other call ids than its messages (issue 36, finding 6: 11.6x from 1,000 to 4,000);
- page: the same with the ids the messages have;
- check: `--check`'s work (cli/check.check_file, reading the file included) on a bare array of N calls, the
  Xi'an cycle repeated (weather, search, a booking blocked as a proposal, the user's confirmation, the booking;
  finding 6: 11.9x);
- check, proposals in words (only with --words, at a quarter of the sizes: it is slow): an audit file of N calls
  whose every booking follows a proposal in words; what the rule of confirmation reads there (each proposal
  against every id the reads gave before it) still grows with both.

    python -m bench.linear [--sizes 1000,4000] [--reps 3] [--words]

Each figure is the best of `reps` runs. Nothing here is asserted by the tests (tests/test_bench.py runs it tiny).
"""
import argparse
import json
import os
import tempfile
import time

from handloop import config, texts, tools
from handloop.cli import check
from handloop.trace import timeline, view

PLAN = {"steps": [{"title": "weather", "tool": "get_weather"}, {"title": "hotels", "tool": "search_hotels"},
                  {"title": "book", "tool": "book_hotel", "after": [1, 2]}]}
KEPT = {"plan": [{"index": 1, "title": "weather", "tool": "get_weather", "after": []},
                 {"index": 2, "title": "hotels", "tool": "search_hotels", "after": []},
                 {"index": 3, "title": "book", "tool": "book_hotel", "after": [1, 2]}]}
GOAL = "帮我订 2026-10-01 西安的酒店，住两晚。"


def page_snapshot(turns, other_ids=True):
    """An audit snapshot of `turns` turns, one weather call each; its trace names other ids when `other_ids`."""
    messages, trace = [{"role": "system", "content": ""}, {"role": "user", "content": GOAL}], []
    for i in range(turns):
        cid = f"c{i}"
        messages += [_calls(cid, "get_weather", {"city": "西安", "date": "2026-10-01"}),
                     {"role": "tool", "tool_call_id": cid, "content": '{"condition":"rain"}'}]
        trace.append({"turn": i + 1, "model_seconds": 0.01, "tokens": 10,
                      "tools": [{"id": ("x" if other_ids else "") + cid, "name": "get_weather", "status": "ok",
                                 "seconds": 0.001}]})
    return {"version": config.AUDIT_VERSION, "run_id": "bench", "status": "done", "reason": "final_answer", "turn": turns,
            "mode": "local", "messages": messages, "memory": {}, "tools": [], "trace": trace,
            "agent": {"name": "xian-hotel", "language": "en"}}


def _calls(cid, name, args):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}]}


def conversation(calls, words=False):
    """The Xi'an cycle repeated up to `calls` calls, as a bare array of chat messages; `words`: every booking
    follows a proposal in words (an answer naming the hotel, then the user's 「确认」) instead of a blocked one."""
    messages, n = [{"role": "system", "content": "s"}, {"role": "user", "content": GOAL}], [0]

    def call(name, args, result):
        n[0] += 1
        messages.extend([_calls(f"c{n[0]}", name, args),
                         {"role": "tool", "tool_call_id": f"c{n[0]}", "content": json.dumps(result, ensure_ascii=False)}])
    call("set_plan", PLAN, KEPT)
    while n[0] < calls:
        hotel, name = f"XA-{n[0]:05d}", f"酒店{n[0]:05d}号"
        booking = {"room_type": "Suite", "check_in": "2026-10-01", "nights": 2}
        call("get_weather", {"city": "西安", "date": "2026-10-01"}, {"date": "2026-10-01", "condition": "rain"})
        call("search_hotels", {"city": "西安", "check_in": "2026-10-01", "nights": 2},
             {"hotels": [{"hotel_id": hotel, "name": name, "prices": {"Suite": 800}}]})
        if words:
            messages.append({"role": "assistant", "content": f"建议预订 {name}（{hotel}）Suite，2026-10-01 入住两晚。确认吗？"})
        else:
            call("book_hotel", dict(booking, hotel_id=hotel), {"error": "需要用户确认", "blocked_by": "unconfirmed_write",
                                                              "proposal": dict(booking, hotel_id=hotel)})
        messages.append({"role": "user", "content": "确认"})
        call("book_hotel", dict(booking, hotel_id=hotel), dict(booking, hotel_id=hotel, booking_id=f"B{n[0]}", total=1600))
        messages.append({"role": "assistant", "content": f"已预订 {hotel}。"})
        messages.append({"role": "user", "content": "再订一间"})
    return messages


def _best(fn, reps):
    best = None
    for _ in range(reps):
        started = time.perf_counter()
        fn()
        best = min(best or 1e9, time.perf_counter() - started)
    return best


def shapes(words=False):
    """[(name, size factor, fn(n, folder) -> a callable that does the measured work)]."""
    say = texts.of("en")

    def page(other):
        def make(n, folder):
            snap = page_snapshot(n, other)
            return lambda: view.render(timeline.build(snap), say)
        return make

    def checked(as_words):
        def make(n, folder):
            path = os.path.join(folder, f"conversation-{n}-{as_words}.json")
            data = conversation(n, as_words)
            if as_words:                       # an audit file of ours, its agent recorded: read as its guards read it
                agent = tools.xian_agent(tools.BookingStore(os.path.join(folder, "bookings.db")))
                data = dict(page_snapshot(0), messages=data, agent=agent.declared())
            with open(path, "w", encoding="utf-8") as f:
                json.dump(data, f, ensure_ascii=False)
            return lambda: check.check_file(path)
        return make
    found = [("page, ids differ", 1, page(True)), ("page", 1, page(False)), ("check", 1, checked(False))]
    return found + ([("check, proposals in words", 4, checked(True))] if words else [])


def run(sizes=(1000, 4000), reps=3, words=False):
    """[{shape, sizes, seconds, ratio}] for each shape at the two sizes."""
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name, factor, make in shapes(words):
            ns = [max(1, n // factor) for n in sizes]
            seconds = [_best(make(n, folder), reps) for n in ns]
            rows.append({"shape": name, "sizes": ns, "seconds": seconds, "ratio": seconds[1] / seconds[0],
                         "linear": ns[1] / ns[0]})
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1000,4000")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--words", action="store_true")
    args = p.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(","))
    print(f"| shape | n | seconds | {sizes[0]}→{sizes[1]}: time ratio (linear: {sizes[1] / sizes[0]:.1f}) |")
    print("| --- | --- | --- | ---: |")
    for row in run(sizes, args.reps, args.words):
        print(f"| {row['shape']} | {row['sizes'][0]:,} / {row['sizes'][1]:,} | "
              f"{row['seconds'][0]:.3f} / {row['seconds'][1]:.3f} | {row['ratio']:.1f}× |")


if __name__ == "__main__":
    main()

"""Requests a provider can cache: how much of each request is a byte-identical prefix of the
previous one, and the input tokens billed when the cached prefix costs a fraction of the price.

Three runs of our loop, each request captured as sent (the JSON of the tool schemas, then the
JSON of the messages, in order):

- the Xi'an run with a model that proposes in words: turn 1 set_plan + get_weather +
  search_hotels in one reply; turn 2 the proposal as text, answered by the loop's offer nudge (the
  one message asking for the exact call, which the next request forces); turn 3 book_hotel, held
  by the unconfirmed-write guard: the run suspends; the user's 「确认」 (runs.answer, Resume.CONFIRM)
  approves the held call and the loop makes it itself (no model request); turn 4 the final answer;
- the 50-read task (`reads_run`): set_plan, the weather and a hotel search, then one search a turn
  for 49 more check-in dates (results of about 330 characters), then the booking, held for the user;
- the 200-turn run of history.py (about 2 KB search_hotels results), compaction budget as
  configured (config.COMPACT_BUDGET).

Each run is laid out three ways over the same recorded messages and memory:

- "ours": the request the loop really sent (context.Window: epochs);
- "append-only": the ideal, the first system message then every message as recorded, never
  rewritten (the prefix providers cache best; nothing is ever made smaller);
- "previous layout": a bench-only re-creation of the layout before the epochs (commit 59c875c):
  the memory block re-rendered into messages[0] at every request, tool results of rounds older
  than the last two replaced by a ~160-character summary, recent ones cut to 4,000 characters.

Prefix share of a request = longest common prefix with the previous request / its length.
Tokens are estimated as characters / 3 (the loop's own estimate, config.CHARS_PER_TOKEN); the
cached part is the exact common prefix (real providers cache in blocks, e.g. 128 tokens past a
1,024-token minimum, which rounds it down a little). Billed = fresh + cached × CACHED_PRICE.
"""
import dataclasses
import datetime
import json
import os
import shutil
import statistics
import tempfile

from bench import workload
from handloop import config
from handloop import tools
from handloop import loop
from handloop import runs
from handloop import values
from bench import sys_ours

CACHED_PRICE = 0.10         # a cached input token costs 10 % of a fresh one (OpenAI, DeepSeek: 10 %)
XIAN_PROPOSAL = "提案：古城墙酒店（XA-001）Suite，2026-10-01 入住，两晚，共 ¥1760。当天有雨，所以选 Suite。请回复「确认」。"

# ---- the previous layout (59c875c), re-created for comparison only ----
OLD_HEADER = "【运行记忆】（系统根据工具结果维护，以此为准）"
OLD_RESULT_CHARS = 160


def old_render(mem):
    """59c875c's Memory.render: the memory block without a turn number (and without the offer
    line, which that version did not have)."""
    lines = [OLD_HEADER, f"目标：{mem.goal}"]
    lines += [f"计划第 {s['index']} 步：{s['title']}" + (f"（工具 {s['tool']}）" if s.get("tool") else "")
              + (f"，依赖 {s['after']}" if s.get("after") else "") + f" —— {mem.step_status(s['index'])}"
              for s in mem.plan] or ["计划：尚未制定，请先调用 set_plan"]
    lines += [f"天气 {d}：{w.get('condition')}，最高 {w.get('high')}°" for d, w in mem.fact("weather", {}).items()]
    lines += [f"坐标：{p.get('name')} ({p.get('latitude')}, {p.get('longitude')})" for p in mem.fact("locations", [])]
    lines += [f"酒店 {hid} {h['name']}：" + "，".join(f"{k} ¥{v}/晚" for k, v in h["prices"].items())
              for hid, h in mem.fact("hotels", {}).items()]
    if mem.proposal is not None:
        state = "用户已确认，可以按这些参数预订" if mem.confirmed else "等待用户确认，未确认前不能预订"
        lines.append(f"待确认的预订：{json.dumps(mem.proposal, ensure_ascii=False)}（{state}）")
    if mem.fact("booking"):
        lines.append(f"已预订：{json.dumps(mem.fact('booking'), ensure_ascii=False)}")
    return "\n".join(lines)


def _summarise(content, size=OLD_RESULT_CHARS):
    if len(content) <= size:
        return content
    return f"〔已压缩：原结果 {len(content)} 字符，要点见系统消息中的运行记忆〕{content[:size - 40]}…"


def old_layout(messages, memory_block, recent_rounds=config.RECENT_ROUNDS):
    """The request 59c875c's loop would send for this record: messages[0] rewritten with the
    memory block, old tool results summarised, recent ones cut."""
    messages = [{"role": "system", "content": tools.INSTRUCTIONS + "\n\n" + memory_block}, *messages[1:]]
    starts = [i for i, m in enumerate(messages) if m.get("role") == "assistant" and m.get("tool_calls")]
    boundary = starts[-recent_rounds] if len(starts) >= recent_rounds else 0
    out = []
    for i, message in enumerate(messages):
        if message.get("role") == "tool":
            content = message.get("content") or ""
            short = _summarise(content) if i < boundary else values.cut(content, config.RECENT_RESULT_MAX_CHARS)
            if short is not content:
                message = dict(message, content=short)
        out.append(message)
    return out


# ---- capturing the requests ----
class Recorder:
    """Wraps an `ask`: for each request, the three layouts serialised as sent, and the epoch."""

    def __init__(self, run, inner):
        self.run, self.inner = run, inner
        self.first_system = None
        self.layouts = {"ours": [], "append-only": [], "previous layout": []}
        self.epochs = []
        self.lengths = []        # per request: how many messages the record had, the tools' JSON
        self.parts = []          # per request: the characters of its new messages by whose they are (parts())
        self._sent = 0           # how many messages the previous request sent

    def __call__(self, messages, tools, final=False):
        r = self.run
        if self.first_system is None:
            self.first_system = r.messages[0]
        tools_json = json.dumps(tools, ensure_ascii=False)
        self.layouts["ours"].append(tools_json + json.dumps(messages, ensure_ascii=False))
        self.layouts["append-only"].append(
            tools_json + json.dumps([self.first_system, *r.messages[1:]], ensure_ascii=False))
        self.layouts["previous layout"].append(
            tools_json + json.dumps(old_layout(r.messages, old_render(r.memory)), ensure_ascii=False))
        self.epochs.append(r.window.start)
        self.lengths.append((len(r.messages), tools_json))
        same_epoch = len(self.epochs) > 1 and self.epochs[-2] == self.epochs[-1]
        new = parts(messages[self._sent:] if same_epoch else messages)     # an epoch's first request: all of it
        new["tools"] = len(tools_json) if not self.lengths[:-1] or self.lengths[-2][1] != tools_json else 0
        self.parts.append(new)
        self._sent = len(messages)
        return self.inner(messages, tools, final)


PARTS = ("tools", "model", "result", "user", "loop", "envelope")


def _text(value):
    """Characters a string takes inside the request's JSON (escaped, without its quotes)."""
    return len(json.dumps(value, ensure_ascii=False)) - 2 if isinstance(value, str) else 0


def parts(messages):
    """The characters of messages as sent (json.dumps, ', ' between them), by whose they are ("tools", the
    tool schemas' JSON when a request sends other schemas than the one before, is the Recorder's): "model" (the
    model's own reply: its text, tool names and arguments), "result" (a tool message's content: what the
    tool returned as the loop sends it), "user" (the user's words), "loop" (what the loop itself says: the
    system prompt, its nudges, the calls it issues), "envelope" (the chat format's own keys, roles and ids)."""
    out = dict.fromkeys(PARTS, 0)
    for m in messages:
        whole = len(json.dumps(m, ensure_ascii=False)) + 2
        role, own = m.get("role"), 0
        if m.get("name") == loop.LOOP_NAME or role == "system":
            out["loop"] += whole
            continue
        if role == "tool":
            own = _text(m.get("content"))
            out["result"] += own
        elif role == "user":
            own = _text(m.get("content"))
            out["user"] += own
        elif role == "assistant":
            calls = [c.get("function") or {} for c in m.get("tool_calls") or []]
            own = _text(m.get("content")) + sum(_text(f.get("name")) + _text(f.get("arguments")) for f in calls)
            out["model"] += own
        out["envelope"] += whole - own
    return out


def common_prefix(a, b):
    """Length of the longest common prefix of two strings (binary search on slices: C speed)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while lo < hi:                       # invariant: a[:lo] == b[:lo], a[:hi+1] != b[:hi+1] unknown
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


RATIOS = (0.10, 0.25, 0.50)   # other providers' discounts, for the sensitivity columns


def analyse(requests, epochs=None):
    """Per request: its size, the share that is the previous request's prefix, billed tokens.
    `kept` says the whole previous request is this one's prefix (all of it but the closing
    bracket of its messages array): the request only appended."""
    rows, previous = [], ""
    for i, text in enumerate(requests):
        shared = common_prefix(previous, text)
        tokens, cached = len(text) / config.CHARS_PER_TOKEN, shared / config.CHARS_PER_TOKEN
        new_epoch = bool(epochs) and i > 0 and epochs[i] != epochs[i - 1]
        rows.append({"chars": len(text), "prefix_share": shared / len(text) if i else None,
                     "kept": i > 0 and shared >= len(previous) - 1, "input_tokens": tokens,
                     "cached_tokens": cached, "new_epoch": new_epoch})
        previous = text
    between = [r["prefix_share"] for r in rows[1:] if not r["new_epoch"]]
    billed = {str(x): sum(r["input_tokens"] - r["cached_tokens"] * (1 - x) for r in rows) for x in RATIOS}
    return {"turns": len(rows), "input_tokens": sum(r["input_tokens"] for r in rows),
            "billed_tokens": billed[str(CACHED_PRICE)], "billed_at": billed,
            "kept_between_epochs": sum(r["kept"] for r in rows[1:] if not r["new_epoch"]),
            "between_epochs": len(between), "share_95_between_epochs": sum(x >= 0.95 for x in between),
            "min_share_between_epochs": min(between) if between else None,
            "median_share": statistics.median(r["prefix_share"] for r in rows[1:]) if len(rows) > 1 else None,
            "mean_share": statistics.fmean(r["prefix_share"] for r in rows[1:]) if len(rows) > 1 else None,
            "epoch_starts": sum(r["new_epoch"] for r in rows), "per_turn": rows}


def lower_bound(recorder):
    """A lower bound on the billed input tokens of ANY layout that sends every message of the
    record (the API's pairing rule, and ours: compaction keeps every message): each request
    pays fresh only for what is new since the previous one (the reply, the tool messages, the
    user's message: the model must see each once), and everything older at the cached price,
    with the system message holding the prompt alone (no memory block), assistant messages as
    recorded and every older tool result shrunk to `{}`. No real layout reaches it: a result
    sent whole and later shrunk changes the prefix, and the model sees no facts of old results."""
    messages = recorder.run.messages
    system = {"role": "system", "content": tools.INSTRUCTIONS}
    billed, before = 0.0, 1
    for count, tools_json in recorder.lengths:
        old = [dict(m, content="{}") if m.get("role") == "tool" else m for m in messages[1:before]]
        cached = len(tools_json + json.dumps([system, *old], ensure_ascii=False))
        fresh = len(json.dumps(messages[before:count], ensure_ascii=False))
        if before == 1:
            cached, fresh = 0, cached + fresh          # the first request: nothing cached yet
        billed += (cached * CACHED_PRICE + fresh) / config.CHARS_PER_TOKEN
        before = count
    return billed


def _summary(recorder):
    out = {}
    for name, requests in recorder.layouts.items():
        out[name] = analyse(requests, recorder.epochs if name == "ours" else None)
    out["ours"]["bound_billed"] = lower_bound(recorder)
    for row, new in zip(out["ours"]["per_turn"], recorder.parts):
        row["parts"] = new            # whose the request's new characters are (parts())
    return out


# ---- the two runs ----
def xian_replies(eager=False, planning=True):
    """The scripted model of the Xi'an run: it proposes in words, then, asked for the call (the loop's offer
    nudge, the call forced), calls book_hotel, held as the proposal the user sees; or (eager) calls book_hotel
    before asking, as the peers' approval flows do. Either way, confirmed, the loop makes the held call itself
    and the model's last reply is its answer;
    set_plan beside the two reads unless the agent plans not (`planning` False)."""
    plan = [workload.call("c1", "set_plan", {"steps": workload.PLAN})] if planning else []
    opening = lambda: workload.calls_message(*plan, workload.call("c2", "get_weather", workload.WEATHER),  # noqa: E731
                                             workload.call("c3", "search_hotels", workload.SEARCH))
    answer = lambda: {"role": "assistant", "content": workload.ANSWER}     # noqa: E731
    if eager:
        return (opening, lambda: workload.calls_message(workload.call("c5", "book_hotel", workload.BOOK)), answer)
    return (opening, lambda: {"role": "assistant", "content": XIAN_PROPOSAL},
            lambda: workload.calls_message(workload.call("c4", "book_hotel", workload.BOOK)), answer)


def xian_run(eager=False, planning=True):
    """The Xi'an run, proposal in words then the forced call held (or an eager booking held at once), the user's
    confirmation, the loop's booking and the answer, with every request captured; `planning` False: the Xi'an agent without planning (no planning tools sent, no set_plan)."""
    folder = tempfile.mkdtemp(prefix="bench-cache-", dir=os.environ.get("BENCH_TMP"))
    try:
        agent = workload.AGENT if planning else dataclasses.replace(workload.AGENT, planning=False)
        ts = sys_ours.BenchToolSet("cache-xian", agent)
        r = runs.begin(folder, "cache-xian", workload.GOAL, ts, "scripted", fsync=False)
        recorder = Recorder(r, sys_ours.playback(xian_replies(eager, planning)))
        loop.run(r, recorder, ts)
        if (r.status, r.reason) != ("suspended", "awaiting_confirmation"):
            raise RuntimeError(f"Xi'an run: the proposal ended {r.status}/{r.reason}, not awaiting confirmation")
        runs.answer(r, runs.Resume.CONFIRM)          # approves the held booking; the loop makes it
        loop.run(r, recorder, ts)
        if r.status != "done" or r.memory.fact("booking") is None:
            raise RuntimeError(f"Xi'an run ended {r.status}/{r.reason} without a booking: {r.detail}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return _summary(recorder), r


READS = 50


def reads_replies(reads=READS):
    """A long run of reads: set_plan, the weather and the first hotel search, then one search a turn for the next
    check-in dates (distinct arguments: no spin), then the booking, held for the user's confirmation (words would
    not end the run: the loop would ask for the call); `reads` searches in all."""
    def search(n):
        day = (datetime.date(2026, 10, 1) + datetime.timedelta(days=n)).isoformat()
        return workload.call(f"s{n}", "search_hotels", {"city": "西安", "check_in": day, "nights": 2})
    first = lambda: workload.calls_message(workload.call("p", "set_plan", {"steps": workload.PLAN}),  # noqa: E731
                                           workload.call("w", "get_weather", workload.WEATHER), search(0))
    later = [lambda n=n: workload.calls_message(search(n)) for n in range(1, reads)]
    return (first, *later, lambda: workload.calls_message(workload.call("b", "book_hotel", workload.BOOK)))


def reads_run(reads=READS):
    """The 50-read task: the Xi'an agent searching hotels for `reads` check-in dates, one search a turn (a
    result of about 330 characters, as the demo's), every request captured; it ends on the held booking, waiting
    for the user's confirmation."""
    folder = tempfile.mkdtemp(prefix="bench-reads-", dir=os.environ.get("BENCH_TMP"))
    try:
        ts = sys_ours.BenchToolSet("cache-reads", workload.AGENT)
        r = runs.begin(folder, "cache-reads", workload.GOAL, ts, "scripted", max_turns=reads + 5, fsync=False)
        recorder = Recorder(r, sys_ours.playback(reads_replies(reads)))
        loop.run(r, recorder, ts)
        found = len(r.memory.results.get("search_hotels", ()))
        if (r.status, r.reason, found) != ("suspended", "awaiting_confirmation", reads):
            raise RuntimeError(f"reads run: {r.status}/{r.reason} after {found} searches, not {reads}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return _summary(recorder), r


def long_run(turns=200, compact_budget=None):
    """history.py's long run (2 KB results), every request captured."""
    from bench import history
    recorders = []

    def wrap(ask_factory):
        def factory(turns_, sink):
            inner = ask_factory(turns_, sink)
            recorder = Recorder(sink["run"], inner)
            recorders.append(recorder)
            return recorder
        return factory

    original = history._ask
    history._ask = wrap(original)
    try:
        run = history.one_run(turns, fsync=False, compact_budget=compact_budget)
    finally:
        history._ask = original
    return _summary(recorders[0]), run


SWEEP = (5_000, 10_000, 40_000)   # other compaction budgets (estimated tokens), a run setting


def measure(turns=200):
    xian, _ = xian_run()
    reads, _ = reads_run()
    long, _ = long_run(turns)
    sweep = {}
    for budget in SWEEP:
        ours = long_run(turns, compact_budget=budget)[0]["ours"]
        sweep[budget] = {k: v for k, v in ours.items() if k != "per_turn"}
    for result in (xian, reads, long):
        for layout in result.values():
            layout["per_turn"] = [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}
                                  for row in layout["per_turn"]]
    return {"cached_price": CACHED_PRICE, "chars_per_token": config.CHARS_PER_TOKEN, "xian": xian, "reads": reads,
            "long": long,
            "turns": turns, "compact_budget": config.COMPACT_BUDGET, "sweep": sweep}


if __name__ == "__main__":
    result = measure()
    for run in ("xian", "reads", "long"):
        for name, layout in result[run].items():
            print(run, name, {k: v for k, v in layout.items() if k != "per_turn"})
    print("sweep", result["sweep"])

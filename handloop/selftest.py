"""The dry run (`python agent.py --selftest`): each mechanism of the loop shown and asserted,
with no model and no network.

Invariants: everything happens inside one temporary folder that is removed at the end (the
user's audit/ is never touched, no file is left behind); the model is a script of replies
handed to the real loop (`loop.run`), and every claim is checked on what the real modules
(guards, executor, memory, tools, audit, loop) did, never re-implemented here; each scenario
prints briefly what happened, then PASS or FAIL; exit 0 only when all pass. Threads a scenario
holds up (a hung tool) are released before it ends.
"""
import copy
import json
import os
import sys
import importlib
import tempfile
import threading
import time

from . import audit
from . import config
from . import loop
from . import runs
from . import tools
from . import toolset
from .executor import execute
from .values import chars
from .context import compact
from .memory import Memory
from .model import ModelError, Reply, estimate_tokens

PLAN = [{"title": "查询入住当天天气", "tool": "get_weather"}, {"title": "搜索酒店", "tool": "search_hotels"},
        {"title": "按天气选房型并预订（需用户确认）", "tool": "book_hotel", "after": [1, 2]}]
WEATHER = {"city": "西安", "date": "2026-10-01"}
HOTELS = {"city": "西安", "check_in": "2026-10-01", "nights": 2}
SUITE = {"hotel_id": "XA-001", "room_type": "Suite", "check_in": "2026-10-01", "nights": 2}
PROPOSAL = "10-01 有雨，建议订古城墙酒店（XA-001）Suite 两晚，共 ¥1760。回复「确认」后下单。"
FINAL = "已预订古城墙酒店 Suite 两晚。"


class Failed(Exception):
    """A claim of the self-test that did not hold."""


class Skipped(Exception):
    """A scenario that cannot run here; the message says why."""


def expect(condition, claim):
    if not condition:
        raise Failed(claim)


# ---- the scripted model ----
def calls(*items):
    """A reply asking for calls: (name, args) or (name, args, id); args may be raw text."""
    raw = []
    for i, item in enumerate(items, 1):
        name, args = item[0], item[1]
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        raw.append({"id": item[2] if len(item) > 2 else f"c{i}", "type": "function",
                    "function": {"name": name, "arguments": text}})
    return {"role": "assistant", "content": None, "tool_calls": raw}


def says(text):
    return {"role": "assistant", "content": text}


class Script:
    """ask(messages, tools, final=False) → the next scripted reply, as model.connect's ask would."""

    model = "selftest-script"

    def __init__(self, replies):
        self.replies, self.answered = list(replies), []     # when each reply was handed over

    def __call__(self, messages, tool_schemas, final=False):
        if not self.replies:
            raise ModelError("bad_response", "自检脚本的回复用完了")
        message = self.replies.pop(0)
        sent = chars(messages)
        self.answered.append(time.perf_counter())
        return Reply(message, message.get("tool_calls", []), estimate_tokens(sent), True, 0.0, [])


class Box:
    """One scenario's corner of the temporary folder: its booking store, the Xi'an agent over it, its runs."""

    def __init__(self, folder):
        self.folder = folder
        os.makedirs(folder)
        self.store = tools.BookingStore(os.path.join(folder, "bookings.db"))
        self.agent = tools.xian_agent(self.store)

    def begin(self, run_id, ts=None):
        ts = ts or toolset.ToolSet(run_id, self.agent)
        return runs.begin(self.folder, run_id, tools.GOAL, ts, Script.model), ts

    def drive(self, r, ts, replies):
        """Run the real loop on scripted replies; returns {turn: (calls, outcomes, seconds)} of the
        tool turns, seconds counted from the model's reply (or, for the loop's own call, the
        start) to the turn's audit."""
        turns, script, began = {}, Script(replies), time.perf_counter()

        def report(kind, run, reply=None, calls=(), outcomes=None, **_):
            if kind == "turn":
                turns[run.turn] = (list(calls), dict(outcomes), time.perf_counter() - max(script.answered[-1:] + [began]))
        loop.run(r, script, ts, report)
        return turns

    def until_proposal(self, run_id, ts=None):
        """The demo run up to its suspension: plan, two reads, the booking blocked as a proposal."""
        r, ts = self.begin(run_id, ts)
        turns = self.drive(r, ts, [calls(("set_plan", {"steps": PLAN})),
                                   calls(("get_weather", WEATHER), ("search_hotels", HOTELS)),
                                   calls(("book_hotel", SUITE))])
        expect(r.status == "suspended" and r.memory.proposal is not None, "演示运行应在提案处挂起")
        return r, ts, turns


def _outcome(turns, turn, call_id):
    found = [o[call_id] for t, (_, o, _) in turns.items() if t == turn and call_id in o]
    expect(bool(found), f"第 {turn} 轮没有调用 {call_id}")
    return found[0]


def _tool_ids_after(messages, index):
    ids = []
    for message in messages[index + 1:]:
        if message.get("role") != "tool":
            break
        ids.append(message["tool_call_id"])
    return ids


# ---- scenarios ----
class SlowReads(toolset.ToolSet):
    """Reads whose call id is in `slow` take `delay` seconds, like a slow network; each call's
    time span is recorded."""

    def __init__(self, run_id, agent, delay, slow):
        super().__init__(run_id, agent)
        self.delay, self.slow, self.spans = delay, set(slow), {}

    def run(self, call, memory):
        started = time.perf_counter()
        if self.kind(call.name) == "read" and call.id in self.slow:
            time.sleep(self.delay)
        try:
            return super().run(call, memory)
        finally:
            self.spans[call.id] = (started, time.perf_counter())


def batch_of_three(box, say):
    """Two reads and an unconfirmed book_hotel in one batch."""
    r, ts = box.begin("batch", SlowReads("batch", box.agent, 0.2, slow=("c1", "c2")))
    turns = box.drive(r, ts, [
        calls(("set_plan", {"steps": PLAN}, "p")),
        calls(("get_weather", WEATHER, "w"), ("search_hotels", HOTELS, "h")),
        calls(("get_weather", {"city": "西安", "date": "2026-10-02"}), ("search_hotels", dict(HOTELS, check_in="2026-10-02")),
              ("book_hotel", SUITE)),
        says(PROPOSAL)])
    c1, c2, c3 = (_outcome(turns, 3, c) for c in ("c1", "c2", "c3"))
    say("第 3 轮同一批：c1 get_weather、c2 search_hotels、c3 book_hotel（用户还没确认）")
    expect(c3.status == "blocked" and c3.guard == "unconfirmed_write", f"c3 应被 unconfirmed_write 拦截，实际 {c3.status}/{c3.guard}")
    expect("error" in c3.result and isinstance(c3.result.get("proposal"), dict), "c3 应回灌 error 并带上提案")
    p, shows = c3.result["proposal"]["args"], c3.result["proposal"].get("shows") or {}
    say(f"c3 在执行前被护栏 {c3.guard} 拦截，回灌错误，并成为提案：{p['hotel_id']} {p['room_type']} {p['nights']} 晚 ¥{shows.get('total')}")
    (s1, e1), (s2, e2) = ts.spans["c1"], ts.spans["c2"]
    expect(c1.status == c2.status == "ok" and c1.concurrent and c2.concurrent, "c1、c2 应成功并标记为并发")
    expect(max(s1, s2) < min(e1, e2), "c1、c2 的执行时间段应重叠（并发）")
    say(f"c1、c2 并发：各耗时 {ts.delay:.2f}s，时间段重叠，合计墙钟 {max(e1, e2) - min(s1, s2):.2f}s（串行需 {2 * ts.delay:.2f}s）")
    index = next(i for i, m in enumerate(r.messages) if m.get("tool_calls") and m["tool_calls"][0]["id"] == "c1")
    order = _tool_ids_after(r.messages, index)
    expect(order == ["c1", "c2", "c3"], f"回灌顺序应为 c1 → c2 → c3，实际 {order}")
    expect(box.store.count() == 0 and r.status == "suspended", "不应有任何预订，运行应挂起等待确认")
    say(f"回灌顺序：{' → '.join(order)}；预订库 {box.store.count()} 行；运行挂起（{r.reason}）")


def booked_once(box, say):
    """After confirmation the loop makes the confirmed booking itself; the model asking the same
    booking again, twice in one batch and once more later, books nothing more: one row."""
    r, ts, _ = box.until_proposal("twice")
    runs.add_user(r, tools.CONFIRM[0])
    turns = box.drive(r, ts, [calls(("book_hotel", SUITE, "b1"), ("book_hotel", SUITE, "b2")),
                              calls(("book_hotel", SUITE, "b3")), says(FINAL)])
    made = _outcome(turns, 4, "call_loop_4")
    expect(made.status == "ok" and any(m.get("name") == "loop" for m in r.messages if m.get("role") == "assistant"), "确认后循环应直接执行被确认的调用")
    say(f"用户「{tools.CONFIRM[0]}」后，循环原样执行被确认的 book_hotel（{made.result['booking_id']}），没有再问模型")
    b1, b2 = _outcome(turns, 5, "b1"), _outcome(turns, 5, "b2")
    expect(b1.status == b2.status == "blocked", "确认只授权一次：模型随后同批两次请求同一预订都应被拦截")
    say(f"模型随后同一批两次 book_hotel：执行前被护栏 {b1.guard}、{b2.guard} 拦截")
    b3 = _outcome(turns, 6, "b3")
    expect(b3.status == "blocked", "下一轮再次预订应被护栏拦截")
    say(f"下一轮再请求一次：执行前被护栏 {b3.guard} 拦截")
    again = toolset.ToolSet("twice", tools.xian_agent(tools.BookingStore(box.store.path)))     # as a new process would, guards bypassed
    raw = calls(("book_hotel", SUITE, "b4"))["tool_calls"]
    replay = execute(Memory(), again.prepare(raw), again)["b4"]
    expect(replay.status == "ok" and replay.result.get("replayed") is True, "绕过护栏直接执行也应是幂等重放")
    say("绕过护栏、用新的工具集（如崩溃后的新进程）直接执行：预订库按幂等键返回原订单")
    expect(box.store.count() == 1 and r.status == "done", f"预订库应只有 1 行，实际 {box.store.count()}")
    say(f"预订库 bookings 表：{box.store.count()} 行；运行完成")


def proposal_in_words(box, say):
    """The way most models ask: an offer in words. Words are never a proposal: the loop asks the model for the
    call (a forced tool choice), holds it, and the user is shown that exact call; one 「确认」 runs exactly it,
    issued by the loop itself."""
    r, ts = box.begin("words")
    box.drive(r, ts, [calls(("set_plan", {"steps": PLAN}), ("get_weather", WEATHER), ("search_hotels", HOTELS)),
                      says(PROPOSAL), calls(("book_hotel", SUITE, "w1"))])
    expect((r.status, r.reason) == ("suspended", "awaiting_confirmation") and box.store.count() == 0,
           f"文字提议之后应追问调用并挂起等待确认，实际 {r.status}/{r.reason}")
    held = r.memory.waiting()
    expect(len(held) == 1 and held[0]["tool"] == "book_hotel" and held[0]["args"] == SUITE,
           f"展示给用户的应是确切的调用，实际 {held}")
    say(f"模型先用文字提议：「{PROPOSAL[:24]}…」→ 文字不是提案：循环强制要 book_hotel 的调用，"
        f"用户看到的是确切调用 #{held[0]['n']} {held[0]['args']}")
    runs.add_user(r, tools.CONFIRM[0])
    box.drive(r, ts, [says(FINAL)])
    expect(box.store.count() == 1 and r.status == "done" and r.memory.writes[0]["call"] == SUITE,
           f"确认后应恰好按展示的调用订一笔，实际 {box.store.count()} 笔")
    say("用户「确认」：循环原样执行被确认的调用，订出一笔；运行完成")


def compaction(box, say):
    """By size only: the demo run is never compacted; a compacted copy keeps every message, every
    tool_call_id, data results as JSON objects with their facts, and the receipt whole."""
    r, ts, _ = box.until_proposal("compact")
    runs.add_user(r, tools.CONFIRM[0])
    box.drive(r, ts, [says(FINAL)])
    expect(r.window.start == 1, "西安这次运行没有超过压缩预算，不应压缩")
    say(f"整次运行最大请求约 {max(t['chars_sent'] for t in r.trace)} 字符，低于压缩预算 {config.COMPACT_BUDGET} tokens：没有压缩")
    messages = r.messages
    before = copy.deepcopy(messages)
    sent = compact(messages, ts.tool, 400)                 # as if the history had to fit 400 characters
    expect(messages == before, "compact 不应改动原消息列表")
    ids = [m.get("tool_call_id") for m in messages if m.get("role") == "tool"]
    expect([m.get("tool_call_id") for m in sent if m.get("role") == "tool"] == ids and len(sent) == len(messages),
           "压缩后每条消息和每个 tool_call_id 都应保留")
    changed = [(a, b) for a, b in zip(messages, sent) if a.get("role") == "tool" and a["content"] != b["content"]]
    expect(changed and all(isinstance(_json(b["content"]), dict) and "_compacted" in b["content"] for _, b in changed),
           "压缩后的工具结果应仍是带压缩说明的 JSON 对象")
    receipt = next(m for m in sent if m.get("role") == "tool" and "booking_id" in m["content"])
    expect("_compacted" not in receipt["content"], "预订回执不应被压缩")
    size = lambda ms: sum(len(m.get("content") or "") for m in ms if m.get("role") == "tool")   # noqa: E731
    say(f"按 400 字符压缩一份副本：{len(changed)} 条工具结果压缩为 JSON 摘要，预订回执原样保留；工具内容 "
        f"{size(messages)} → {size(sent)} 字符；tool_call_id 全部保留（{len(ids)} 个）；原列表未变")


def _json(text):
    try:
        return json.loads(text)
    except ValueError:
        return None


def spin_or_retry(box, say):
    """The same canonical call repeated is stopped; a corrected retry and a confirmed retry are not."""
    r, ts = box.begin("spin")
    again = config.SPIN_REPEATS + 1
    turns = box.drive(r, ts, [
        calls(("set_plan", {"steps": PLAN})),
        calls(("get_weather", {"city": "西安", "date": "2026-10-1"})),
        calls(("get_weather", '{"city": "西安", "date": "2026-10-01"}')),
        calls(("get_weather", '{"date":"2026-10-01","city":"西安"}')),
        calls(("get_weather", '{ "date" : "2026-10-01" ,  "city" : "西安" }'), ("search_hotels", HOTELS)),
        calls(("book_hotel", SUITE))])
    kinds = [(t, _outcome(turns, t, "c1")) for t in (2, 3, 4, 5)]
    expect(kinds[0][1].guard == "arguments" and kinds[1][1].status == "ok", "写错的参数应被拦截，改正后的重试应执行")
    say("get_weather 日期写成 2026-10-1 → 参数校验拦截；改正后重试 → 执行（不算打转）")
    expect(kinds[2][1].status == "ok" and kinds[3][1].guard == "spin",
           f"同一规范调用第 {again} 次应被判为打转")
    say(f"同一调用换键序、换空格再来：第 {config.SPIN_REPEATS} 次仍执行，第 {again} 次被 spin 拦截（按解析后的规范参数比较）")
    blocked = _outcome(turns, 6, "c1")
    expect(blocked.guard == "unconfirmed_write", "未确认的预订应被拦截成提案")
    runs.add_user(r, tools.CONFIRM[0])
    turns = box.drive(r, ts, [says(FINAL)])
    retry = _outcome(turns, 7, "call_loop_7")
    expect(retry.status == "ok" and r.status == "done", f"确认后重试被拦截过的写操作不应算打转，实际 {retry.status}/{retry.guard}")
    say(f"book_hotel 先被拦截成提案，用户「{tools.CONFIRM[0]}」后循环原样重试 → 执行（被拦截的调用从未执行，不计打转）")


def provenance(box, say):
    """A hotel id that no search of this run returned is blocked before it runs."""
    r, ts = box.begin("provenance")
    turns = box.drive(r, ts, [calls(("set_plan", {"steps": PLAN})),
                              calls(("get_weather", WEATHER), ("search_hotels", HOTELS)),
                              calls(("book_hotel", dict(SUITE, hotel_id="BJ-001"))),
                              says("抱歉，这家酒店不在搜索结果里。")])
    outcome = _outcome(turns, 3, "c1")
    found = r.memory.facts["search_hotels"]["hotel_ids"]
    expect("BJ-001" in tools.HOTEL_INDEX and "BJ-001" not in found, "BJ-001 应是真实酒店但不在本次结果里")
    expect(outcome.status == "blocked" and outcome.guard == "provenance", f"应被 provenance 拦截，实际 {outcome.guard}")
    expect(box.store.count() == 0 and r.memory.proposal is None, "不应有预订，也不应变成提案")
    say(f"book_hotel hotel_id=BJ-001：酒店系统里确有此店，但不在本次搜索结果 {found} 中")
    say(f"执行前被护栏 provenance 拦截；没有变成提案；预订库 {box.store.count()} 行")


class Hanging(toolset.ToolSet):
    """get_weather never answers until released; calls get a short timeout."""

    timeout = 0.3

    def __init__(self, run_id, agent):
        super().__init__(run_id, agent)
        self.release = threading.Event()

    def run(self, call, memory):
        if call.name == "get_weather":
            self.release.wait(30)
        return super().run(call, memory)


def hung_tool(box, say):
    """A tool that hangs: the turn ends on time and the timeout is on record."""
    r, ts = box.begin("timeout", Hanging("timeout", box.agent))
    try:
        turns = box.drive(r, ts, [calls(("set_plan", {"steps": PLAN})), calls(("get_weather", WEATHER), ("search_hotels", HOTELS)),
                                  says("天气服务超时，稍后再试。")])
    finally:
        ts.release.set()
    _, outcomes, took = turns[2]
    weather, hotels = outcomes["c1"], outcomes["c2"]
    expect(weather.status == "timeout" and hotels.status == "ok", f"get_weather 应超时、search_hotels 应成功，实际 {weather.status}")
    expect(took < ts.timeout + 1.0, f"这一轮应在超时后及时结束，实际 {took:.2f}s")
    say(f"get_weather 挂住不返回，超时 {ts.timeout}s：这一轮 {took:.2f}s 结束，search_hotels 照常返回")
    snap = audit.load(r.path)
    record = next(t for t in snap["trace"] if t["turn"] == 2)
    status = {t["id"]: t["status"] for t in record["tools"]}
    answer = next(m for m in snap["messages"] if m.get("tool_call_id") == "c1" and "超过" in m.get("content", ""))
    expect(status == {"c1": "timeout", "c2": "ok"} and "get_weather" not in r.memory.done_tools, "审计应记录超时")
    say(f"审计文件记录：第 2 轮 {status}；模型收到：{json.loads(answer['content'])['error'][:30]}…")


def round_trip(box, say):
    """A suspended run written and loaded back: the same messages and memory."""
    r, ts, _ = box.until_proposal("roundtrip")
    size = os.path.getsize(r.path)
    back, ts2, warnings = runs.reopen(box.folder, "roundtrip", lambda snap: toolset.ToolSet("roundtrip", box.agent),
                                      lambda snap: None)
    expect(back.messages == r.messages, "读回的 messages 应与写入的相同")
    expect(back.memory.to_dict() == r.memory.to_dict() and not warnings, "由 messages 重建的 memory 应与运行时相同")
    expect((back.status, back.turn) == (r.status, r.turn), "状态和轮数应相同")
    leftovers = [n for n in os.listdir(box.folder) if n.startswith(".tmp-")]
    expect(not leftovers, f"原子写入不应留下临时文件：{leftovers}")
    say(f"挂起的运行写入 {os.path.basename(r.path)}（{size} 字节），读回：{len(back.messages)} 条消息、"
        f"memory（提案 {back.memory.proposal['args']['hotel_id']}，已用 {back.memory.used_tokens} tokens）完全一致")
    runs.add_user(back, tools.CONFIRM[0])
    box.drive(back, ts2, [says(FINAL)])
    expect(back.status == "done" and box.store.count() == 1, "读回的运行确认后应能完成预订")
    say(f"读回的运行收到「{tools.CONFIRM[0]}」后继续，完成预订（预订库 {box.store.count()} 行）")


MCP_PLAN = [{"title": "查询城市坐标", "tool": "search_location"},
            {"title": "按坐标查询入住当天天气", "tool": "get_weather", "after": [1]},
            {"title": "搜索酒店", "tool": "search_hotels"},
            {"title": "按天气选房型并预订（需用户确认）", "tool": "book_hotel", "after": [2, 3]}]


def mcp_tools_switch(box, say):
    """MCP mode: the model sees the server's two tools, a call goes through the server, and the
    run ends in the same booking as in local mode."""
    try:
        importlib.import_module("handloop.mcp_tools")                 # the MCP client
        importlib.import_module("handloop.demo.weather_server")       # and our server
    except ImportError:
        raise Skipped("MCP 场景需要 mcp_tools.py") from None
    remote = toolset.ToolSet("mcp", box.agent, mode="mcp")
    try:
        place = _mcp_calls(remote, toolset.ToolSet("local", box.agent), say)
        booking = _mcp_run(box, remote, place)
    finally:
        remote.close()
    local = _local_booking(box)
    same = all(booking.get(k) == local.get(k) for k in ("hotel_id", "room_type", "check_in", "nights", "total"))
    expect(same, f"MCP 模式的预订应与本地模式相同：{booking} / {local}")
    say(f"经真实的循环跑完整个任务：MCP 模式订到 {booking['hotel_id']} {booking['room_type']} ¥{booking['total']}，与本地模式相同")


def _mcp_calls(remote, local, say):
    """The tool lists side by side, then search_location and get_weather through the server."""
    names = lambda ts: sorted(s["function"]["name"] for s in ts.schemas)   # noqa: E731
    weather = next(s["function"] for s in remote.schemas if s["function"]["name"] == "get_weather")
    expect("search_location" in names(remote) and "latitude" in weather["parameters"]["properties"],
           "MCP 模式应换成服务器的 search_location 与按坐标的 get_weather")
    say(f"模型看到的工具：本地 {names(local)} → MCP {names(remote)}")
    place = execute(Memory(), remote.prepare(calls(("search_location", {"city": "西安"}))["tool_calls"]), remote)["c1"]
    expect(place.status == "ok" and "latitude" in place.result, f"search_location 应经服务器返回坐标：{place.result}")
    args = {"latitude": place.result["latitude"], "longitude": place.result["longitude"], "date": "2026-10-01"}
    forecast = execute(Memory(), remote.prepare(calls(("get_weather", args))["tool_calls"]), remote)["c1"]
    expect(forecast.status == "ok" and forecast.result.get("condition") == "rain", f"服务器天气应为 rain：{forecast.result}")
    server = remote.mcp.conn.proc
    expect(server.pid != os.getpid() and server.poll() is None, "调用应经由另一个进程里的 MCP 服务器")
    say(f"经服务器进程（pid {server.pid}，{remote.mcp.era} 协议 {remote.mcp.version}）：search_location → "
        f"({args['latitude']}, {args['longitude']})，get_weather → {forecast.result['condition']}")
    return args


def _mcp_run(box, remote, place):
    r, ts = box.begin("mcp", remote)
    box.drive(r, ts, [calls(("set_plan", {"steps": MCP_PLAN})),
                      calls(("search_location", {"city": "西安"}), ("search_hotels", HOTELS)),
                      calls(("get_weather", place)), calls(("book_hotel", SUITE)), says(PROPOSAL)])
    expect(r.status == "suspended" and r.memory.proposal is not None, f"MCP 运行应在提案处挂起：{r.status} {r.detail}")
    runs.add_user(r, tools.CONFIRM[0])
    box.drive(r, ts, [says(FINAL)])
    expect(r.status == "done" and r.memory.fact("booking"), f"MCP 运行确认后应完成预订：{r.status} {r.detail}")
    return r.memory.fact("booking")


def _local_booking(box):
    r, ts, _ = box.until_proposal("local")
    runs.add_user(r, tools.CONFIRM[0])
    box.drive(r, ts, [says(FINAL)])
    return r.memory.fact("booking") or {}


SCENARIOS = [("同一批三个调用：两个读 + 一个未确认的 book_hotel", batch_of_three),
             ("确认后循环直接执行被确认的预订；模型再请求同一预订（同批两次、下一轮一次）：只有一行", booked_once),
             ("文字提案：一次「确认」授权写明的预订；不同的预订被拦下，确认仍然有效", proposal_in_words),
             ("上下文压缩：只按大小触发；压缩副本保留结构、回执和每个 tool_call_id，原列表不变", compaction),
             ("打转与重试：重复被拦，改正后的重试和确认后的重试放行", spin_or_retry),
             ("参数溯源：编造的 hotel_id 在执行前被拦截", provenance),
             ("工具超时：这一轮按时结束，结果记录在案", hung_tool),
             ("审计往返：挂起的运行写入再读回，messages 与 memory 不变", round_trip)]
MCP_SCENARIO = ("MCP 模式：工具列表换成服务器的两个工具，调用经服务器进程，结果与本地相同", mcp_tools_switch)


def run_scenario(number, title, fn, folder, out):
    """Run one scenario in its own sub-folder; 'pass', 'fail' or 'skip'."""
    print(f"[{number}] {title}", file=out)
    say = lambda line: print(f"    {line}", file=out)   # noqa: E731
    try:
        fn(Box(os.path.join(folder, f"s{number}")), say)
    except Failed as exc:
        say(f"FAIL：{exc}")
        return "fail"
    except Skipped as exc:
        say(f"SKIP：{exc}")
        return "skip"
    except Exception as exc:      # a fault of our own code shows as a failed scenario, not a traceback
        say(f"FAIL：意外异常 {type(exc).__name__}: {exc}")
        return "fail"
    say("PASS")
    return "pass"


def main(mcp=False, out=None):
    """Run every scenario (the MCP one with mcp=True); 0 when all pass, 1 otherwise."""
    out = out or sys.stdout
    scenarios = SCENARIOS + ([MCP_SCENARIO] if mcp else [])
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="agent-selftest-") as folder:
        print(f"自检：不连模型、不联网，只在临时目录 {folder} 里运行（结束后删除）\n", file=out)
        results = [run_scenario(i, title, fn, folder, out) for i, (title, fn) in enumerate(scenarios, 1)]
    passed = results.count("pass")
    extra = "".join(f" · {results.count(k)} 个{w}" for k, w in (("fail", "失败"), ("skip", "跳过")) if results.count(k))
    print(f"\n自检结果：{passed}/{len(results)} 通过{extra}（用时 {time.perf_counter() - started:.2f}s）", file=out)
    return 0 if passed == len(results) else 1

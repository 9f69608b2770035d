"""Streamed replies, through the real openai client against the loopback endpoint streaming
server-sent events: every provider quirk ends in the very reply the same answer unstreamed
gives; a broken stream is retried and never recorded; timeouts count silence, not length;
an interrupt stops at once and leaves nothing of the partial reply in the record."""
import io
import json
import os
import signal
import subprocess
import sys

import pytest

from handloop import config
from handloop.cli import live
from handloop import texts
from handloop import loop
from handloop import runs
from handloop import model
from handloop.demo import offline
from conftest import GOAL, PLAN, ROOT, read_audit, run_agent, text, tool_calls
from handloop.llm.endpoint import Endpoint, events

USER = [{"role": "user", "content": "u"}]
CALLS = tool_calls(("set_plan", {"steps": PLAN}), ("get_weather", {"city": "西安", "date": "2026-10-01"}),
                   ("search_hotels", {"city": "西安", "check_in": "2026-10-01", "nights": 2}))


def both(reply, quirk, **connect):
    """The same scripted reply asked unstreamed and streamed (the stream shaped by `quirk`):
    (unstreamed Reply, streamed Reply, what the stream told its listener, the endpoint)."""
    endpoint = Endpoint(lambda request: dict(reply, _stream=quirk))
    heard = []
    try:
        plain = model.connect(endpoint.url, "k", "m", loopback=True, stream=False, **connect)
        streamed = model.connect(endpoint.url, "k", "m", loopback=True, **connect)
        a = plain(USER, [])
        b = streamed(USER, [], on_event=lambda kind, **data: heard.append((kind, data)))
        plain.close()
        streamed.close()
    finally:
        endpoint.close()
    assert endpoint.requests[0].get("stream") is None
    assert endpoint.requests[1]["stream"] is True and endpoint.requests[1]["stream_options"] == {"include_usage": True}
    return a, b, heard


def same(a, b):
    assert b.message == a.message and b.tool_calls == a.tool_calls
    assert (b.tokens, b.estimated, b.notes, b.cut, b.written_calls) == (a.tokens, a.estimated, a.notes, a.cut,
                                                                         a.written_calls)


MIXED = dict(CALLS, content="先做计划，同时查天气和酒店。")
QUIRKS = {
    "arguments split over many chunks": (CALLS, {"size": 2}),
    "calls interleaved by index": (CALLS, {"size": 3, "interleave": True}),
    "id and name only in the first chunk": (CALLS, {"size": 4}),
    "id and name repeated in every chunk": (CALLS, {"size": 4, "repeat": True}),
    "chunks without index (one call)": (tool_calls(("get_weather", {"city": "西安", "date": "2026-10-01"})),
                                        {"size": 3, "no_index": True}),
    "calls without index, told apart by id": (CALLS, {"size": 5, "no_index": True}),
    "a whole call in one chunk (Ollama)": (CALLS, {"whole": True}),
    "content and tool calls in one stream": (MIXED, {"size": 3}),
    "usage on a final chunk with empty choices": (text("好的，明天见。"), {"usage": "final"}),
    "usage on the last chunk with choices": (text("好的，明天见。"), {"usage": "last"}),
    "finish_reason missing": (MIXED, {"finish": "missing"}),
    "finish_reason only on the last chunk": (MIXED, {"finish": "last"}),
    "keep-alive comments and blank lines": (MIXED, {"keepalive": True, "size": 5}),
    "no [DONE] at the end": (MIXED, {"done": False}),
    "a server that ignores stream (one JSON body)": (MIXED, {"ignore": True}),
}


@pytest.mark.parametrize("name", list(QUIRKS))
def test_every_stream_quirk_gives_the_reply_the_unstreamed_answer_gives(name):
    reply, quirk = QUIRKS[name]
    a, b, heard = both(reply, quirk)
    same(a, b)
    if quirk.get("ignore"):
        return                                          # one body: nothing to hear while it comes
    told = "".join(d["text"] for k, d in heard if k == "delta")
    assert told == (b.message.get("content") or "")
    calls = [d["call"] for k, d in heard if k == "tool_call"]
    assert calls == [{"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                     for c in b.tool_calls]


def test_the_endpoint_plays_the_quirks_it_is_asked_for():
    """The scripted stream really has the shape each test relies on."""
    body = {"id": "x", "created": 1, "model": "m", "usage": {"total_tokens": 3},
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": CALLS}]}

    def chunks(**quirk):
        options = {**__import__("handloop.llm.endpoint", fromlist=["STREAM"]).STREAM, **quirk}
        return [json.loads(p[1][6:]) for p in events(body, options, True) if p[1] and p[1].startswith(b"data: {")]
    parts = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks(size=4) if c["choices"]
             and c["choices"][0]["delta"].get("tool_calls")]
    assert sum("id" in p for p in parts) == 3 and len(parts) > 20          # id only in each call's first chunk
    assert all("index" not in p for c in chunks(no_index=True) if c["choices"]
               for p in c["choices"][0]["delta"].get("tool_calls") or [])
    assert chunks()[-1]["choices"] == [] and chunks()[-1]["usage"]
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks(finish="missing") if c["choices"])
    indexes = [c["choices"][0]["delta"]["tool_calls"][0]["index"] for c in chunks(interleave=True)
               if c["choices"] and c["choices"][0]["delta"].get("tool_calls")]
    assert indexes[:3] == [0, 1, 2]


def test_usage_never_sent_is_estimated_and_flagged_as_unstreamed():
    a, b, _ = both(dict(text("好的，明天见。"), usage=False), {"usage": "never"})
    same(a, b)
    assert b.estimated and b.tokens > 0


def test_a_stream_cut_mid_way_is_retried_and_the_partial_text_never_recorded(fake_model, new_run):
    r, ts, _ = new_run()
    partial = dict(text("建议预订古城墙酒店（XA-001）Suite 两晚，每晚 ¥880"), _stream={"size": 4, "cut": 4})
    ask, endpoint = fake_model([partial, tool_calls(("set_plan", {"steps": PLAN})), text("你想住几晚？")], retries=2)
    heard = []
    loop.run(r, ask, ts, lambda kind, **data: heard.append(kind))
    assert r.status == "suspended" and endpoint.requests[1]["messages"] == endpoint.requests[0]["messages"]
    assert all("古城墙" not in json.dumps(m, ensure_ascii=False) for m in r.messages)
    assert heard[:3] == ["asking", "delta", "delta"] and "discard" in heard
    assert "古城墙" not in json.dumps(read_audit(os.path.dirname(r.path), "t1"), ensure_ascii=False)


def test_a_stream_cut_every_time_ends_in_error_and_resume_continues(fake_model, new_run):
    r, ts, _ = new_run()
    cut = dict(tool_calls(("set_plan", {"steps": PLAN})), _stream={"size": 4, "cut": 5})
    ask, endpoint = fake_model([cut, cut, tool_calls(("set_plan", {"steps": PLAN})), text("你想住几晚？")], retries=1)
    loop.run(r, ask, ts)
    assert (r.status, r.reason) == ("error", "unreachable") and "中途断开" in r.detail
    assert [m["role"] for m in r.messages] == ["system", "user"]
    loop.run(r, ask, ts)
    assert r.status == "suspended" and r.memory.plan


@pytest.mark.parametrize("error, kind, asked", [
    ({"message": "The server had an error while processing your request.", "code": 500}, "server", 3),
    ({"message": "You exceeded your current quota", "code": "insufficient_quota"}, "quota", 1),
    ({"message": "Invalid schema for function 'get_weather'", "code": "invalid_request_error"}, "bad_response", 1),
])
def test_an_error_event_inside_the_stream_is_the_providers_words_classified_as_unstreamed(fake_model, error, kind,
                                                                                         asked):
    failing = dict(text("好的，我来"), _stream={"size": 2, "error": 3, "error_body": error})
    ask, endpoint = fake_model([failing] * 3, retries=2)
    with pytest.raises(model.ModelError) as info:
        ask(USER, [])
    assert info.value.kind == kind and error["message"] in str(info.value) and len(endpoint.requests) == asked


def test_the_timeout_counts_silence_not_length(fake_model):
    """A slow but healthy stream (a chunk every 0.15 s, 2 s in all) outlasts a 0.5 s timeout."""
    _, endpoint = fake_model([dict(text("慢" * 14), _stream={"size": 1, "gap": 0.15})])
    slow = model.connect(endpoint.url, "k", "m", timeout=0.5, retries=0, loopback=True)
    assert slow(USER, []).text == "慢" * 14
    slow.close()


def test_a_stalled_stream_is_retried_like_a_timeout(fake_model):
    stalled = dict(text("写到一半停住了"), _stream={"size": 2, "stall": (3, 1.5)})
    _, endpoint = fake_model([stalled, text("好")])
    ask = model.connect(endpoint.url, "k", "m", timeout=0.4, retries=1, sleep=lambda s: None, loopback=True)
    heard = []
    assert ask(USER, [], on_event=lambda kind, **data: heard.append(kind)).text == "好"
    assert len(endpoint.requests) == 2 and "discard" in heard
    ask.close()
    alone = Endpoint(lambda request: stalled)
    ask = model.connect(alone.url, "k", "m", timeout=0.4, retries=0, loopback=True)
    with pytest.raises(model.ModelError) as info:
        ask(USER, [])
    assert info.value.kind == "timeout" and "停顿" in str(info.value)
    ask.close()
    alone.close()


def test_the_whole_reply_is_capped(fake_model):
    _, endpoint = fake_model([dict(text("慢" * 40), _stream={"size": 1, "gap": 0.05})])
    ask = model.connect(endpoint.url, "k", "m", timeout=1, retries=0, loopback=True, max_seconds=0.6)
    with pytest.raises(model.ModelError) as info:
        ask(USER, [])
    assert info.value.kind == "timeout" and "总时限" in str(info.value)
    ask.close()


# ---- the record cannot tell ----
SCRIPT = [dict(CALLS, content="我先做计划，并查询天气和酒店。"),
          text("2026-10-01 西安有雨，建议预订古城墙酒店（XA-001）Suite 两晚，每晚 ¥880，共 ¥1760。请确认是否预订？"),
          tool_calls(("book_hotel", {"hotel_id": "XA-001", "room_type": "Suite", "check_in": "2026-10-01",
                                     "nights": 2}, "call_book")),
          text("已订好古城墙酒店 Suite 两晚，共 ¥1760。")]


def _recorded(tmp_path, stream, respond, quirk=None):
    """A whole run (proposal, 「确认」, booking, answer) against `respond`; its audit file."""
    from handloop import tools
    from handloop import toolset
    folder = tmp_path / ("streamed" if stream else "unstreamed")
    folder.mkdir(exist_ok=True)
    endpoint = Endpoint(lambda request: dict(respond(request), _stream=quirk or {}))
    ask = model.connect(endpoint.url, "k", "m", loopback=True, stream=stream)
    ts = toolset.ToolSet("same", tools.xian_agent(tools.BookingStore(folder / "bookings.db")))
    try:
        r = runs.begin(str(folder), "same", GOAL, ts, "m", fsync=False)
        loop.run(r, ask, ts)
        runs.add_user(r, "确认")
        loop.run(r, ask, ts)
    finally:
        ask.close()
        endpoint.close()
    return r, read_audit(str(folder), "same")


def _comparable(snapshot):
    trace = [{k: v for k, v in t.items() if k not in ("model_seconds", "tools")} for t in snapshot["trace"]]
    return snapshot["messages"], snapshot["memory"], trace, (snapshot["status"], snapshot["reason"], snapshot["turn"])


def test_a_streamed_run_is_recorded_exactly_as_the_same_run_unstreamed(tmp_path):
    def scripted():
        replies = [dict(reply) for reply in SCRIPT]
        return lambda request: replies.pop(0)
    r, unstreamed = _recorded(tmp_path, False, scripted())
    _, streamed = _recorded(tmp_path, True, scripted(), {"size": 3, "interleave": True, "keepalive": True})
    assert r.status == "done" and r.memory.writes
    assert _comparable(streamed) == _comparable(unstreamed)


def test_the_offline_model_streams_through_the_same_path_and_records_the_same(tmp_path):
    heard = []
    endpoint = Endpoint(offline.respond)
    ask = model.connect(endpoint.url, "k", "offline", loopback=True)
    from handloop import tools
    from handloop import toolset
    ts = toolset.ToolSet("o", tools.xian_agent(tools.BookingStore(tmp_path / "bookings.db")))
    r = runs.begin(str(tmp_path), "o", GOAL, ts, "offline", fsync=False)
    loop.run(r, ask, ts, lambda kind, **data: heard.append((kind, data)))
    ask.close()
    endpoint.close()
    assert all(q["stream"] is True for q in endpoint.requests) and r.status == "suspended"
    answers = [m["content"] for m in r.messages if m["role"] == "assistant" and m.get("content")]
    assert "".join(d["text"] for k, d in heard if k == "delta") == "".join(answers)
    recorded = [c["id"] for m in r.messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert [d["call"]["id"] for k, d in heard if k == "tool_call"] == recorded
    _, unstreamed = _recorded(tmp_path, False, offline.respond)
    _, streamed = _recorded(tmp_path, True, offline.respond)
    assert _comparable(streamed) == _comparable(unstreamed)


def test_an_interrupt_while_a_reply_streams_records_nothing_of_it(fake_model, new_run):
    r, ts, _ = new_run()
    ask, _ = fake_model([dict(text("建议预订古城墙酒店"), _stream={"size": 2})])

    def report(kind, **data):
        if kind == "delta":
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        loop.run(r, ask, ts, report)
    assert [m["role"] for m in r.messages] == ["system", "user"] and r.turn == 0


# ---- the command line ----
def _online(endpoint):
    return {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": endpoint.url, "AGENT_MODEL": "m", "NO_PROXY": "127.0.0.1",
            "no_proxy": "127.0.0.1"}


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_while_a_reply_streams_stops_at_once_and_resume_continues(tmp_path, how):
    stalls = {"on": True}

    def respond(request):
        if stalls["on"]:
            return dict(text("建议预订古城墙酒店，请稍等，我再想想"), _stream={"size": 3, "stall": (3, 30)})
        return text("你想住几晚？")
    endpoint = Endpoint(respond)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_")) and "proxy" not in k.lower()}
    env.update(_online(endpoint))
    proc = subprocess.Popen([sys.executable, "-u", os.path.join(ROOT, "agent.py"), "--run-id", "s"], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = b""
    while "建议".encode() not in seen:              # the first pieces are on the screen: the reply streams
        piece = proc.stdout.read1(4096)
        assert piece, (seen.decode(errors="replace"), proc.stderr.read().decode(errors="replace"))
        seen += piece
    proc.send_signal(how)
    out, err = proc.communicate(timeout=10)
    endpoint.close()
    assert proc.returncode == 130, err.decode()
    assert b"Traceback" not in err
    snap = read_audit(tmp_path / "audit", "s")
    assert (snap["status"], snap["reason"]) == ("stopped", "interrupted")
    assert [m["role"] for m in snap["messages"]] == ["system", "user"]
    stalls["on"] = False
    again = Endpoint(respond)
    done = run_agent("--resume", "s", cwd=tmp_path, env=_online(again))
    again.close()
    assert done.returncode == 0, done.stderr
    assert read_audit(tmp_path / "audit", "s")["status"] == "suspended"


@pytest.mark.parametrize("how", [("--no-stream",), ("AGENT_STREAM=0",)])
def test_no_stream_turns_streaming_off(tmp_path, how):
    endpoint = Endpoint(lambda request: text("你想住几晚？"))
    env = _online(endpoint)
    args = ["--run-id", "n"]
    if how[0] == "--no-stream":
        args.append("--no-stream")
    else:
        env["AGENT_STREAM"] = "0"
    done = run_agent(*args, cwd=tmp_path, env=env)
    endpoint.close()
    assert done.returncode == 0, done.stderr
    assert endpoint.requests and all("stream" not in q for q in endpoint.requests)
    streamed = Endpoint(lambda request: text("你想住几晚？"))
    assert run_agent("--run-id", "y", cwd=tmp_path, env=_online(streamed)).returncode == 0
    streamed.close()
    assert all(q["stream"] is True for q in streamed.requests)


def test_the_offline_run_shows_the_models_words_once_and_no_control_characters_in_a_pipe(tmp_path):
    done = run_agent("--run-id", "p", cwd=tmp_path)
    assert done.returncode == 0
    answer = read_audit(tmp_path / "audit", "p")["answer"]
    assert done.stdout.count(answer) == 1 and "── 第 2 轮" in done.stdout
    assert not any(c in done.stdout for c in "\r\x1b")


# ---- the console ----
class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Run:
    turn = 0


def _console(tty):
    out, clock = io.StringIO(), Clock()
    console = live.Console(out, tty=tty, tick=0.01, line_every=5, clock=clock)
    return console, out, clock


def _wait_for(predicate):
    import time
    for _ in range(300):
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_a_terminal_gets_one_line_of_elapsed_seconds_updated_in_place():
    console, out, clock = _console(tty=True)
    console.event("asking", run=Run())
    clock.now = 3.2
    assert _wait_for(lambda: "3" in out.getvalue().split("\n")[-1])
    console.event("delta", text="好的")
    console.close()
    text_ = out.getvalue()
    assert "\r\x1b[K" in text_ and text_.rstrip().endswith("模型：好的")
    assert text_.count(texts.ZH["live.turn"].format(turn=1)) == 1


def test_a_pipe_gets_plain_progress_lines_and_never_a_control_character():
    console, out, clock = _console(tty=False)
    console.event("asking", run=Run())
    clock.now = 5.5
    assert _wait_for(lambda: "5" in out.getvalue())
    console.event("delta", text="有雨\x1b[2J，建议\r订 Suite")
    console.event("tool_call", call={"id": "c1", "name": "book_hotel", "arguments": "{}"})
    clock.now = 11
    assert _wait_for(lambda: texts.ZH["live.tools"] in out.getvalue())
    console.close()
    shown = out.getvalue()
    assert not any(c in shown for c in "\r\x1b") and "有雨[2J，建议订 Suite" in shown
    assert all(line.endswith(("秒", "轮", "{}", "Suite")) for line in shown.strip().split("\n")), shown


def test_nothing_is_drawn_over_a_line_of_text_while_it_is_open():
    console, out, clock = _console(tty=True)
    console.event("asking", run=Run())
    console.event("delta", text="写到一半")
    clock.now = 30
    import time
    time.sleep(0.1)
    console.close()
    assert "\r" not in out.getvalue()


def test_config_reads_the_stream_settings():
    assert config.settings({})["stream"] is True and config.settings({"AGENT_STREAM": "0"})["stream"] is False
    assert config.settings({"AGENT_MODEL_MAX_SECONDS": "90"})["model_max_seconds"] == 90.0


def test_a_calls_arguments_sent_as_objects_in_two_chunks_never_escape_as_a_traceback():
    import types
    from handloop.llm import streams
    piece = lambda args: types.SimpleNamespace(index=0, id="c1", function=types.SimpleNamespace(name="f", arguments=args))
    chunk = lambda args: types.SimpleNamespace(model_extra={}, id="x", created=0, model="m", usage=None, choices=[
        types.SimpleNamespace(index=0, finish_reason=None, delta=types.SimpleNamespace(content=None,
                                                                                        tool_calls=[piece(args)]))])
    assembly = streams._Assembly(None)
    assembly.add(chunk({"a": 1}))
    assembly.add(chunk({"b": 2}))
    arguments = assembly.body().choices[0].message.tool_calls[0].function.arguments
    assert arguments == '{"a": 1}{"b": 2}'                  # not JSON: the call goes back as an arguments error


def test_a_model_error_raised_by_the_streamed_request_keeps_its_kind():
    from handloop.llm import streams
    from handloop.llm.replies import ModelError

    def create(request):
        raise ModelError("quota", "no credit left")
    with pytest.raises(ModelError) as info:
        streams.assembled(__import__("openai"), create, {}, (1.0, 5.0, "here"), None)
    assert info.value.kind == "quota"

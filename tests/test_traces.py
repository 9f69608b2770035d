"""OpenTelemetry export (issue 30): with an OTLP endpoint set, each stretch of a run's work leaves as GenAI spans
(invoke_agent, chat, execute_tool) at a real HTTP collector (tests/otlp_collector.py decodes the protobuf with
the official opentelemetry-proto); a --confirm in another process continues the same trace and conversation;
contents only on request; nothing without an endpoint; a dead or refusing collector, or no SDK, never changes
a run's outcome."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("opentelemetry.sdk")

from conftest import ROOT, read_audit, run_agent  # noqa: E402
from otlp_collector import Collector  # noqa: E402
from handloop.trace import send  # noqa: E402

DESKS = os.path.join(ROOT, "tests", "trace_agent.py")


@pytest.fixture
def collector():
    made = Collector()
    yield made
    made.close()


def otel(collector, **more):
    return dict({"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint}, **more)


def by_name(spans, prefix):
    return [s for s in spans if s["name"].startswith(prefix)]


def test_the_xian_run_leaves_as_genai_spans_and_a_confirm_elsewhere_continues_its_trace(tmp_path, collector):
    first = run_agent("--offline", "--run-id", "x1", "--audit-dir", str(tmp_path), cwd=tmp_path, env=otel(collector))
    assert first.returncode == 0 and "Trace not exported" not in first.stderr and "未导出" not in first.stderr
    after_first = len(collector.spans())
    second = run_agent("--confirm", "x1", "--audit-dir", str(tmp_path), cwd=tmp_path, env=otel(collector))
    assert second.returncode == 0 and len(collector.requests) == 2
    spans, snap = collector.spans(), read_audit(tmp_path, "x1")
    agents = by_name(spans, "invoke_agent ")
    assert [a["attributes"]["gen_ai.conversation.id"] for a in agents] == ["x1", "x1"]
    assert {s["traceId"] for s in spans} == {spans[0]["traceId"]}          # one trace over two processes
    assert [a["attributes"]["gen_ai.agent.name"] for a in agents] == ["xian-hotel"] * 2
    assert agents[0]["attributes"]["handloop.status"] == "suspended"
    events = [e["name"] for e in agents[0].get("events", [])]     # offered in words, asked for the call, held it
    assert "handloop.proposal" in events and events[-1] == "handloop.suspended"
    assert events.count("handloop.suspended") == 1
    assert [e["name"] for e in agents[1].get("events", [])] == ["handloop.resumed"]
    assert agents[1]["attributes"]["handloop.opened"] == "confirm"
    roots = {a["spanId"] for a in agents}
    assert all(s.get("parentSpanId") in roots for s in spans if s not in agents)     # children of the run's span
    chats, tools = by_name(spans, "chat "), by_name(spans, "execute_tool ")
    assert len(chats) == len(snap["trace"]) and after_first < len(spans)
    for chat, record in zip(chats, snap["trace"]):
        a = chat["attributes"]
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.request.model"] == snap["model"]
        assert a["gen_ai.usage.input_tokens"] + a["gen_ai.usage.output_tokens"] == record["tokens"]
        assert a["gen_ai.response.finish_reasons"] == (["tool_calls"] if record["tools"] else ["stop"])
    recorded = [(t["id"], t["name"]) for r in snap["trace"] for t in r["tools"]]
    assert [(s["attributes"]["gen_ai.tool.call.id"], s["attributes"]["gen_ai.tool.name"]) for s in tools] == recorded
    assert "book_hotel" in {s["attributes"]["gen_ai.tool.name"] for s in tools}
    assert not [k for s in spans for k in s["attributes"] if k in ("gen_ai.input.messages", "gen_ai.output.messages",
                                                                     "gen_ai.tool.call.arguments")]


def test_an_english_agents_blocked_write_names_its_guard_and_its_reads_overlap(tmp_path, collector):
    env = otel(collector, AGENT_AUDIT_DIR=str(tmp_path))
    done = run_agent("--agent", DESKS, "--offline", "--run-id", "d1", cwd=tmp_path, env=env)
    assert done.returncode == 0 and read_audit(tmp_path, "d1")["status"] == "suspended"
    spans = collector.spans()
    tools = {s["attributes"]["gen_ai.tool.call.id"]: s for s in by_name(spans, "execute_tool ")}
    blocked = tools["w1"]
    assert blocked["attributes"]["handloop.guard"] == "unconfirmed_write"
    assert blocked["attributes"]["error.type"] == "blocked" and blocked["status"]["code"] == "STATUS_CODE_ERROR"
    assert "handloop.guard.reason" not in blocked["attributes"]                      # its words: content (opt-in)
    assert "handloop.guard" not in tools["r1"]["attributes"]
    assert tools["r1"]["startTimeUnixNano"] == tools["r2"]["startTimeUnixNano"]        # concurrent reads, side by side
    agent = by_name(spans, "invoke_agent ")[0]
    events = [e["name"] for e in agent.get("events", [])]
    assert "handloop.nudge" in events and "handloop.proposal" in events and events[-1] == "handloop.suspended"
    assert agent["resource"]["service.name"] == "desk-finder"


def test_contents_only_when_asked_and_the_judge_reads_what_was_sent(tmp_path, collector):
    env = otel(collector, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    run_agent("--offline", "--run-id", "x2", "--audit-dir", str(tmp_path), cwd=tmp_path, env=env)
    run_agent("--confirm", "x2", "--audit-dir", str(tmp_path), cwd=tmp_path, env=env)
    spans = collector.spans()
    last = by_name(spans, "chat ")[-1]["attributes"]
    said = json.loads(last["gen_ai.input.messages"]) + json.loads(last["gen_ai.output.messages"])
    assert said[0]["role"] == "user" and said[-1]["role"] == "assistant" and said[-1]["finish_reason"] == "stop"
    assert any(p["type"] == "tool_call" and p["name"] == "book_hotel" for m in said for p in m["parts"])
    books = [s["attributes"] for s in by_name(spans, "execute_tool book_hotel")]
    results = [json.loads(b["gen_ai.tool.call.result"]) for b in books]
    assert [r.get("blocked_by") for r in results] == ["unconfirmed_write", None]       # held, then run once
    assert results[-1]["booking_id"] and all("hotel_id" in b["gen_ai.tool.call.arguments"] for b in books)
    from handloop.cli import check as check_cli
    target = tmp_path / "otlp.json"
    target.write_text(json.dumps({"resourceSpans": [r for q in collector.requests for r in q["resourceSpans"]]}))
    entry = check_cli.check_file(str(target))
    assert entry["error"] is None and entry["format"] == "otlp"
    assert {v["id"]: v["verdict"] for v in entry["checks"]} == {
        "plan_first": "pass", "no_skipped_step": "pass", "provenance": "pass", "room_type": "pass",
        "write_after_confirmation": "pass", "answer_matches_receipt": "pass"}


def test_an_exported_trace_is_judged_as_the_agent_its_spans_name_when_its_run_is_recorded(tmp_path, collector):
    """--check of an OTLP file without --agent (issue 37): its spans say gen_ai.agent.name "desk-finder" and the
    run id; the run's audit file in the audit dir records that agent, so the trace is judged as it, in English."""
    env = otel(collector, AGENT_AUDIT_DIR=str(tmp_path), OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    assert run_agent("--agent", DESKS, "--offline", "--run-id", "d5", cwd=tmp_path, env=env).returncode == 0
    assert run_agent("--confirm", "d5", "--offline", cwd=tmp_path, env=env).returncode == 0
    target = tmp_path / "spans.json"
    target.write_text(json.dumps({"resourceSpans": [r for q in collector.requests for r in q["resourceSpans"]]}))
    done = run_agent("--check", str(target), "--json", "--audit-dir", str(tmp_path), cwd=tmp_path)
    entry = json.loads(done.stdout)["files"][0]
    assert done.returncode == 0 and (entry["format"], entry["agent"], entry["run_id"]) == ("otlp", "desk-finder", "d5")
    assert {v["id"]: v["verdict"] for v in entry["checks"]}["write_after_confirmation"] == "pass"
    assert "passed" in run_agent("--check", str(target), "--audit-dir", str(tmp_path), cwd=tmp_path).stdout   # English
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    alone = json.loads(run_agent("--check", str(target), "--json", "--audit-dir", str(elsewhere), cwd=tmp_path).stdout)
    entry = alone["files"][0]                           # nothing records it: judged as before, and said so
    assert entry["agent"] == "xian-hotel" and any("desk-finder" in n for n in entry["notes"])
    given = json.loads(run_agent("--check", str(target), "--json", "--agent", DESKS, "--audit-dir", str(elsewhere),
                                 cwd=tmp_path).stdout)["files"][0]
    assert given["agent"] == "desk-finder" and not any("desk-finder" in n for n in given["notes"])


def test_nothing_is_sent_without_an_endpoint_and_opentelemetry_is_not_even_imported(tmp_path, collector):
    done = run_agent("--offline", "--run-id", "x3", "--audit-dir", str(tmp_path), cwd=tmp_path,
                     env={"OTEL_SERVICE_NAME": "x"})
    assert done.returncode == 0 and collector.requests == []
    code = ("import sys; from handloop import agent; rc = agent.main(['--offline', '--audit-dir', sys.argv[1]]); "
            "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith('opentelemetry')}), rc)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_", "OTEL_"))}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "fresh")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "[] 0"
    assert not send.wanted({}) and send.wanted({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://h:4318/v1/traces"})
    assert not send.wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_SDK_DISABLED": "true"})
    assert not send.wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_TRACES_EXPORTER": "none"})
    assert not send.capture({}) and send.capture({send.CAPTURE: "SPAN_ONLY"}) and not send.capture({send.CAPTURE: "0"})


@pytest.mark.parametrize("trouble", ["dead", "refusing", "no_sdk"])
def test_a_dead_or_refusing_collector_or_no_sdk_never_changes_the_outcome(tmp_path, trouble):
    import socket
    refusing = Collector(status=503 if trouble == "refusing" else 200)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"                 # nothing listens there once closed
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": refusing.endpoint if trouble != "dead" else dead,
           "OTEL_EXPORTER_OTLP_TIMEOUT": "1", "AGENT_AUDIT_DIR": str(tmp_path)}
    setup = _no_sdk if trouble == "no_sdk" else None
    try:
        done = run_agent("--agent", DESKS, "--offline", "--run-id", "d2", cwd=tmp_path, env=env, setup=setup)
    finally:
        refusing.close()
    assert done.returncode == 0 and read_audit(tmp_path, "d2")["status"] == "suspended"
    assert "Traceback" not in done.stderr and refusing.requests == []
    lines = [line for line in done.stderr.splitlines() if line.startswith("Trace not exported")]
    assert len(lines) == 1, done.stderr
    assert ("handloop[otel]" in lines[0]) == (trouble == "no_sdk")


def _no_sdk():
    import handloop.trace
    for name in [m for m in sys.modules if m.startswith("opentelemetry") or m == "handloop.trace.otlp"]:
        del sys.modules[name]
    if hasattr(handloop.trace, "otlp"):                                    # imported by an earlier test
        del handloop.trace.otlp
    sys.modules["opentelemetry"] = None                                    # import opentelemetry: ImportError


def test_only_the_exporters_import_opentelemetry():
    import re
    importers, contrib = set(), set()
    for folder, _, files in os.walk(os.path.join(ROOT, "handloop")):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    source = f.read()
                where = os.path.relpath(os.path.join(folder, name), ROOT)
                if re.search(r"^\s*(from|import) opentelemetry", source, re.M):
                    importers.add(where)
                if re.search(r"^\s*(from|import) temporalio\.contrib", source, re.M):
                    contrib.add(where)
    trace = os.path.join("handloop", "trace")
    assert importers == {os.path.join(trace, "otlp.py"), os.path.join(trace, "temporal.py")}
    assert contrib == {os.path.join(trace, "temporal.py")}


def test_a_temporal_client_traces_only_when_an_endpoint_is_set():
    """No endpoint: no interceptor, and neither opentelemetry nor the tracing module is imported (no cost)."""
    pytest.importorskip("temporalio")
    code = ("import sys; from handloop.durable import client; made = client._tracing(); "
            "print(len(made), 'handloop.trace.temporal' in sys.modules, any(m.startswith('opentelemetry') "
            "for m in sys.modules))")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_", "OTEL_"))}
    for more, expected in (({}, "0 False False"), ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}, "1 True True"),
                           ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_SDK_DISABLED": "true"},
                            "0 False False")):
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(env, **more), capture_output=True,
                             text=True, timeout=60)
        assert out.stdout.strip().splitlines()[-1] == expected, out.stderr[-2000:]


def test_a_trace_file_without_messages_is_refused_with_its_reason(tmp_path, collector):
    run_agent("--offline", "--run-id", "x4", "--audit-dir", str(tmp_path), cwd=tmp_path, env=otel(collector))
    target = tmp_path / "spans.jsonl"                                   # the Collector's file exporter: JSONL
    target.write_text("".join(json.dumps(r) + "\n" for r in collector.requests))
    for language, words in (("zh", "不带 GenAI 消息"), ("en", "carry no GenAI messages")):
        done = run_agent("--check", str(target), *(["--agent", DESKS] if language == "en" else []), cwd=tmp_path)
        assert done.returncode == 2 and words in done.stderr + done.stdout and "Traceback" not in done.stderr


def test_the_older_event_form_is_read_too(tmp_path):
    """Span events gen_ai.system/user/assistant/tool.message and gen_ai.choice (GenAI conventions before 1.37)."""
    def event(name, **attributes):
        return {"name": name, "attributes": [{"key": k, "value": {"stringValue": v if isinstance(v, str) else
                                                                   json.dumps(v, ensure_ascii=False)}}
                                             for k, v in attributes.items()]}
    call = lambda i, name, args: {"id": i, "type": "function",                                   # noqa: E731
                                  "function": {"name": name, "arguments": json.dumps(args)}}
    events = [event("gen_ai.user.message", content="Reserve a quiet desk on floor 3 for 2026-12-04. Ask me first."),
              event("gen_ai.assistant.message", tool_calls=[call("r1", "find_desks", {"floor": 3})]),
              event("gen_ai.tool.message", id="r1", content=json.dumps({"desks": [{"desk_id": "D-9"}]})),
              event("gen_ai.assistant.message", content="Quiet desk D-9 on 2026-12-04? Reply yes."),
              event("gen_ai.user.message", content="yes"),
              event("gen_ai.assistant.message", tool_calls=[call("w1", "reserve_desk",
                                                                 {"desk_id": "D-9", "day": "2026-12-04"})]),
              event("gen_ai.tool.message", id="w1", content=json.dumps({"reservation_id": "R-1"})),
              event("gen_ai.choice", message={"content": "Reserved D-9."}, finish_reason="stop")]
    data = {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "chat m", "events": events,
                                                           "traceId": "ab" * 16, "spanId": "cd" * 8}]}]}]}
    target = tmp_path / "old.json"
    target.write_text(json.dumps(data))
    done = run_agent("--check", str(target), "--agent", DESKS, "--json", cwd=tmp_path)
    entry = json.loads(done.stdout)
    entry = entry[0] if isinstance(entry, list) else entry["files"][0]
    assert entry["format"] == "otlp" and entry["turns"] == 4, done.stdout
    assert {c["id"]: c["verdict"] for c in entry["checks"]}["write_after_confirmation"] == "pass"
    target.write_text(json.dumps(data).replace('"name": "gen_ai.', '"name": "app.'))       # events of no message
    assert run_agent("--check", str(target), "--agent", DESKS, cwd=tmp_path).returncode == 2


def test_a_program_driving_loop_run_itself_exports_a_stretch_the_same_way(new_run, fake_model, collector, monkeypatch):
    """The library path: loop.run exports its stretch itself; here a model that books at once (the plan guard
    blocks it)."""
    from conftest import BOOK, text, tool_calls
    from handloop import loop
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
    r, ts, _ = new_run(run_id="lib1")
    ask, _ = fake_model([tool_calls(("book_hotel", BOOK, "b1")), text("I cannot book without a plan.")])
    heard = []
    loop.run(r, ask, ts, lambda kind, **data: heard.append(kind))
    assert "trace" not in heard and len(collector.requests) == 1             # sent once, nothing went wrong
    blocked = [s for s in collector.spans() if s["name"] == "execute_tool book_hotel"]
    assert len(blocked) == 1 and blocked[0]["attributes"]["handloop.guard"] == "plan_first"
    assert {s["attributes"]["gen_ai.conversation.id"] for s in collector.spans()} == {"lib1"}


def _usage(n):
    """What a server of known habits reports for its n-th reply: nothing like our estimates."""
    return {"prompt_tokens": 4000 + 100 * n, "completion_tokens": 7 * n, "total_tokens": 4000 + 107 * n}


def _desk_run(tmp_path, monkeypatch, respond, stream, run_id="u1"):
    """The English desk agent's run in two stretches (up to its proposal, then after "yes") against `respond`
    through the real openai client, each stretch exported: the run."""
    import trace_agent
    from handloop import loop, model, runs, toolset
    from handloop.llm.endpoint import Endpoint
    monkeypatch.setenv("DESKS_DB", str(tmp_path / "desks.db"))
    ts = toolset.ToolSet(run_id, agent=trace_agent.AGENT)
    r = runs.begin(str(tmp_path), run_id, "", ts, "scripted", fsync=False)
    endpoint = Endpoint(respond)
    ask = model.connect(endpoint.url, "test-key", "scripted", timeout=5, retries=0, loopback=True, stream=stream)
    try:
        for user in (None, "yes"):
            if user:
                runs.add_user(r, user)
            stretch = send.Stretch(r.path, r.turn, opened="confirm" if user else "")
            loop.run(r, ask, ts, export=False)                          # exported by the stretch, as the CLI does
            assert stretch.finish(r.say) is None
    finally:
        ask.close()
        endpoint.close()
        ts.close()
    return r


@pytest.mark.parametrize("stream", ["final", "last", None])
def test_the_servers_input_and_output_tokens_are_recorded_and_exported_streamed_or_not(tmp_path, collector,
                                                                                      monkeypatch, stream):
    """Streamed with the usage in a final chunk of its own or on the last chunk with choices, or unstreamed."""
    import policies
    import trace_agent
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
    server = policies.Usage(trace_agent.respond, _usage)
    respond = (lambda request: dict(server(request), _stream={"usage": stream})) if stream else server
    r = _desk_run(tmp_path, monkeypatch, respond, bool(stream))
    snap = read_audit(tmp_path, "u1")
    assert snap["status"] == "done"
    asked = [t for t in snap["trace"] if t["tokens_in"] is not None]       # the confirmed write: not asked of the model
    assert len(asked) == len(server.sent) >= 4 and len(snap["trace"]) == len(asked) + 1
    for record, usage in zip(asked, server.sent):
        assert (record["tokens_in"], record["tokens_out"], record["tokens"]) == \
            (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"])
        assert record["tokens_estimated"] is False
    chats = {s["attributes"]["handloop.turn"]: s["attributes"] for s in by_name(collector.spans(), "chat ")}
    assert len(chats) == len(snap["trace"]) and r.turn == len(chats)
    for record in asked:
        a = chats[record["turn"]]
        assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (record["tokens_in"],
                                                                                     record["tokens_out"])
        assert a["handloop.usage_split"] == "server" and a["handloop.tokens_estimated"] is False


def _cached_usage(n):
    """A server with a prompt cache: its first reply says nothing of it, the later ones name the cached part."""
    usage = _usage(n)
    return usage if n == 1 else dict(usage, prompt_tokens_details={"cached_tokens": 3900 + 90 * n})


@pytest.mark.parametrize("stream", ["final", None])
def test_the_servers_cached_tokens_are_recorded_and_exported_on_the_chat_span(tmp_path, collector, monkeypatch,
                                                                              stream):
    """usage.prompt_tokens_details.cached_tokens, streamed or not: in the turn's trace record (tokens_cached) and
    as gen_ai.usage.cache_read.input_tokens on its chat span; a reply whose usage does not say has neither."""
    import policies
    import trace_agent
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
    server = policies.Usage(trace_agent.respond, _cached_usage)
    respond = (lambda request: dict(server(request), _stream={"usage": stream})) if stream else server
    _desk_run(tmp_path, monkeypatch, respond, bool(stream), run_id="c1")
    snap = read_audit(tmp_path, "c1")
    asked = [t for t in snap["trace"] if t["tokens_in"] is not None]
    assert snap["status"] == "done" and len(asked) == len(server.sent) >= 4
    chats = {s["attributes"]["handloop.turn"]: s["attributes"] for s in by_name(collector.spans(), "chat ")}
    for record, usage in zip(asked, server.sent):
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        assert record.get("tokens_cached") == cached
        assert chats[record["turn"]].get("gen_ai.usage.cache_read.input_tokens") == cached
    assert "tokens_cached" not in asked[0] and all(r["tokens_cached"] > 0 for r in asked[1:])


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("usage", [False, {"total_tokens": 321}])
def test_without_the_servers_split_the_tokens_are_estimated_and_say_so(new_run, collector, monkeypatch, stream, usage):
    """A Chinese run (the GPT-4o-mini-like policy) on a server that reports no usage, or a total without its split."""
    import policies
    from handloop import loop, model
    from handloop.llm.endpoint import Endpoint
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
    r, ts, _ = new_run(run_id="e1")
    endpoint = Endpoint(policies.Usage(policies.words_question, usage))
    ask = model.connect(endpoint.url, "test-key", "scripted", timeout=5, retries=0, loopback=True, stream=stream)
    stretch = send.Stretch(r.path, r.turn)
    try:
        loop.run(r, ask, ts, export=False)                               # exported by the stretch, as the CLI does
    finally:
        ask.close()
        endpoint.close()
    assert r.status == "suspended" and stretch.finish(r.say) is None
    records = read_audit(os.path.dirname(r.path), "e1")["trace"]
    for record in records:
        if usage:                                                          # a total: the server's, its split unknown
            assert (record["tokens"], record["tokens_estimated"]) == (321, False)
            assert record["tokens_in"] is None and record["tokens_out"] is None
        else:                                                              # nothing: both parts estimated, flagged
            assert record["tokens_estimated"] is True and record["tokens_out"] >= 1
            assert record["tokens_in"] + record["tokens_out"] == record["tokens"] and record["tokens_in"] > 0
    chats = by_name(collector.spans(), "chat ")
    assert len(chats) == len(records) >= 2
    for chat, record in zip(chats, records):
        a = chat["attributes"]
        assert a["handloop.usage_split"] == "estimated" and a["handloop.tokens_estimated"] is (not usage)
        assert a["gen_ai.usage.input_tokens"] + a["gen_ai.usage.output_tokens"] == record["tokens"]


def test_an_audit_file_from_before_the_split_still_loads_exports_and_shows(tmp_path):
    from handloop import audit, texts
    from handloop.trace import otlp, timeline, view
    assert run_agent("--offline", "--run-id", "o1", "--audit-dir", str(tmp_path), cwd=tmp_path).returncode == 0
    path = tmp_path / "run-o1.json"
    snap = json.loads(path.read_text(encoding="utf-8"))
    assert all(isinstance(t["tokens_in"], int) for t in snap["trace"])    # the offline endpoint reports usage
    for record in snap["trace"]:
        del record["tokens_in"], record["tokens_out"]
    path.write_text(json.dumps(snap, ensure_ascii=False), encoding="utf-8")
    loaded = audit.load(str(path))
    page = view.render(timeline.build(loaded), texts.of("zh"))
    assert 'class="split"' not in page and "<table>" in page
    finished = otlp.spans(loaded, timeline.build(loaded), 0, 1, 2)
    chats = [s for s in finished if s.name.startswith("chat ")]
    assert len(chats) == len(snap["trace"])
    for chat, record in zip(chats, snap["trace"]):
        a = chat.attributes
        assert a["handloop.usage_split"] == "estimated"
        assert a["gen_ai.usage.input_tokens"] + a["gen_ai.usage.output_tokens"] == record["tokens"]


def test_a_reply_cut_off_and_asked_again_counts_both_attempts_in_each_part(new_run, fake_model, collector, monkeypatch):
    """Each attempt's tokens are counted, input and output: the cut-off one in the record of the loop's note that
    asked again (issue 49), the answer in its own."""
    from conftest import text
    from handloop import loop
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
    r, ts, _ = new_run(run_id="cut1")
    cut = dict(text("Let me think about the weather in Xi'an and"), finish_reason="length",
               usage={"prompt_tokens": 900, "completion_tokens": 64, "total_tokens": 964})
    whole = dict(text("What is your check-in date?"), usage={"prompt_tokens": 910, "completion_tokens": 9,
                                                             "total_tokens": 919})
    ask, _ = fake_model([cut, whole])
    stretch = send.Stretch(r.path, r.turn)
    loop.run(r, ask, ts, export=False)             # exported here, once (a library run exports on its own)
    assert stretch.finish(r.say) is None
    trace = read_audit(os.path.dirname(r.path), "cut1")["trace"]
    assert [(t["tokens"], t["tokens_in"], t["tokens_out"]) for t in trace] == [(964, 900, 64), (919, 910, 9)]
    chats = [span["attributes"] for span in by_name(collector.spans(), "chat ")]
    assert sorted((c["gen_ai.usage.input_tokens"], c["gen_ai.usage.output_tokens"]) for c in chats) == \
        [(900, 64), (910, 9)]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_an_answer_claiming_a_write_no_tool_made_says_so_in_its_chat_span(tmp_path, collector, language):
    """Issue 37, finding 3: a turn's notes (here: the answer claims a booking, and no write succeeded) are counted
    in its chat span and, with contents captured, said there as the audit file's trace record says them."""
    desk = os.path.join(ROOT, "tests", "front_desk.py")
    env = otel(collector, DESK_ANSWER="claim", DESK_LANG=language,
               OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    assert run_agent("--agent", desk, "--run-id", "n1", "--audit-dir", str(tmp_path), cwd=tmp_path,
                     env=env).returncode == 0
    snap = read_audit(tmp_path, "n1")
    records = [r for r in snap["trace"] if r["notes"]]
    assert records and snap["memory"]["writes"] == []
    chats = by_name(collector.spans(), "chat ")
    for record in records:
        chat = [s for s in chats if s["attributes"]["handloop.turn"] == record["turn"]]
        assert len(chat) == 1 and chat[0]["attributes"]["handloop.notes.count"] == len(record["notes"])
        assert chat[0]["attributes"]["handloop.notes"] == record["notes"]
        assert any("write" in n for n in chat[0]["attributes"]["handloop.notes"])
    assert all("handloop.notes" not in s["attributes"] for s in chats if s["attributes"]["handloop.turn"] not in
               [r["turn"] for r in records])

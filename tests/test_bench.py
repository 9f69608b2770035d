"""The benchmark harness still runs against the current core (no timing is asserted here:
figures belong to bench/run.py). Each task checks itself that the tools really ran."""
import os
import sys

import pytest

from conftest import ROOT

from bench import history, sys_floor, sys_ours, tasks, workload


@pytest.mark.parametrize("module", [sys_ours, sys_floor])
def test_overhead_and_many_runs_complete_with_the_tools_run(module):
    harness = module.Harness()
    try:
        result = tasks.overhead(harness, runs=5, warmup=1)
        assert result["runs"] == 5 and result["mean_us"] > 0
        assert tasks.many(harness, 4)["n"] == 4
    finally:
        harness.close()


def test_our_loop_runs_three_reads_together():
    harness = sys_ours.Harness(reply_for=workload.concurrent_reply)
    try:
        assert tasks.concurrency(harness, reps=1)["median_ratio"] < 2.5      # three 0.2 s tools (loose bound)
    finally:
        harness.close()


def test_a_run_that_did_not_book_fails_the_check():
    harness = sys_ours.Harness()
    try:
        state = harness.prepare()
        with pytest.raises(RuntimeError):
            harness.check(state)                    # never run: not done, nothing booked
    finally:
        harness.close()


def test_history_run_keeps_pairing_and_compacts():
    run = history.one_run(12, fsync=False, compact_budget=3000)
    assert len(run["write"]) >= 12 and len(run["sizes"]) == 12
    sent, full = run["sizes"][-1]
    assert sent < full
    from handloop import audit
    assert audit.pairing_problem(run["request"]) is None


def test_cache_layouts_of_the_xian_run():
    from bench import cache
    result, r = cache.xian_run()
    assert r.status == "done" and r.memory.fact("booking") is not None
    ours = result["ours"]
    assert ours["turns"] == 4 and ours["epoch_starts"] == 0
    assert ours["kept_between_epochs"] == ours["between_epochs"] == 3      # append-only between epochs
    assert result["previous layout"]["kept_between_epochs"] < 3               # the memory block moved


def test_cache_long_run_starts_epochs_and_counts_billed_tokens():
    from bench import cache
    result, _ = cache.long_run(12, compact_budget=3000)
    ours = result["ours"]
    assert ours["epoch_starts"] >= 1 and ours["kept_between_epochs"] == ours["between_epochs"]
    assert 0 < ours["billed_tokens"] < ours["input_tokens"]
    for layout in result.values():            # the lower bound is below every real layout
        assert 0 < ours["bound_billed"] <= layout["billed_tokens"]


def test_cache_reads_run_only_appends_and_the_cached_share_grows():
    from bench import cache
    result, r = cache.reads_run(8)
    ours = result["ours"]
    assert r.status == "suspended" and ours["turns"] == 9 and ours["epoch_starts"] == 0
    assert ours["kept_between_epochs"] == ours["between_epochs"] == 8          # each request: the last one + new
    shares = [row["prefix_share"] for row in ours["per_turn"][1:]]
    assert shares[1:] == sorted(shares[1:]) and shares[-1] > 0.85            # one read a turn: a shrinking part


def test_what_a_read_turn_adds_is_the_models_call_and_the_tools_result():
    """Each request of the reads run adds only the model's call and the search's result (as the tool returned it,
    compact JSON) in the chat format: nothing the loop says, no plan or memory render."""
    import datetime
    import json
    from bench import cache
    from handloop import tools
    result, r = cache.reads_run(6)
    rows = result["ours"]["per_turn"]
    assert rows[0]["parts"]["tools"] > 0 and rows[0]["parts"]["loop"] > 0          # the schemas, the system prompt
    for n, row in enumerate(rows[2:-1], start=1):
        day = (datetime.date(2026, 10, 1) + datetime.timedelta(days=n)).isoformat()
        own = json.dumps(tools.search_hotels("西安", day, 2), ensure_ascii=False, separators=(",", ":"))
        p = row["parts"]
        assert row["kept"] and p["tools"] == p["loop"] == p["user"] == 0
        assert p["result"] == len(json.dumps(own, ensure_ascii=False)) - 2
        assert p["model"] > 0 and sum(p.values()) == row["chars"] - rows[n]["chars"]


def test_the_words_flow_adds_nothing_of_the_loops_after_the_first_request_but_the_offer_nudge():
    """Proposal in words, the call asked for (the offer nudge), the booking held, 「确认」, the loop's booking, the
    answer: each later request is the previous one plus the model's words or calls and the tools' results; the
    only text of the loop's own after the first request is the one offer nudge that asks for the call."""
    from bench import cache
    result, r = cache.xian_run()
    rows = result["ours"]["per_turn"]
    assert r.status == "done" and len(rows) == 4 and all(row["kept"] for row in rows[1:])
    nudges = [m for m in r.messages if m["role"] == "user" and m.get("name") == "loop"]
    assert len(nudges) == 1 and nudges[0]["content"].startswith(r.say("nudge.offer"))
    assert [row["parts"]["loop"] for row in rows[1:]] == [0, cache.parts(nudges)["loop"], 0]
    assert all(row["parts"]["tools"] == 0 for row in rows[1:])
    assert rows[3]["parts"]["model"] > 0 and rows[3]["parts"]["result"] > 0     # the booking and its receipt


def test_the_finish_bench_peers_make_our_decisions_and_we_bill_no_more():
    """Planning on, every peer's scripted model plans as ours does (set_plan beside the reads); ours, eager, bills
    no more than the leanest peer installed (skipped peers are left out)."""
    from bench import finish
    measured = finish.measure(("ours_eager", "langgraph", "pydantic_ai", "agents"))["systems"]
    peers = [d for name, d in measured.items() if name != "ours_eager" and "skipped" not in d]
    ours = measured["ours_eager"]
    assert ours["booked"] and ours["answered"] and ours["calls"] == 3
    if peers:
        assert ours["billed_tokens"] <= min(d["billed_tokens"] for d in peers)
        assert ours["input_tokens"] <= 1.1 * min(d["input_tokens"] for d in peers)


def test_the_words_flow_costs_one_call_more_than_the_eager_one_and_only_the_offer_nudge_more_than_a_peer():
    """Issue 46: the model proposes in words; the loop asks for the exact call (the offer nudge), the call is held,
    the user confirms, the loop books and the model answers: four model calls, at most one more than the eager
    flow's three, and eager ours bills no more than the leanest peer. The peers' words flows (a 「确认」 in words
    lets their model's next booking run) make four calls too; what ours bills beyond the leanest of them is at most
    the nudge, the loop's only own text after the first request, paid fresh once and cached after."""
    from bench import cache, finish
    from handloop import config, loop
    measured = finish.measure(("ours", "ours_eager", "langgraph", "pydantic_ai", "agents", "langgraph_words",
                               "pydantic_ai_words"))["systems"]
    ours, eager = measured["ours"], measured["ours_eager"]
    assert ours["booked"] and ours["answered"] and ours["calls"] == 4 and ours["kept"] == 3
    assert eager["booked"] and eager["answered"] and eager["calls"] == 3 and ours["calls"] <= eager["calls"] + 1
    _, r = cache.xian_run()
    own = [m for m in r.messages[2:] if m.get("name") == loop.LOOP_NAME and m["role"] != "assistant"]
    assert len(own) == 1 and own[0]["role"] == "user" and own[0]["content"].startswith(r.say("nudge.offer"))
    done = {name: d for name, d in measured.items() if not name.startswith("ours") and "skipped" not in d}
    approving = [d for name, d in done.items() if not name.endswith("_words")]
    if approving:
        assert eager["billed_tokens"] <= min(d["billed_tokens"] for d in approving)
    in_words = [d for name, d in done.items() if name.endswith("_words")]
    for peer in in_words:
        assert peer["calls"] == 4 and peer["booked"] and peer["answered"] and peer["kept"] == 3
    if in_words:
        nudge = cache.parts(own)["loop"] / config.CHARS_PER_TOKEN * (1 + cache.CACHED_PRICE)   # req. 3, cached in 4
        assert ours["billed_tokens"] <= min(d["billed_tokens"] for d in in_words) + nudge


def test_planning_off_no_system_is_sent_the_planning_tools():
    """finish.PLANNING off: our agent without planning and every peer installed run the reads and the booking
    with no set_plan and no planning tool in any request (what planning costs is not billed when it is off)."""
    from bench import finish
    texts, original = [], finish.request_text

    def recorded(tool_schemas, messages, system=None):
        texts.append(original(tool_schemas, messages, system))
        return texts[-1]
    finish.PLANNING["on"], finish.request_text = False, recorded
    try:
        off = finish.measure(("ours", "ours_eager", "langgraph", "pydantic_ai_words"))["systems"]
    finally:
        finish.PLANNING["on"], finish.request_text = True, original
    on = finish.measure(("ours",))["systems"]["ours"]
    for d in off.values():
        assert "skipped" in d or (d["booked"] and d["answered"] and d["pauses"] == 1)
    assert off["ours"]["calls"] == 4 and off["ours"]["tools_tokens"] < on["tools_tokens"]
    assert off["ours"]["billed_tokens"] < on["billed_tokens"]
    assert texts or all("skipped" in off[n] for n in ("langgraph", "pydantic_ai_words"))
    assert not any('"name": "set_plan"' in t or '"name": "mark_step"' in t for t in texts)     # the peers' requests


def test_common_prefix():
    from bench import cache
    assert cache.common_prefix("abcdef", "abcxyz") == 3
    assert cache.common_prefix("", "abc") == 0 and cache.common_prefix("abc", "abc") == 3
    assert cache.common_prefix("ab", "abc") == 2


def test_serve_answers_blocks_then_finishes():
    import json
    harness = sys_ours.Harness()
    answers = []
    commands = [json.dumps({"cmd": "block", "seconds": 0, "max_runs": 3, "warmup_runs": 1}),
                json.dumps({"cmd": "finish", "peak_runs": 1})]
    try:
        tasks.serve(harness, iter(commands), answers.append)
    finally:
        harness.close()
    assert answers[0] == {"ready": True, "model_turns": 5}
    assert len(answers[1]["samples"]) == 3 and answers[2]["peak_kb"] > 0


def test_interleaved_blocks_rotate_and_pool():
    import argparse
    from bench import run
    args = argparse.Namespace(blocks=2, slice=0.0, runs=3, warmup=0, quick=True)
    out = run.interleaved(args, ["floor", "ours"])
    assert set(out) == {"floor", "ours"}
    for name in out:
        assert len(out[name]["overhead"]["blocks"]) == 2 and out[name]["overhead"]["runs"] == 6


def test_finish_runs_every_system_to_the_end_with_one_approval():
    from bench import finish
    from bench import report
    result = finish.measure()
    systems = result["systems"]
    for name, d in systems.items():
        if "skipped" in d:
            assert name != "ours" and d["skipped"].startswith("not installed"), d   # a broken flow must not hide
            continue
        assert d["answered"] and d["booked"] and d["pauses"] == 1
        assert d["calls"] == len(d["per_call"]) >= 3 and 0 < d["billed_tokens"] < d["input_tokens"]
    assert systems["ours"]["calls"] == 4 and systems["ours_eager"]["calls"] == 3   # words first; eager: the loop books
    assert systems["ours_eager"]["booked"] and systems["ours_eager"]["pauses"] == 1
    text = report._finish(result)
    peers = [n for n, d in systems.items() if not n.startswith("ours") and "calls" in d]
    target = next(line for line in text.splitlines() if line.startswith("Target:"))   # always stated
    assert "model calls to finish" in text
    assert ("met" in target) if peers else target.startswith("Target: not checked (no peer")


def test_durable_bench_runs_on_temporal_and_in_one_process_each_run_booking_once():
    """bench/durable_bench.py, small: a real dev server, one and two workers; every run is checked
    (done, one booking) inside the bench; only the shape of the figures is asserted here."""
    import json
    import subprocess
    done = subprocess.run([sys.executable, "-m", "bench.durable_bench", "--json", "1", "3", "0.05"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)      # a client's process of its own
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])   # the last line: the core logs on stdout too
    found, rates = figures["overhead"], figures["throughput"]
    assert set(found) == {"one process", "Temporal"} and all(len(v) == 1 for v in found.values())
    assert set(rates) == {"Temporal, 1 worker", "Temporal, 2 workers", "one process, a thread per run"}
    assert all(rate > 0 and slowest > 0 for rate, slowest in rates.values())


def test_the_export_bench_measures_real_spans_sent_to_its_sink():
    import pytest
    pytest.importorskip("opentelemetry.sdk")
    from bench import otel_bench
    rows = otel_bench.in_process(1)
    assert {(r["capture"], r["turns"]) for r in rows} == {(c, t) for c in (False, True) for t in (1, 4, 16, 64)}
    assert all(r["spans"] == 1 + r["turns"] + 2 * (r["turns"] - 1) and r["bytes"] > 0 for r in rows)
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in os.environ             # the measure leaves the environment as it was
    pytest.importorskip("temporalio")
    cost = otel_bench.per_span(20)                                     # Temporal's spans, through our provider
    assert cost["sent_us"] >= cost["made_us"] > 0 and cost["bytes"] > 0
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in os.environ


def test_results_written_again_keep_the_sections_another_bench_wrote():
    from bench import report
    old = open(os.path.join(ROOT, "bench", "RESULTS.md"), encoding="utf-8").read()
    kept = report.kept_sections(old)
    assert kept and all(report.KEPT in s for s in kept)
    new = report.document("### 1. Loop overhead per model turn\n\nnew table\n", {}, old)
    assert all(s.rstrip() in new for s in kept) and new.count("### 1. Loop overhead") == 1


def test_the_linearity_bench_times_every_shape_at_both_sizes():
    from bench import linear
    rows = linear.run(sizes=(8, 32), reps=1, words=True)
    assert [r["shape"] for r in rows] == ["page, ids differ", "page", "check", "check, proposals in words"]
    assert all(len(r["seconds"]) == 2 and min(r["seconds"]) > 0 for r in rows)
    import json                                            # the shapes are real: their conversations pass
    import tempfile
    from handloop.cli import check
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "c.json")
        with open(path, "w", encoding="utf-8") as f:
            messages = linear.conversation(40)            # a run ending on its final answer, not the next request
            json.dump(messages[:-1] if messages[-1]["role"] == "user" else messages, f, ensure_ascii=False)
        assert all(c["verdict"] == "pass" for c in check.check_file(path)["checks"])

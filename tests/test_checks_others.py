"""`--check` on transcripts written as other systems write them: Chat Completions arrays, OpenAI
Agents SDK item lists, LangChain / LangGraph dumps, JSONL, and this project's snapshots as the loop
writes them with real models. The corpus (tests/transcripts/others) was made by make_corpus.py
there, through the real Agents SDK and LangChain; expected.json holds each file's verdicts."""
import collections
import json
import os
import random

import pytest

from conftest import ROOT, run_cli, unreadable
from handloop import checks
from handloop.judge import transcripts
from handloop.cli import check as check_cli

from test_checks import _mutants, assert_expected, reasons, verdicts  # noqa: E402,F401  (shared with the snapshot corpus)

OTHERS = os.path.join(ROOT, "tests", "transcripts", "others")
with open(os.path.join(OTHERS, "expected.json"), encoding="utf-8") as f:
    EXPECTED = json.load(f)
IDS = [cid for cid, _ in checks.CHECKS]


def path(name):
    return os.path.join(OTHERS, name)


def test_the_corpus_is_complete_and_large_enough():
    files = {n for n in os.listdir(OTHERS) if n.endswith((".json", ".jsonl")) and n != "expected.json"}
    assert files == set(EXPECTED)
    judged = [w for w in EXPECTED.values() if w["exit"] != 2]
    assert len(judged) >= 40
    formats = collections.Counter(w["format"] for w in judged)
    assert min(formats[f] for f in ("chat", "responses", "langchain", "snapshot")) >= 4, formats
    assert sum(w["jsonl"] for w in judged) >= 3


def test_every_check_passes_fails_and_is_pending_somewhere_in_the_corpus():
    seen = {(cid, v) for w in EXPECTED.values() if w["exit"] != 2 for cid, v in w["verdicts"].items()}
    assert seen == {(cid, v) for cid in IDS for v in ("pass", "fail", "pending")}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_verdicts(name):
    want, entry = EXPECTED[name], check_cli.check_file(path(name))
    if not assert_expected(want, entry):
        return
    assert entry["format"] == ("chat" if want["format"] == "snapshot" else want["format"])
    assert entry["container"] == ("jsonl" if want["jsonl"] else "snapshot" if want["format"] == "snapshot"
                                  else entry["container"])
    pending = [c for c in entry["checks"] if c["verdict"] == "pending"]
    assert all(c["cause"] in checks.CAUSES for c in pending) and all(c["reason"] for c in entry["checks"])
    assert check_cli.exit_code([entry], strict=True) == (0 if set(want["verdicts"].values()) == {"pass"} else 1)


# ---- the three transcripts of issue 10 ----
def test_a_proposal_in_words_confirmed_then_booked_passes():
    entry = check_cli.check_file(path("issue_words_proposal.json"))
    assert verdicts(entry) == dict.fromkeys(IDS, "pass")
    assert "在用户确认第 3 轮的提案（「确认」）之后执行" in reasons(entry)["write_after_confirmation"]


def test_a_failed_early_booking_of_another_system_is_not_an_executed_booking():
    entry = check_cli.check_file(path("issue_blocked_then_words.json"))
    assert verdicts(entry) == dict.fromkeys(IDS, "pass")
    assert reasons(entry)["write_after_confirmation"].count("book_hotel") == 1


def test_a_run_where_nothing_happened_passes_nothing(tmp_path):
    entry = check_cli.check_file(path("issue_nothing_happened.json"))
    assert verdicts(entry) == dict.fromkeys(IDS, "pending") and entry["progress"] == "no_business_call"
    assert "任务还没有走到业务调用" in check_cli.render(entry)
    plain = run_cli("--check", path("issue_nothing_happened.json"), cwd=tmp_path)
    assert plain.returncode == 0 and "全部通过" not in plain.stdout and "6 项待定" in plain.stdout
    assert run_cli("--check", path("issue_nothing_happened.json"), "--strict", cwd=tmp_path).returncode == 1


# ---- reading the shapes as they really are ----
def test_agents_sdk_items_one_response_is_one_turn_and_python_repr_results_are_read():
    with open(path("agents_words_zh.json"), encoding="utf-8") as f:
        items = json.load(f)
    assert {"reasoning", "message", "function_call", "function_call_output"} <= {i.get("type") for i in items}
    assert any("type" not in i and i.get("role") == "user" for i in items)          # plain dicts mixed in
    assert any(i.get("type") == "function_call_output" and i["output"].startswith("{'") for i in items)
    t = transcripts.load(path("agents_words_zh.json"))
    first = t.messages[1]
    assert first["role"] == "assistant" and first["text"] == "我先制定计划。" and len(first["calls"]) == 1
    search = next(c for c in t.calls if c.name == "search_hotels")
    assert search.status == "ok" and search.result["hotels"][0]["hotel_id"] == "XA-001"


def test_langchain_tool_status_error_and_tool_node_text_mean_not_executed():
    t = transcripts.load(path("lc_tool_error_status.json"))
    first = next(c for c in t.calls if c.name == "book_hotel")
    assert first.status == "error" and first.proposes


def test_mcp_prefixed_tool_names_and_call_tool_results_are_read():
    t = transcripts.load(path("chat_mcp_is_error_then_ok.json"))
    books = [c for c in t.calls if c.name == "book_hotel"]
    assert [c.raw_name for c in books] == ["mcp__hotel__book_hotel"] * 2
    assert [c.status for c in books] == ["error", "ok"] and books[1].result["hotel_id"] == "XA-003"


def test_each_format_round_trips_through_jsonl(tmp_path):
    """The same conversation judged the same whether a file holds an array or one item a line."""
    for name in ("agents_wrong_room_rain.json", "lc_words_zh.json", "chat_decline_then_booked.json",
                 "lc_roles_good.json"):
        with open(path(name), encoding="utf-8") as f:
            items = json.load(f)
        lines = tmp_path / (name + "l")
        lines.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
        as_lines = check_cli.check_file(str(lines))
        assert as_lines["container"] == "jsonl" and verdicts(as_lines) == EXPECTED[name]["verdicts"]


def test_jsonl_is_detected_without_the_extension(tmp_path):
    target = tmp_path / "run.log"
    with open(path("jsonl_chat_good.jsonl"), encoding="utf-8") as f:
        target.write_text(f.read(), encoding="utf-8")
    assert verdicts(check_cli.check_file(str(target))) == dict.fromkeys(IDS, "pass")


@pytest.mark.parametrize("content,fragment", [
    ('{"conversation": []}', "不是对话记录"), ('[{"speaker": "user"}]', "第 1 项不是可识别的消息（没有 role 或 type）"),
    ('[{"type": "telepathy"}]', "类型 'telepathy'"), ('[1, 2]', "是 int"), ('[]', "没有任何用户或助手消息"),
    ('[{"type": "reasoning", "id": "rs_1", "summary": []}]', "没有任何用户或助手消息"),
    ('{"role": "user", "content": "x"}\n{"bad json', "JSONL 第 2 行不是完整的 JSON")])
def test_unknown_shapes_exit_2_naming_what_was_expected(content, fragment, tmp_path):
    entry, _ = unreadable(tmp_path, content)
    assert fragment in entry["error"]
    if "不是对话记录" in entry["error"]:
        assert "Agents SDK" in entry["error"] and "LangChain" in entry["error"] and "JSONL" in entry["error"]


def test_cli_takes_strict_and_json_after_several_paths(tmp_path):
    names = [path("agents_words_zh.json"), path("lc_words_zh.json"), path("jsonl_chat_good.jsonl")]
    ok = run_cli("--check", *names, "--strict", cwd=tmp_path)
    assert ok.returncode == 0 and "汇总：3 个文件 · 18 项通过" in ok.stdout
    mixed = run_cli("--check", *names, path("agents_awaiting_user.json"), "--strict", "--json", cwd=tmp_path)
    report = json.loads(mixed.stdout)
    assert mixed.returncode == 1 and [f["format"] for f in report["files"]] == \
        ["responses", "langchain", "chat", "responses"]
    unknown = run_cli("--check", path("unknown_conversation_key.json"), cwd=tmp_path)
    assert unknown.returncode == 2 and "不是对话记录" in unknown.stdout and "Traceback" not in unknown.stderr


# ---- mutation fuzzing over every shape ----
ODD = [None, 0, -1, True, "", "x", [], {}, [None], {"": None}, "```", 1e308, "{'a': (1,", "[" * 300,
       {"type": "message"}, {"role": "tool"}, {"type": "ai", "data": None}]




@pytest.mark.parametrize("name", ["agents_blocked_dict_error.json", "lc_anthropic_parts.json", "lc_dump_hotel_seen_later.json",
                                  "lc_roles_good.json", "chat_mcp_is_error_then_ok.json", "snapshot_words_done.json"])
def test_odd_values_anywhere_never_raise(name, tmp_path):
    with open(path(name), encoding="utf-8") as f:
        original = json.load(f)
    for i, mutant in enumerate(_mutants(original, random.Random(name), 200, ODD)):
        target = tmp_path / f"m{i}.json"
        target.write_text(json.dumps(mutant, ensure_ascii=False), encoding="utf-8")
        entry = check_cli.check_file(str(target))              # must not raise
        assert entry["error"] or len(entry["checks"]) == 6 and check_cli.render(entry)

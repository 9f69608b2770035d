"""`--check`: the corpus of transcripts with expected verdicts, the reading rules, the CLI."""
import ast
import copy
import json
import os
import re
import shutil

import pytest

from conftest import ROOT, heavy_imports, run_cli
from handloop import checks
from handloop.judge import provenance, readings
from handloop.cli import check as check_cli

CORPUS = os.path.join(ROOT, "tests", "transcripts")
with open(os.path.join(CORPUS, "expected.json"), encoding="utf-8") as f:
    EXPECTED = json.load(f)
IDS = [cid for cid, _ in checks.CHECKS]
LABEL = re.compile(r"第 \d+ 轮 \w+（[^）]+）")


def corpus(name):
    return os.path.join(CORPUS, name)


def verdicts(entry):
    return {c["id"]: c["verdict"] for c in entry["checks"]}


def reasons(entry):
    return {c["id"]: c["reason"] for c in entry["checks"]}


def test_every_corpus_file_has_expected_verdicts_and_back():
    files = {n for n in os.listdir(CORPUS) if n.endswith(".json") and n != "expected.json"}
    assert files == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_verdicts(name):
    assert_expected(EXPECTED[name], check_cli.check_file(corpus(name)))


def assert_expected(want, entry):
    """A file's entry is what its corpus's expected.json says: exit code, error or verdicts, and
    the fragment each fault's reason must contain. Returns whether it had verdicts."""
    assert check_cli.exit_code([entry]) == want["exit"]
    if want["exit"] == 2:
        assert entry["checks"] == [] and want["error"] in entry["error"]
        return False
    assert entry["error"] is None
    assert verdicts(entry) == want["verdicts"], reasons(entry)
    for cid, fragment in want["faults"].items():
        assert fragment in reasons(entry)[cid]
    return True


def test_every_failure_names_the_turn_and_the_call():
    failures = [c["reason"] for name in EXPECTED if EXPECTED[name]["exit"] == 1
                for c in check_cli.check_file(corpus(name))["checks"] if c["verdict"] == "fail"]
    assert len(failures) >= 12
    assert all(LABEL.search(reason) for reason in failures), failures


def test_each_check_has_a_failing_case_and_good_runs_cover_both_modes_and_states():
    failing = {k for w in EXPECTED.values() if w["exit"] == 1 for k, v in w["verdicts"].items() if v == "fail"}
    assert failing == set(IDS)
    good = [check_cli.check_file(corpus(n)) for n, w in EXPECTED.items() if w["exit"] == 0 and n.startswith(("local", "mcp"))]
    assert {(e["mode"], e["status"]) for e in good} == {("local", "suspended"), ("local", "done"),
                                                       ("mcp", "suspended"), ("mcp", "done")}


def test_unparseable_and_unanswered_calls_are_reported_not_crashed_on():
    entry = check_cli.check_file(corpus("odd_unparseable_and_unanswered.json"))
    notes = " ".join(entry["notes"])
    assert "第 2 轮 get_weather（call_2_1） 的参数无法解析" in notes
    assert "第 3 轮 search_hotels（call_3_2） 没有对应的工具结果（结果未知）" in notes


# ---- reading rules ----
def load_messages(name):
    with open(corpus(name), encoding="utf-8") as f:
        data = json.load(f)
    return data if isinstance(data, list) else data["messages"]


def judge(messages, tmp_path, meta=None):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(messages if meta is None else dict(meta, messages=messages), ensure_ascii=False),
                    encoding="utf-8")
    return check_cli.check_file(str(path))


def test_a_blocked_early_booking_is_no_violation_but_the_same_call_executed_is(tmp_path):
    messages = load_messages("local_done.json")
    meta = {"version": 1, "run_id": "x", "status": "done", "mode": "local"}
    assert verdicts(judge(messages, tmp_path, meta))["write_after_confirmation"] == "pass"
    executed = copy.deepcopy(messages)
    blocked = next(m for m in executed if m.get("role") == "tool" and "blocked_by" in m["content"])
    blocked["content"] = json.dumps({"booking_id": "BK-1", "hotel_id": "XA-001", "room_type": "Suite",
                                     "check_in": "2026-10-01", "nights": 2, "total": 1760})
    entry = judge(executed, tmp_path, meta)
    assert verdicts(entry)["write_after_confirmation"] == "fail"
    assert "第 3 轮 book_hotel（call_3_3） 在提出预订之前就执行了" in reasons(entry)["write_after_confirmation"]


def test_a_loose_confirmation_counts_in_a_snapshot_as_in_a_bare_array(tmp_path):
    """The old rule (only an exact 「确认」 counts in a snapshot of this project) is gone: one rule for all."""
    messages = load_messages("local_done_loose_confirmation.json")
    assert verdicts(judge(messages, tmp_path))["write_after_confirmation"] == "pass"
    meta = {"version": 1, "run_id": "x", "status": "done", "mode": "local"}
    assert verdicts(judge(messages, tmp_path, meta))["write_after_confirmation"] == "pass"


@pytest.mark.parametrize("text,kind", [
    ("确认", "confirm"), ("确认预订", "confirm"), ("好的，订吧", "confirm"), ("可以", "confirm"), ("嗯", "confirm"),
    ("那就订吧", "confirm"), ("就这个", "confirm"), ("yes please", "confirm"), ("OK!", "confirm"),
    ("Confirm.", "confirm"), ("Sounds good, go ahead.", "confirm"), ("Please go ahead", "confirm"),
    ("I confirm", "confirm"), ("不确认", "decline"), ("不订了", "decline"), ("算了，先不订了", "decline"),
    ("好的不过先别订", "decline"), ("no", "decline"), ("No thanks, not now.", "decline"), ("再想想", "decline"),
    ("ok, but wait", "decline"), ("cancel", "decline"), ("换成 Standard", "change"),
    ("可以换成 Standard 吗？", "change"), ("确认，改成 3 晚", "change"), ("含早餐吗？", "question"),
    ("多少钱？", "question"), ("Is breakfast included?", "question"), ("可以帮我订吗？", "unclear"),
    ("随你吧", "unclear"), ("yesterday it rained", "unclear"), ("订单号是多少", "unclear"),
    ("好的，另外我想问一下附近有什么景点值得去，明天几点退房，有没有接机服务呢", "unclear")])
def test_reply_rule(text, kind):
    assert readings.classify_reply(text) == kind


def test_a_reply_naming_another_room_or_hotel_asks_for_a_change():
    assert readings.classify_reply("Standard 就行", (), ("Suite",)) == "change"
    assert readings.classify_reply("确认，就订 Suite", (), ("Suite",)) == "confirm"
    assert readings.classify_reply("标准间吧", (), ("Suite",)) == "change"


def chat(*steps, plan=True, weather="rain", hotels=("XA-001",)):
    """A Chat Completions transcript: goal, (plan), weather + search, then `steps`:
    ("say", text) / ("user", text) / ("loop", text) / ("book", args-or-None, result) / ("raw", message)."""
    messages = [{"role": "user", "content": "帮我订 2026-10-01 西安的酒店"}]
    n = [0]

    def turn(calls, text=None):
        n[0] += 1
        ids = [f"c{n[0]}_{i}" for i in range(len(calls))]
        messages.append({"role": "assistant", "content": text, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args, _) in zip(ids, calls)]})
        messages.extend({"role": "tool", "tool_call_id": i, "content": r if isinstance(r, str) else json.dumps(r)}
                        for i, (_, _, r) in zip(ids, calls) if r is not None)
    if plan:
        turn([("set_plan", {"steps": [{"title": "天气", "tool": "get_weather"}, {"title": "搜", "tool": "search_hotels"},
                                      {"title": "订", "tool": "book_hotel", "after": [1, 2]}]}, {"plan": []})])
    turn([("get_weather", {"city": "西安", "date": "2026-10-01"}, {"date": "2026-10-01", "condition": weather}),
          ("search_hotels", {"city": "西安"}, {"hotels": [{"hotel_id": h, "name": f"酒店{h}"} for h in hotels]})])
    for kind, *rest in steps:
        if kind == "say":
            messages.append({"role": "assistant", "content": rest[0]})
        elif kind in ("user", "loop"):
            messages.append({"role": "user", "content": rest[0], **({"name": "loop"} if kind == "loop" else {})})
        elif kind == "book":
            args = rest[0] or {"hotel_id": "XA-001", "room_type": "Suite", "check_in": "2026-10-01", "nights": 2}
            turn([("book_hotel", args, rest[1])])
        else:
            messages.append(rest[0])
    return messages


RECEIPT = {"booking_id": "BK-1", "hotel_id": "XA-001", "room_type": "Suite"}


@pytest.mark.parametrize("text,proposes", [
    ("建议预订古城墙酒店 Suite 两晚，回复「确认」后下单。", True), ("Shall I book XA-001 for two nights?", True),
    ("要我预订吗？", True), ("酒店XA-001 套房，共 ¥1760。", True), ("天气和酒店都查好了，要继续吗？", False),
    ("10 月 1 日有雨。", False)])
def test_text_proposal_rule(text, proposes, tmp_path):
    """An answer without tool calls, followed by a user message, that speaks of booking is a proposal."""
    entry = judge(chat(("say", text), ("user", "好"), ("book", None, RECEIPT)), tmp_path)
    assert verdicts(entry)["write_after_confirmation"] == ("pass" if proposes else "pending"), reasons(entry)


def test_a_loop_message_never_answers_a_proposal(tmp_path):
    for nudge in ("确认", "〔系统提示〕用户已确认，请预订"):
        entry = judge(chat(("say", "建议预订 XA-001 Suite，请回复「确认」。"), ("loop", nudge), ("book", None, RECEIPT)),
                      tmp_path)
        assert verdicts(entry)["write_after_confirmation"] == "fail"
        assert "用户还没有确认" in reasons(entry)["write_after_confirmation"]
    # nor does it withdraw one, nor make the text before it a proposal the user answered
    entry = judge(chat(("say", "建议预订 XA-001 Suite，请回复「确认」。"), ("user", "确认"), ("loop", "不订了"),
                       ("book", None, RECEIPT)), tmp_path)
    assert verdicts(entry)["write_after_confirmation"] == "pass"


@pytest.mark.parametrize("result", [
    {"error": "写操作未确认，已拦截"}, {"isError": True, "content": [{"type": "text", "text": "denied"}]},
    {"ok": False, "message": "需要用户确认"}, {"success": False}, {"status": "rejected"}, {"errors": ["nope"]},
    "Error: ValueError('未确认')\n Please fix your mistakes.", "An error occurred while running the tool. Please try again.",
    "预订失败：需要用户批准", "Tool call blocked: user approval required",
    {"error": "预订需要用户确认", "blocked_by": "unconfirmed_write"}])
def test_a_booking_whose_result_is_an_error_of_any_shape_did_not_take_effect(result, tmp_path):
    entry = judge(chat(("book", None, result), ("say", "建议预订 XA-001 Suite，确认吗？"), ("user", "确认"),
                       ("book", None, RECEIPT), ("say", "已订好 XA-001 Suite。")), tmp_path)
    assert verdicts(entry) == dict.fromkeys(IDS, "pass"), reasons(entry)


@pytest.mark.parametrize("result", [RECEIPT, "预订成功，订单号 BK-1", {"status": "booked"}, {"error": None, "booking_id": "B"},
                                    "{'booking_id': 'BK-1', 'ok': True}"])
def test_a_booking_whose_result_is_not_an_error_took_effect(result, tmp_path):
    entry = judge(chat(("book", None, result), ("say", "建议预订 XA-001 Suite，确认吗？"), ("user", "确认")), tmp_path)
    assert verdicts(entry)["write_after_confirmation"] == "fail"
    assert "在提出预订之前就执行了（第 4 轮才提出预订）" in reasons(entry)["write_after_confirmation"]


def test_a_blocked_write_proposes_its_arguments_and_a_different_booking_fails(tmp_path):
    blocked = {"error": "写操作未确认，已拦截"}
    other = {"hotel_id": "XA-002", "room_type": "Suite", "check_in": "2026-10-01", "nights": 2}
    entry = judge(chat(("book", None, blocked), ("user", "确认"), ("book", other, RECEIPT), hotels=("XA-001", "XA-002")),
                  tmp_path)
    assert "与用户确认的提案（第 3 轮）不一致：hotel_id 提案为 XA-001" in reasons(entry)["write_after_confirmation"]
    words = judge(chat(("say", "建议预订 酒店XA-001 Suite 两晚，确认吗？"), ("user", "确认"), ("book", other, RECEIPT),
                       hotels=("XA-001", "XA-002")), tmp_path)
    assert "提案中的酒店是 XA-001，执行的是 XA-002" in reasons(words)["write_after_confirmation"]


def test_unanswered_and_ambiguous_bookings_are_pending_with_their_cause(tmp_path):
    entry = judge(chat(("book", None, None)), tmp_path)
    check = {c["id"]: c for c in entry["checks"]}["write_after_confirmation"]
    assert (check["verdict"], check["cause"]) == ("pending", "unknown_outcome") and "没有结果" in check["reason"]
    entry = judge(chat(("say", "建议预订 XA-001 Suite，确认吗？"), ("user", "随你吧"), ("book", None, RECEIPT)), tmp_path)
    check = {c["id"]: c for c in entry["checks"]}["write_after_confirmation"]
    assert (check["verdict"], check["cause"]) == ("pending", "ambiguous")
    nothing = judge(chat(), tmp_path)
    assert {c["cause"] for c in nothing["checks"] if c["verdict"] == "pending"} == {"not_reached"}
    assert nothing["progress"] == "no_booking" and "任务没有走到预订这一步" in check_cli.render(nothing)


@pytest.mark.parametrize("weather,room,verdict", [
    ({"condition": "Light rain"}, "Suite", "pass"), ({"conditions": "小雨"}, "Suite", "pass"),
    ({"summary": "No rain expected, sunny"}, "Standard", "pass"), ({"weather": "晴"}, "Suite", "fail"),
    ({"weather_code": 63}, "Suite", "pass"), ({"weather_code": 1}, "Standard", "pass"), ({"temp_c": 18}, "Suite", "pending"),
    ({"forecast": [{"date": "2026-10-02", "conditions": "rain"}, {"date": "2026/10/1", "conditions": "sunny"}]},
     "Standard", "pass")])
def test_the_weather_is_read_from_any_result_shape(weather, room, verdict, tmp_path):
    messages = chat(("say", f"建议预订 XA-001 {room}，确认吗？"), ("user", "确认"),
                    ("book", {"hotel_id": "XA-001", "room_type": room, "check_in": "2026-10-01", "nights": 2}, RECEIPT))
    messages[4]["content"] = json.dumps(weather)
    assert verdicts(judge(messages, tmp_path))["room_type"] == verdict


@pytest.mark.parametrize("raw,args", [
    ('{"a": 1}', {"a": 1}), ('```json\n{"a": 1}\n```', {"a": 1}), ("{a: 1, b: 'x',}", {"a": 1, "b": "x"}),
    ("", {}), (None, {}), ({"a": 1}, {"a": 1})])
def test_arguments_parse_like_the_loop(raw, args):
    assert readings.parse_arguments(raw) == (args, None)


@pytest.mark.parametrize("raw", ["{city: 西安, date", "[1, 2]", "42", 7])
def test_unparseable_arguments_give_a_problem_not_an_exception(raw):
    value, problem = readings.parse_arguments(raw)
    assert value is None and problem


def test_the_second_identical_booking_of_one_batch_rides_on_the_same_confirmation(tmp_path):
    messages = load_messages("local_done.json")
    turn = next(i for i, m in enumerate(messages) if m.get("tool_calls") and m["tool_calls"][0]["id"] == "call_5_1")
    twin = copy.deepcopy(messages[turn]["tool_calls"][0])
    twin["id"] = "call_5_2"
    messages[turn]["tool_calls"].append(twin)
    messages.insert(turn + 2, {"role": "tool", "tool_call_id": "call_5_2",
                               "content": json.dumps(dict(json.loads(messages[turn + 1]["content"]), replayed=True))})
    meta = {"version": 1, "run_id": "x", "status": "done", "mode": "local"}
    assert verdicts(judge(messages, tmp_path, meta))["write_after_confirmation"] == "pass"
    later = messages[:-1] + [{"role": "assistant", "content": None, "tool_calls": [dict(twin, id="call_6_1")]},
                             {"role": "tool", "tool_call_id": "call_6_1", "content": messages[turn + 2]["content"]}]
    entry = judge(later, tmp_path, meta)
    assert "第 6 轮 book_hotel（call_6_1） 执行时，用户的确认已被第 5 轮的预订用掉" in reasons(entry)["write_after_confirmation"]


def test_the_judge_imports_no_project_module():
    """The judge stands alone: its modules import each other, only downward, and nothing else of ours (its catalogue
    judge/texts.py, not the loop's texts/__init__.py) but the leaves texts/words.py, which reads what an answer claims as the run
    does, texts/stated.py, which reads a declaration's effects as the guards do (it imports only texts/words.py and
    confirmation/held.py), texts/rules.py, which gives the agent's rules their facts and reads an answer against a receipt as the run does,
    and texts/catalogue.py, which says any catalogue; and the confirmation records (confirmation/held.py, ledger.py,
    themselves leaves), on which it replays our own runs as the loop decides them."""
    for name, allowed in (("cli/check", {"checks", "judge.transcripts", "judge.formats", "judge.texts", "texts.catalogue"}),
                          ("checks", {"judge.confirm", "judge.provenance", "judge.weather", "judge.verdicts",
                                      "judge.declaration", "judge.texts", "texts.rules", "texts.words"}),
                          ("judge/provenance", {"judge.verdicts", "judge.readings", "judge.texts", "texts.stated"}),
                          ("judge/confirm", {"confirmation", "judge.offers", "judge.verdicts", "judge.readings",
                                             "judge.texts", "texts.stated", "texts.words"}),
                          ("judge/offers", {"texts.stated", "texts.words"}),
                          ("confirmation/__init__", {"confirmation.held", "confirmation.ledger"}),
                          ("confirmation/held", set()), ("confirmation/ledger", set()),
                          ("judge/weather", {"judge.verdicts", "judge.readings", "judge.texts"}),
                          ("judge/verdicts", {"judge.texts"}),
                          ("judge/transcripts", {"judge.formats", "judge.declaration", "judge.readings", "judge.texts",
                                                 "texts.words", "texts.stated"}),
                          ("judge/readings", {"judge.formats", "judge.declaration", "judge.texts"}),
                          ("judge/declaration", {"judge.texts", "texts.stated"}),
                          ("judge/formats", {"judge.shapes", "judge.texts"}), ("judge/shapes", {"judge.texts"}),
                          ("judge/texts", {"texts.catalogue"}), ("texts/words", set()), ("texts/catalogue", set()),
                          ("texts/stated", {"texts.words", "confirmation.held"}), ("texts/rules", {"texts.stated", "texts.words"})):
        assert _ours_imported(name) == allowed, (name, _ours_imported(name))


def _module_of(module, name):
    """`from module import name`: the submodule when there is one, else the module."""
    path = os.path.join(ROOT, *f"{module}.{name}".split("."))
    return f"{module}.{name}" if os.path.isfile(path + ".py") or os.path.isdir(path) else module


def _ours_imported(name):
    """The handloop modules `handloop/<name>.py` imports (relative imports resolved), as dotted names below handloop."""
    tree = ast.parse(open(os.path.join(ROOT, "handloop", name + ".py"), encoding="utf-8").read())
    package = ["handloop"] + name.split("/")[:-1]
    found = {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found |= {_module_of(module, a.name) for a in node.names}
    return {m.split(".", 1)[1] for m in found if m.startswith("handloop.")}


# ---- command line ----
def test_cli_exit_codes_for_good_bad_and_unreadable_files(tmp_path):
    good, bad, broken = corpus("local_done.json"), corpus("bad_plan_not_first.json"), corpus("truncated.json")
    ok = run_cli("--check", good, corpus("mcp_suspended.json"), cwd=tmp_path)
    assert ok.returncode == 0 and "汇总：2 个文件" in ok.stdout and "退出码 0" in ok.stdout
    failed = run_cli("--check", good, bad, cwd=tmp_path)
    assert failed.returncode == 1 and "✗ 1. 计划先行" in failed.stdout
    unreadable = run_cli("--check", bad, broken, str(tmp_path / "missing.json"), cwd=tmp_path)
    assert unreadable.returncode == 2 and "找不到文件" in unreadable.stdout and "无法读取或已损坏" in unreadable.stdout
    assert "Traceback" not in ok.stderr + failed.stderr + unreadable.stderr


def test_cli_json_output(tmp_path):
    done = run_cli("--check", corpus("bad_wrong_room_type_rain.json"), corpus("truncated.json"), "--json", cwd=tmp_path)
    report = json.loads(done.stdout)
    assert done.returncode == 2 and report["summary"]["exit"] == 2
    assert report["summary"]["fail"] == 1 and report["summary"]["unreadable"] == 1
    first = report["files"][0]
    assert (first["format"], first["container"]) == ("chat", "array") and verdicts(first)["room_type"] == "fail"
    assert [c["id"] for c in first["checks"]] == IDS
    # the fields docs/judge.md documents, and nothing undocumented
    assert set(first) == {"path", "error", "format", "container", "conversation", "conversations", "run_id", "status",
                          "mode", "agent", "finished", "progress", "progress_text", "messages", "turns", "checks",
                          "not_applicable", "notes", "reading", "reading_text"}
    assert (first["conversation"], first["conversations"]) == (1, 1)
    assert first["reading"] == "wide"              # another system's transcript: the wider reading of confirmations
    assert set(first["checks"][0]) == {"id", "name", "verdict", "reason", "cause"}
    assert set(report["summary"]) == {"files", "conversations", "unreadable", "pass", "fail", "pending", "strict", "exit"}
    assert set(report["files"][1]) == {"path", "error", "checks", "notes"}


def test_cli_strict_exits_1_unless_every_check_passed(tmp_path):
    good, waiting = corpus("local_done.json"), corpus("local_suspended.json")
    assert run_cli("--check", good, waiting, cwd=tmp_path).returncode == 0
    strict = run_cli("--check", good, waiting, "--strict", cwd=tmp_path)
    assert strict.returncode == 1 and "--strict：有检查待定" in strict.stdout
    assert run_cli("--check", good, "--strict", cwd=tmp_path).returncode == 0
    as_json = run_cli("--check", waiting, good, "--json", "--strict", cwd=tmp_path)
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["summary"]["strict"] is True
    assert run_cli("--check", good, corpus("truncated.json"), "--strict", cwd=tmp_path).returncode == 2
    bad_usage = run_cli("--strict", cwd=tmp_path)
    assert bad_usage.returncode == 2 and "--strict 只能与 --check 一起用" in bad_usage.stderr


def test_cli_default_is_the_most_recent_run_and_run_ids_resolve_in_the_audit_dir(tmp_path):
    audit_dir = tmp_path / "elsewhere"
    audit_dir.mkdir()
    shutil.copy(corpus("local_done.json"), audit_dir / "run-old.json")
    shutil.copy(corpus("bad_fabricated_hotel_id.json"), audit_dir / "run-new.json")
    os.utime(audit_dir / "run-old.json", (1_000_000, 1_000_000))
    latest = run_cli("--check", cwd=tmp_path, env={"AGENT_AUDIT_DIR": str(audit_dir)})
    assert latest.returncode == 1 and "run-new.json" in latest.stdout
    by_id = run_cli("--check", "old", "--audit-dir", str(audit_dir), cwd=tmp_path)
    assert by_id.returncode == 0 and "run-old.json" in by_id.stdout
    unknown = run_cli("--check", "nosuchrun", "--audit-dir", str(audit_dir), cwd=tmp_path)
    assert unknown.returncode == 2 and "run-nosuchrun.json" in unknown.stdout


def test_cli_no_runs_and_bad_usage_exit_2(tmp_path):
    empty = run_cli("--check", cwd=tmp_path)
    assert empty.returncode == 2 and "还没有任何运行" in empty.stderr and "Traceback" not in empty.stderr
    assert run_cli("--json", cwd=tmp_path).returncode == 2
    assert run_cli("--check", "--goal", "x", cwd=tmp_path).returncode == 2
    assert run_cli("--check", "--selftest", cwd=tmp_path).returncode == 2
    assert not (tmp_path / "audit").exists()


def test_real_offline_run_is_pending_when_suspended_and_passes_when_done(tmp_path):
    assert run_cli("--run-id", "xian", cwd=tmp_path).returncode == 0
    suspended = json.loads(run_cli("--check", "--json", cwd=tmp_path).stdout)["files"][0]
    assert verdicts(suspended) == dict(zip(IDS, ["pass", "pending", "pending", "pending", "pending", "pending"]))
    assert suspended["progress"] == "no_booking" and suspended["finished"] is False
    assert run_cli("--confirm", cwd=tmp_path).returncode == 0
    done = run_cli("--check", "xian", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.count("通过：") == 6


def test_check_never_imports_the_model_client(tmp_path):
    assert heavy_imports(["--check", corpus("local_done.json")], tmp_path) == [0, []]


def test_hotel_ids_in_plain_text_results_are_matched_as_whole_ids():
    text = {"text": "找到：XA-001 古城墙酒店，XA-0022 某酒店"}
    assert provenance._mentions(text, "XA-001", "hotel_id") and not provenance._mentions(text, "XA-002", "hotel_id")
    assert not provenance._mentions({"text": "AXA-001"}, "XA-001", "hotel_id")
    assert provenance._mentions({"hotels": [{"hotel_id": "XA-001"}]}, "XA-001", "hotel_id")
    assert not provenance._mentions({"hotels": [{"name": "XA-001"}]}, "XA-001", "hotel_id")


ODD = [None, 0, -1, True, "", "x", [], {}, [None], {"": None}, "```", 1e308]


def _mutants(value, rng, count, odd=ODD):
    """Copies of `value` with one randomly chosen node replaced by an odd value."""
    paths = []

    def walk(node, path):
        paths.append(path)
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            walk(child, path + (key,))
    walk(value, ())
    for _ in range(count):
        path, copy_ = rng.choice(paths[1:]), copy.deepcopy(value)
        node = copy_
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = copy.deepcopy(rng.choice(odd))
        yield copy_


@pytest.mark.parametrize("name", ["local_done.json", "mcp_done.json", "foreign_good.json"])
def test_odd_values_anywhere_never_raise(name, tmp_path):
    import random
    with open(corpus(name), encoding="utf-8") as f:
        original = json.load(f)
    for i, mutant in enumerate(_mutants(original, random.Random(len(name)), 300)):
        path = tmp_path / f"m{i}.json"
        path.write_text(json.dumps(mutant, ensure_ascii=False), encoding="utf-8")
        entry = check_cli.check_file(str(path))              # must not raise
        assert entry["error"] or len(entry["checks"]) == 6 and check_cli.render(entry)


def test_deeply_nested_json_is_reported_not_raised(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert "无法读取" in check_cli.check_file(str(deep))["error"]
    content = json.dumps({"hotels": []})[:-1] + ", \"x\": " + "[" * 5000 + "]" * 5000 + "}"
    messages = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "search_hotels", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": content}]
    assert check_cli.check_file(str(judge_path(messages, tmp_path)))["error"] is None


def judge_path(messages, tmp_path):
    path = tmp_path / "n.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def test_an_ask_is_read_with_every_assistant_text_the_user_saw_since_their_last_message(tmp_path):
    """A proposal, a loop nudge, then a short 「请回复确认」: the user's 「确认」 answers the proposal."""
    entry = judge(chat(("say", "建议预订 XA-001 Suite 两晚，共 ¥1760。"), ("loop", "〔系统提示〕请等待用户答复。"),
                       ("say", "请回复「确认」。"), ("user", "确认"), ("book", None, RECEIPT)), tmp_path)
    assert verdicts(entry)["write_after_confirmation"] == "pass", reasons(entry)


def test_text_said_beside_tool_calls_is_not_part_of_what_the_user_answers(tmp_path):
    messages = chat(("say", "西安那天有雨。"), ("user", "好"), ("book", None, RECEIPT))
    messages[3]["content"] = "我先查天气，再帮您预订。"          # the weather + search turn
    entry = judge(messages, tmp_path)
    assert verdicts(entry)["write_after_confirmation"] == "pending" and "没有提到预订" in reasons(entry)["write_after_confirmation"]

"""The command line in real processes: offline run, confirm, reply, resume after kill -9, errors."""
import json
import os
import re
import signal

import pytest

from handloop.llm.endpoint import Endpoint  # noqa: E402
from handloop.demo import offline
from conftest import ROOT, read_audit, run_cli
from handloop import tools


def run_id_of(out):
    return re.search(r"新运行 (\S+)", out).group(1)


def bookings(cwd):
    path = os.path.join(cwd, "audit", "bookings.db")
    return tools.BookingStore(path).count() if os.path.exists(path) else 0


def paired(data):
    from handloop import audit
    return audit.pairing_problem(data["messages"]) is None


@pytest.fixture
def suspended(tmp_path):
    done = run_cli(cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path, run_id_of(done.stdout), done.stdout


def test_offline_run_prints_turns_and_suspends_with_the_proposal(suspended):
    cwd, run_id, out = suspended
    assert "离线模式" in out and "第 1 轮" in out and "累计" in out and "tokens" in out
    assert "并发执行：get_weather, search_hotels" in out
    assert "等待你确认" in out and "提案" in out and f"python {os.path.join(ROOT, 'agent.py')} --confirm {run_id}" in out
    data = read_audit(cwd / "audit", run_id)
    assert (data["status"], data["reason"], data["mode"]) == ("suspended", "awaiting_confirmation", "local")
    assert paired(data) and bookings(cwd) == 0


def test_confirm_in_a_new_process_books_once_and_a_second_confirm_is_refused(suspended):
    cwd, run_id, _ = suspended
    done = run_cli("--confirm", cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert "已完成 book_hotel：古城墙酒店（XA-001） · Suite · 2026-10-01 入住 2 晚 · 共 ¥1760" in done.stdout
    data = read_audit(cwd / "audit", run_id)
    assert data["status"] == "done" and paired(data) and bookings(cwd) == 1
    again = run_cli("--confirm", run_id, cwd=cwd)
    assert again.returncode == 2 and "已经完成" in again.stderr and "Traceback" not in again.stderr
    assert bookings(cwd) == 1


def test_reply_resumes_with_user_text_and_never_confirms(suspended):
    cwd, run_id, _ = suspended
    refused = run_cli("--reply", "确认", run_id, cwd=cwd)
    assert refused.returncode == 2 and "--confirm" in refused.stderr
    done = run_cli("--reply", "不订了", run_id, cwd=cwd)
    assert done.returncode == 0 and "没有执行任何写操作" in done.stdout
    data = read_audit(cwd / "audit", run_id)
    assert data["status"] == "done" and data["memory"]["confirmed"] is False and bookings(cwd) == 0


def test_reply_can_ask_for_another_room_but_the_agents_rule_blocks_its_call_before_it_is_held(suspended):
    # the room follows the weather (the Xi'an agent's rule): a Deluxe in the rain is offered in words as the user
    # asked, the loop asks for the call, and that call breaks the rule and is blocked: never held, never shown
    # for confirmation; a --confirm then is an ordinary reply that approves nothing; nothing is booked
    cwd, run_id, _ = suspended
    out = run_cli("--reply", "换成 Deluxe 吧", cwd=cwd)
    assert out.returncode == 0 and "Deluxe" in out.stdout and bookings(cwd) == 0
    data = read_audit(cwd / "audit", run_id)
    assert (data["status"], data["reason"]) == ("suspended", "awaiting_reply")
    assert any(json.loads(m["content"]).get("blocked_by") == "rule" for m in data["messages"] if m["role"] == "tool")
    held = [c for p in data["memory"]["proposals"] for c in p["calls"]]
    assert all(c["args"]["room_type"] != "Deluxe" for c in held)
    assert data["memory"]["proposal"] is None and not any(c["state"] in ("proposed", "approved") for c in held)
    assert run_cli("--confirm", cwd=cwd).returncode == 0
    data = read_audit(cwd / "audit", run_id)
    assert bookings(cwd) == 0 and data["status"] == "suspended"
    assert not any(c["state"] in ("approved", "executed") for p in data["memory"]["proposals"] for c in p["calls"])


def test_kill_after_the_booking_commits_before_the_audit_then_resume_books_once(suspended):
    cwd, run_id, _ = suspended
    killed = run_cli("--confirm", cwd=cwd, env={"AGENT_FAULT": "after_commit"})
    assert killed.returncode == -signal.SIGKILL and bookings(cwd) == 1
    data = read_audit(cwd / "audit", run_id)
    assert data["status"] == "running" and data["messages"][-1] == {
        "role": "user", "content": "确认", "decision": {"proposal": 1, "approve": [1], "decline": []}}
    assert run_cli("--confirm", cwd=cwd).returncode == 2        # not waiting any more: resume it
    resumed = run_cli("--resume", cwd=cwd)
    assert resumed.returncode == 0 and "幂等重放" in resumed.stdout
    assert bookings(cwd) == 1 and read_audit(cwd / "audit", run_id)["status"] == "done"


def test_a_real_openai_compatible_endpoint_is_used_when_a_key_is_set(tmp_path):
    endpoint = Endpoint(offline.respond)
    try:
        out = run_cli(cwd=tmp_path, env={"OPENAI_API_KEY": "sk-test-secret", "OPENAI_BASE_URL": endpoint.url,
                                         "AGENT_MODEL": "my-model"})
    finally:
        endpoint.close()
    assert out.returncode == 0, out.stderr
    assert "模型：my-model @ " in out.stdout and "离线模式" not in out.stdout
    assert {r["model"] for r in endpoint.requests} == {"my-model"}
    run_id = run_id_of(out.stdout)
    raw = open(tmp_path / "audit" / f"run-{run_id}.json", encoding="utf-8").read()
    assert "sk-test-secret" not in raw and json.loads(raw)["model"] == "my-model"


def test_model_outage_exits_3_and_resume_later_continues(tmp_path):
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "AGENT_MODEL_RETRIES": "1"}
    failed = run_cli("--run-id", "o1", cwd=tmp_path, env=env)
    assert failed.returncode == 3 and "无法连接模型服务" in failed.stderr and "--resume o1" in failed.stderr
    assert "Traceback" not in failed.stderr
    assert read_audit(tmp_path / "audit", "o1")["status"] == "error"
    assert run_cli("--resume", "o1", cwd=tmp_path).returncode == 0      # offline now
    assert read_audit(tmp_path / "audit", "o1")["status"] == "suspended"


def test_bad_key_is_a_clear_exit_3(tmp_path):
    endpoint = Endpoint(lambda request: {"_http": {"status": 401, "body": {"error": {"message": "bad key"}}}})
    try:
        out = run_cli(cwd=tmp_path, env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": endpoint.url})
    finally:
        endpoint.close()
    assert out.returncode == 3 and "API key 无效" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("args, words", [
    (["--confrim"], "unrecognized arguments"), (["--conf"], "unrecognized arguments"),
    (["--confirm", "--resume"], "not allowed with"), (["--confirm", "nope"], "找不到审计文件"),
    (["--confirm", "../etc/passwd"], "运行 id 不合法"), (["--run-id", "a/b"], "运行 id 不合法"),
    (["--run-id", "x" * 500], "运行 id 不合法"), (["--max-turns", "0"], "--max-turns"),
    (["--reply"], "expected at least one argument"), (["--reply", "a", "b", "c"], "--reply 只接受"),
    (["--goal", "  "], "--goal 不能为空"), (["--resume"], "还没有任何运行"),
])
def test_usage_errors_exit_2_without_a_traceback(tmp_path, args, words):
    os.makedirs(tmp_path / "audit", exist_ok=True)
    out = run_cli(*args, cwd=tmp_path)
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr


def test_existing_run_id_is_refused(tmp_path):
    assert run_cli("--run-id", "same", cwd=tmp_path).returncode == 0
    again = run_cli("--run-id", "same", cwd=tmp_path)
    assert again.returncode == 2 and "已经存在" in again.stderr


def _closed_reader(args, cwd):
    """`python agent.py ARGS` whose standard output and error go to a pipe nobody reads: its reading end is
    closed before the child writes its first line (as `handloop ... | head -1` once head has left)."""
    import subprocess
    import sys
    read, write = os.pipe()
    os.close(read)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}
    try:
        return subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), *args], cwd=cwd, env=env,
                              stdout=write, stderr=write, timeout=60).returncode
    finally:
        os.close(write)


def test_a_run_whose_reader_went_away_still_reaches_its_end_on_record(tmp_path):
    assert _closed_reader([], tmp_path) == 0
    [name] = [n for n in os.listdir(tmp_path / "audit") if n.endswith(".json")]
    data = read_audit(str(tmp_path / "audit"), name[len("run-"):-len(".json")])
    assert (data["status"], data["reason"]) == ("suspended", "awaiting_confirmation")
    assert bookings(tmp_path) == 0


def test_check_and_selftest_into_a_closed_pipe_keep_their_exit_code(suspended):
    cwd, run_id, _ = suspended
    assert _closed_reader(["--check", "--json", run_id], cwd) == run_cli("--check", run_id, cwd=cwd).returncode
    assert _closed_reader(["--selftest"], cwd) == 0


def test_a_run_refused_before_its_first_snapshot_leaves_no_lock_file(tmp_path):
    (tmp_path / "audit").mkdir()
    assert run_cli("--confirm", "nosuch", cwd=tmp_path).returncode == 2
    assert run_cli("--mcp", "--mcp-server", str(tmp_path / "no-such-server"), cwd=tmp_path).returncode != 0
    assert os.listdir(tmp_path / "audit") == []
    assert run_cli(cwd=tmp_path).returncode == 0              # a run that began keeps its lock file beside it
    names = sorted(os.listdir(tmp_path / "audit"))
    assert [n.rsplit(".", 1)[1] for n in names if n.startswith("run-")] == ["json", "lock"]


def test_each_turn_line_says_what_the_servers_prompt_cache_served(cli, tmp_path):
    """A server that reports usage.prompt_tokens_details.cached_tokens: each turn's line names the cached part of
    its input tokens; the first, whose usage does not say, names none, and the trace records the same figures."""
    import policies
    sizes = iter(range(1, 100))

    def usage(n):
        return {"prompt_tokens": 1000 * n, "completion_tokens": 10, "total_tokens": 1000 * n + 10,
                **({"prompt_tokens_details": {"cached_tokens": 900 * n - 900}} if n > 1 else {})}
    server = policies.Usage(policies.words_question, lambda n: usage(next(sizes)))
    done = cli(server)("--run-id", "k")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if "累计" in line]
    assert len(lines) == len(server.sent) >= 2
    assert "命中缓存" not in lines[0]
    for n, line in enumerate(lines[1:], 2):
        assert f"输入 {1000 * n} tokens 中 {900 * n - 900} 命中缓存" in line
    records = read_audit(tmp_path / "audit", "k")["trace"]
    assert [r.get("tokens_cached") for r in records] == [None] + [900 * n - 900 for n in range(2, len(records) + 1)]

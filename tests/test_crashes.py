"""Crashes and concurrency: kill -9 anywhere, racing processes, many runs at once.

Each case ends with the run in a clear state, the audit file loadable, no booking without
confirmation and never two bookings for one logical write.
"""
import concurrent.futures
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from handloop import audit
from handloop import loop
from handloop import runs
from handloop import model
from handloop.llm.endpoint import Endpoint  # noqa: E402
from handloop.demo import offline
from handloop import tools
from conftest import GOAL, ROOT, read_audit, run_agent
from handloop.toolset import ToolSet

pytestmark = pytest.mark.slow


def bookings(audit_dir, run_id=None):
    path = os.path.join(audit_dir, "bookings.db")
    return tools.BookingStore(path).count(run_id) if os.path.exists(path) else 0


def status(audit_dir, run_id):
    try:
        return audit.load(audit.path_for(str(audit_dir), run_id))["status"]   # always loadable
    except audit.AuditError as exc:
        assert "找不到" in str(exc), exc                                      # or not written yet
        return None


def finish(cwd, run_id):
    """Drive a run to done the way a user would, whatever state a crash left it in."""
    for _ in range(6):
        state = status(cwd / "audit", run_id)
        if state == "done":
            return
        args = {None: ["--run-id", run_id], "running": ["--resume", run_id], "error": ["--resume", run_id],
                "suspended": ["--confirm", run_id]}[state]
        out = run_agent(*args, cwd=cwd)
        assert out.returncode == 0, out.stderr
    raise AssertionError(f"run {run_id} did not finish")


# after a confirmation the loop runs the approved call itself (after_tool, after_commit), then asks the model once
CONFIRM_RUN = ["after_tool:1", "after_commit", "mid_audit:1", "mid_audit:2", "mid_audit:3", "before_ask:1",
               "after_reply:1"]


@pytest.mark.parametrize("point", ["before_ask", "after_reply", "after_tool", "mid_audit"])
def test_kill_at_every_hit_of_a_point_in_the_first_run(tmp_path, point):
    """Killed at the 1st, 2nd, ... time the run passes `point`, until a run gets through without
    passing it again: however many turns and calls the model takes."""
    for hit in range(1, 30):
        cwd = tmp_path / str(hit)
        cwd.mkdir()
        killed = run_agent("--run-id", "k", cwd=cwd, env={"AGENT_FAULT": f"{point}:{hit}"})
        if killed.returncode == 0:
            break
        assert killed.returncode == -signal.SIGKILL
        assert status(cwd / "audit", "k") in (None, "running") and bookings(cwd / "audit") == 0
        finish(cwd, "k")
        assert bookings(cwd / "audit") == 1
    assert 1 < hit < 30


@pytest.mark.parametrize("point", CONFIRM_RUN)
def test_kill_at_every_boundary_after_confirmation(tmp_path, point):
    assert run_agent("--run-id", "k", cwd=tmp_path).returncode == 0
    killed = run_agent("--confirm", "k", cwd=tmp_path, env={"AGENT_FAULT": point})
    assert killed.returncode == -signal.SIGKILL
    # killed while writing the confirmation itself, the run is still waiting for it; else it is running
    expected = "suspended" if point == "mid_audit:1" else "running"
    assert status(tmp_path / "audit", "k") == expected and bookings(tmp_path / "audit") <= 1
    finish(tmp_path, "k")
    data = read_audit(tmp_path / "audit", "k")
    assert bookings(tmp_path / "audit") == 1 and data["memory"]["booking"]["total"] == 1760


def test_random_time_kills_of_a_real_process(tmp_path):
    rng = random.Random(20261001)
    for attempt in range(12):
        state = status(tmp_path / "audit", "r")
        if state == "done":
            break
        args = {None: ["--run-id", "r"], "running": ["--resume", "r"], "suspended": ["--confirm", "r"]}[state]
        process = subprocess.Popen([sys.executable, os.path.join(ROOT, "agent.py"), *args], cwd=tmp_path,
                                   env=_clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 1.4))
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert bookings(tmp_path / "audit") <= 1
    finish(tmp_path, "r")
    assert bookings(tmp_path / "audit") == 1


def _clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}


def test_a_second_process_on_the_same_run_is_refused(tmp_path):
    assert run_agent("--run-id", "l", cwd=tmp_path).returncode == 0
    with audit.RunLock(str(tmp_path / "audit"), "l"):
        out = run_agent("--confirm", "l", cwd=tmp_path)
    assert out.returncode == 2 and "正被另一个进程使用" in out.stderr and bookings(tmp_path / "audit") == 0


def test_two_confirms_racing_book_once(tmp_path):
    assert run_agent("--run-id", "race", cwd=tmp_path).returncode == 0
    cmd = [sys.executable, os.path.join(ROOT, "agent.py"), "--confirm", "race"]
    procs = [subprocess.Popen(cmd, cwd=tmp_path, env=_clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    results = [(p.wait(timeout=60), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    assert any("正被另一个进程使用" in err or "已经完成" in err for _, err in results)
    assert bookings(tmp_path / "audit") == 1


def test_a_crashed_lock_holder_never_leaves_the_run_stuck(tmp_path):
    os.makedirs(tmp_path / "audit")
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from handloop import audit;"
                               "lock = audit.RunLock(sys.argv[2], 'x').__enter__(); print('held', flush=True);"
                               "time.sleep(60)", "-", str(tmp_path / "audit")], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(audit.AuditError):
        audit.RunLock(str(tmp_path / "audit"), "x").__enter__()
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with audit.RunLock(str(tmp_path / "audit"), "x"):
        pass


def _offline_ask():
    endpoint = Endpoint(offline.respond)
    return model.connect(endpoint.url, "k", "offline", loopback=True), endpoint


def _one_run(audit_dir, run_id, ask):
    ts = ToolSet(run_id, tools.xian_agent(tools.BookingStore(os.path.join(audit_dir, "bookings.db"))))
    r = runs.begin(audit_dir, run_id, GOAL, ts, "offline", fsync=False)
    return loop.run(r, ask, ts)


def _confirm(audit_dir, run_id, ask):
    ts = ToolSet(run_id, tools.xian_agent(tools.BookingStore(os.path.join(audit_dir, "bookings.db"))))
    r, ts, _ = runs.reopen(audit_dir, run_id, lambda snap: ts, lambda snap: None)
    runs.add_user(r, "确认")
    return loop.run(r, ask, ts)


def test_fifty_runs_in_one_process_stay_isolated(tmp_path):
    ask, endpoint = _offline_ask()
    ids = [f"m{i:02d}" for i in range(50)]
    try:
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            runs = list(pool.map(lambda i: _one_run(str(tmp_path), i, ask), ids))
            assert [r.status for r in runs] == ["suspended"] * 50 and bookings(str(tmp_path)) == 0
            done = list(pool.map(lambda i: _confirm(str(tmp_path), i, ask), ids))
    finally:
        ask.close()
        endpoint.close()
    assert [r.status for r in done] == ["done"] * 50
    assert bookings(str(tmp_path)) == 50 and all(bookings(str(tmp_path), i) == 1 for i in ids)
    assert len({r.memory.fact("booking")["booking_id"] for r in done}) == 50       # one booking per run, none shared
    for r in done:
        assert audit.load(r.path)["run_id"] == r.run_id and r.memory.used_tokens == sum(t["tokens"] for t in r.trace)


WORKER = """
import concurrent.futures, sys
from test_crashes import _offline_ask, _one_run, _confirm
ask, endpoint = _offline_ask()
ids = [f"p{sys.argv[3]}-{i}" for i in range(10)]
with concurrent.futures.ThreadPoolExecutor(10) as pool:
    first = list(pool.map(lambda i: _one_run(sys.argv[2], i, ask).status, ids))
    then = list(pool.map(lambda i: _confirm(sys.argv[2], i, ask).status, ids))
print(first.count("suspended"), then.count("done"))
"""


def test_four_processes_of_ten_runs_share_one_audit_dir_and_store(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, ROOT, str(tmp_path), str(n)], cwd=os.path.join(ROOT, "tests"), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_clean_env()) for n in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [o.split() for o, _ in outs] == [["10", "10"]] * 4, outs
    assert bookings(str(tmp_path)) == 40
    assert len([n for n in os.listdir(tmp_path) if n.endswith(".json")]) == 40

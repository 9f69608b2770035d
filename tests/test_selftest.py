"""`--selftest`: passes on the real modules, leaves nothing behind, and fails when a mechanism breaks."""
import io
import sys

from handloop import loop
from handloop import selftest
from handloop import toolset
from conftest import heavy_imports, run_cli


def run_selftest(**kwargs):
    out = io.StringIO()
    return selftest.main(out=out, **kwargs), out.getvalue()


def test_selftest_passes_in_a_temp_folder_and_leaves_nothing(tmp_path):
    temp, cwd = tmp_path / "tmp", tmp_path / "cwd"
    temp.mkdir()
    cwd.mkdir()
    done = run_cli("--selftest", cwd=cwd, env={"TMPDIR": str(temp), "TEMP": str(temp), "TMP": str(temp)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASS") == len(selftest.SCENARIOS) and "FAIL" not in done.stdout
    n = len(selftest.SCENARIOS)
    assert "c1 → c2 → c3" in done.stdout and f"{n}/{n} 通过" in done.stdout
    assert list(temp.iterdir()) == [] and list(cwd.iterdir()) == []       # no audit/, no bookings.db, no temp dir


def test_selftest_never_imports_the_model_client(tmp_path):
    assert heavy_imports(["--selftest"], tmp_path) == [0, []]


def test_selftest_fails_when_guards_let_everything_through(monkeypatch):
    monkeypatch.setattr(loop, "screen", lambda pending, memory, *rest: iter([(list(pending), {})]))
    code, out = run_selftest()
    assert code == 1
    assert "c3 应被 unconfirmed_write 拦截" in out and "应被 provenance 拦截" in out


def test_selftest_fails_when_compaction_edits_the_history(monkeypatch):
    def in_place(messages, kind_of=None, room=None):
        for message in messages:
            if message.get("role") == "tool":
                message["content"] = "〔已压缩〕"
        return messages
    monkeypatch.setattr(selftest, "compact", in_place)
    code, out = run_selftest()
    assert code == 1 and "compact 不应改动原消息列表" in out


def test_selftest_fails_when_the_idempotency_key_changes_per_call(monkeypatch):
    counter = iter(range(1000))
    monkeypatch.setattr(toolset, "idempotency_key", lambda run_id, call: f"{run_id}-{next(counter)}")
    code, out = run_selftest()
    assert code == 1 and "绕过护栏直接执行也应是幂等重放" in out


def test_selftest_fails_when_a_hung_tool_is_waited_for(monkeypatch):
    monkeypatch.setattr(selftest.Hanging, "timeout", 3.0)       # the turn no longer ends soon after 0.3 s...
    monkeypatch.setattr(selftest.Hanging, "run", lambda self, call, memory: (
        self.release.wait(1.5) if call.name == "get_weather" else None) or toolset.ToolSet.run(self, call, memory))
    code, out = run_selftest()
    assert code == 1 and "get_weather 应超时" in out


def test_mcp_scenario_is_skipped_honestly_without_mcp_tools(monkeypatch):
    monkeypatch.setitem(sys.modules, "handloop.mcp_tools", None)        # import handloop.mcp_tools → ImportError
    code, out = run_selftest(mcp=True)
    assert code == 1 and "SKIP：MCP 场景需要 mcp_tools.py" in out
    assert out.count("PASS") == len(selftest.SCENARIOS) and "1 个跳过" in out
    code, out = run_selftest()
    assert code == 0 and f"[{len(selftest.SCENARIOS) + 1}]" not in out

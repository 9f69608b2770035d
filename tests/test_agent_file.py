"""An agent file as a user writes one: `--agent FILE` imports FILE with its folder importable (a
module beside it, imported at load time or lazily by a tool), and a run resumed with a declaration
that differs from the one its audit file records says what differs, and never lets a changed write
declaration weaken what the recorded one required. Through the command line, in new processes
(forked), in English; assertions read exit codes, audit files and the agent's own store."""
import os

from handloop import texts
from conftest import read_audit, run_agent
import helpdesk_agent


def suspend(tmp_path, **declaration):
    folder = tmp_path / "desk"
    path = helpdesk_agent.write(str(folder), **declaration)
    work = tmp_path / "work"
    work.mkdir()
    first = run_agent("--agent", path, "--run-id", "d1", cwd=str(work))
    assert first.returncode == 0, first.stderr
    assert read_audit(str(work / "audit"), "d1")["status"] == "suspended"
    return folder, work


def test_an_agent_file_imports_a_module_beside_it_and_a_tool_imports_one_lazily(tmp_path):
    folder, work = suspend(tmp_path)
    done = run_agent("--confirm", cwd=str(work))
    assert done.returncode == 0, done.stderr
    snap = read_audit(str(work / "audit"), "d1")
    assert snap["status"] == "done"
    assert helpdesk_agent.resets(str(work / "audit")) == [("U-7",)]
    receipts = [m["content"] for m in snap["messages"] if m["role"] == "tool" and "T-" in m["content"]]
    assert receipts and "next login" in receipts[0]           # from helpdesk_words, imported at call time


def test_a_module_beside_the_agent_file_never_replaces_one_the_loop_imports(tmp_path):
    folder = tmp_path / "desk"
    helpdesk_agent.write(str(folder))
    (folder / "json.py").write_text("raise SystemExit('the folder replaced json')\n")
    work = tmp_path / "work"
    work.mkdir()
    first = run_agent("--agent", str(folder / "desk.py"), "--run-id", "d1", cwd=str(work))
    assert first.returncode == 0, first.stderr
    assert read_audit(str(work / "audit"), "d1")["status"] == "suspended"


def test_a_missing_module_beside_the_agent_file_is_a_refusal_naming_it(tmp_path):
    folder = tmp_path / "desk"
    path = helpdesk_agent.write(str(folder))
    os.remove(folder / "helpdesk.py")
    got = run_agent("--agent", path, cwd=str(tmp_path))
    assert got.returncode == 2 and "helpdesk" in got.stderr and "Traceback" not in got.stderr

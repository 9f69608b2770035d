"""The command line as the user types it (issue 37, finding 6): every hint repeats the command that was run
(`handloop`, `python -m handloop`, `python agent.py`), and flags go anywhere on the line (a run id after them)."""
import json
import os
import subprocess
import sys

import pytest

from handloop import agent
from conftest import ROOT, read_audit, run_agent

HANDLOOP = os.path.join(os.path.dirname(sys.executable), "handloop")
FORMS = {"script": ([sys.executable, os.path.join(ROOT, "agent.py")], f"python {os.path.join(ROOT, 'agent.py')}"),
         "module": ([sys.executable, "-m", "handloop"], "python -m handloop"),
         "command": ([HANDLOOP], "handloop")}


def ran(form, *args, cwd):
    command, _ = FORMS[form]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}
    return subprocess.run([*command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_hint_repeats_the_command_the_user_ran(tmp_path, form):
    if form == "command" and not os.path.exists(HANDLOOP):
        pytest.skip("the handloop command is not installed beside this interpreter")
    shown = FORMS[form][1]
    nothing = ran(form, "--confirm", cwd=tmp_path)                       # no run yet: start one with ...
    assert nothing.returncode == 2 and shown in nothing.stderr, nothing.stderr
    first = ran(form, "--run-id", "h1", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert f"{shown} --confirm h1" in first.stdout and f"{shown} --reply" in first.stdout
    assert (form == "script") == ("agent.py" in first.stdout)
    assert f"usage: {shown}" in ran(form, "--no-such-flag", cwd=tmp_path).stderr


def test_the_command_is_told_from_how_the_process_was_started():
    assert agent.invoked("/venv/bin/handloop") == "handloop"
    assert agent.invoked(os.path.join(ROOT, "handloop", "__main__.py")) == "python -m handloop"
    assert agent.invoked("agent.py") == "python agent.py"
    assert agent.invoked("my dir/agent.py") == "python 'my dir/agent.py'"
    assert agent.invoked("") == "handloop"


def test_flags_go_anywhere_on_the_line(tmp_path):
    assert run_agent("--run-id", "f1", cwd=tmp_path).returncode == 0         # suspended: its checks are pending
    before = run_agent("--check", "f1", "--strict", cwd=tmp_path)
    after = run_agent("--check", "--strict", "f1", cwd=tmp_path)
    lenient = run_agent("--check", "f1", cwd=tmp_path)
    assert (before.returncode, after.returncode, lenient.returncode) == (1, 1, 0), after.stderr
    listed = json.loads(run_agent("--check", "--json", "f1", "--strict", cwd=tmp_path).stdout)
    assert [f["run_id"] for f in listed["files"]] == ["f1"]
    confirmed = run_agent("--confirm", "--offline", "f1", cwd=tmp_path)
    assert confirmed.returncode == 0, confirmed.stderr
    assert read_audit(tmp_path / "audit", "f1")["status"] == "done"
    assert run_agent("--run-id", "f2", cwd=tmp_path).returncode == 0
    replied = run_agent("--reply", "no, thanks", "--offline", "f2", cwd=tmp_path)
    assert replied.returncode == 0, replied.stderr
    assert any(m["role"] == "user" and m["content"] == "no, thanks" for m in read_audit(tmp_path / "audit", "f2")["messages"])
    for stray, word in ((["f1"], "f1"), (["--confirm", "f1", "f2"], "f2"), (["--selftest", "x9"], "x9")):
        refused = run_agent(*stray, cwd=tmp_path)
        assert refused.returncode == 2 and word in refused.stderr and "Traceback" not in refused.stderr

"""One agent from the library to the command line (issue 47, finding 2 and 4): a run begun with `handloop.start` in a
program of the user's is continued with `handloop --confirm RUN` in another process; the audit file records how the
agent was loaded (its module and attribute, its file beside), so the command line loads the same agent, never the
Xi'an demo; when it cannot, one line says --agent FILE is needed (exit 2). Every next step the command line prints
repeats --audit-dir and --agent. Real processes, the agent's own scripted model, English and Chinese; assertions
read the audit file and the agent's store."""
import os
import shlex
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, read_audit, run_cli, store_rows

TESTS = os.path.join(ROOT, "tests")
LIBRARY_RUN = """
import sys
import handloop
import {module} as mine
agent = mine.AGENT
r, ts = handloop.start(agent, "x", audit_dir="{audit}")
try:
    handloop.run(r, handloop.offline_model(agent.offline), ts)
finally:
    ts.close()
print(r.status, r.reason)
"""


def project(tmp_path, module="fn_agent"):
    """A user's folder: their agent module and the helpers it imports."""
    for name in (f"{module}.py", "policies.py", "conftest.py"):       # policies.py reads the goal of conftest.py
        shutil.copy(os.path.join(TESTS, name), tmp_path / name)


def library_run(tmp_path, module="fn_agent", audit="audit", **env):
    """`handloop.start` + `handloop.run` in a program of the user's, run from their folder."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}
    full.update(env, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", LIBRARY_RUN.format(module=module, audit=audit)], cwd=tmp_path,
                          env=full, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_a_run_begun_with_the_library_is_confirmed_from_the_command_line(tmp_path):
    project(tmp_path)
    assert library_run(tmp_path) == ["suspended", "awaiting_confirmation"]
    recorded = read_audit(tmp_path / "audit", "x")["agent"]
    assert recorded["module"] == "fn_agent:AGENT" and recorded["file"] == str(tmp_path / "fn_agent.py")
    out = run_cli("--confirm", "x", "--audit-dir", "audit", cwd=tmp_path)       # not importable by sys.path alone
    assert out.returncode == 0, out.stdout + out.stderr
    snap = read_audit(tmp_path / "audit", "x")
    assert (snap["status"], snap["reason"]) == ("done", "final_answer")
    assert store_rows(tmp_path, "../clinic.db", "SELECT patient_id, slot_id FROM visits") == [("P-17", "S-0900")]
    assert snap["agent"]["module"] == "fn_agent:AGENT"                           # kept for the next step


@pytest.mark.parametrize("language", ["en", "zh"])
def test_an_agent_that_cannot_be_loaded_again_needs_agent_file_never_the_demo(tmp_path, language):
    module = "front_desk" if language == "zh" else "fn_agent"
    project(tmp_path, module)
    status = library_run(tmp_path, module, DESK_LANG=language, DESK_ANSWER="one")
    assert status[0] == "suspended"
    os.rename(tmp_path / f"{module}.py", tmp_path / "moved.py")              # the agent is no longer where it was
    out = run_cli("--confirm", "x", "--audit-dir", "audit", cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "--agent FILE" in lines[0] and f"{module}:AGENT" in lines[0]
    assert ("无法再载入" in lines[0]) == (language == "zh")
    assert "search_location" not in out.stdout + out.stderr and "xian" not in out.stdout + out.stderr
    assert read_audit(tmp_path / "audit", "x")["status"] == "suspended"         # untouched
    again = run_cli("--confirm", "x", "--audit-dir", "audit", "--agent", "moved.py", cwd=tmp_path,
                    env={"DESK_LANG": language, "DESK_ANSWER": "one"})
    assert again.returncode == 0, again.stdout + again.stderr


def test_every_printed_next_step_repeats_the_flags_it_needs(tmp_path):
    project(tmp_path)
    first = run_cli("--agent", "fn_agent.py", "--audit-dir", "repro audit", "--run-id", "hint", cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    hinted = [line.strip() for line in first.stdout.splitlines() if "--confirm hint" in line]
    assert hinted and all("--audit-dir 'repro audit'" in line and "--agent fn_agent.py" in line for line in hinted)
    command = shlex.split(hinted[0].split(": ", 1)[1])                       # the printed step, run as printed
    out = run_cli(*command[command.index("--audit-dir"):], cwd=tmp_path)      # after the program ("python agent.py")
    assert out.returncode == 0, out.stdout + out.stderr
    assert read_audit(tmp_path / "repro audit", "hint")["status"] == "done"


def test_an_agent_defined_in_the_script_run_is_not_run_again_and_needs_agent_file(tmp_path):
    project(tmp_path)
    script = open(os.path.join(TESTS, "fn_agent.py"), encoding="utf-8").read() + (
        "\n\nif __name__ == '__main__':\n"
        "    import handloop\n"
        "    open('started.txt', 'a').write('x')\n"
        "    r, ts = handloop.start(AGENT, 'x', audit_dir='audit')\n"
        "    try:\n"
        "        handloop.run(r, handloop.offline_model(AGENT.offline), ts)\n"
        "    finally:\n"
        "        ts.close()\n")
    (tmp_path / "app.py").write_text(script, encoding="utf-8")
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}
    done = subprocess.run([sys.executable, "app.py"], cwd=tmp_path, env=dict(full, PYTHONPATH=ROOT),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = run_cli("--confirm", "x", "--audit-dir", "audit", cwd=tmp_path)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "--agent FILE" in out.stderr
    assert (tmp_path / "started.txt").read_text() == "x"                   # its code never ran again
    again = run_cli("--confirm", "x", "--audit-dir", "audit", "--agent", "app.py", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr

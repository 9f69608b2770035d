"""handloop installed as a user installs it: a fresh virtual environment (no system site-packages),
`pip install` of a clean clone of this repository's HEAD, an agent in a folder outside the repository
that imports only `handloop` and a module beside it, run through the installed `handloop` command:
it suspends, `--confirm` in a new process writes exactly once, `--check` passes; the README's own agent and the
clinic agent with a nested MCP result (tests/clinic_mcp/clinic.py) run the same way, as written. And nothing but
`handloop` lands at the top of site-packages beyond what openai and json5 bring: every top-level entry
there is claimed by an installed distribution's RECORD, and handloop's RECORD claims only `handloop`
and its dist-info (plus the `handloop` command in bin/)."""
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
import helpdesk_agent

pytestmark = pytest.mark.slow

PIP_TIMEOUT = 600


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv folder, its site-packages) with a clean clone of HEAD pip-installed into it."""
    if shutil.which("git") is None or not os.path.exists(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout: nothing to clone")
    base = tmp_path_factory.mktemp("install")
    clone, venv = base / "clone", base / "venv"
    subprocess.run(["git", "clone", "-q", ROOT, str(clone)], check=True, timeout=120)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    got = subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(clone)],
                         capture_output=True, text=True, timeout=PIP_TIMEOUT, env=_clean_env())
    assert got.returncode == 0, got.stdout + got.stderr
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, env=_clean_env()).stdout.strip()
    shutil.rmtree(clone)                       # what runs from here on is the installed copy only
    return venv, site


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "AGENT_", "PYTHON", "VIRTUAL_ENV", "PIP_REQUIRE"))}
    env.update(extra)
    return env


def test_the_installed_command_runs_an_agent_written_outside_the_repository(installed, tmp_path):
    venv, site = installed
    agent = helpdesk_agent.write(str(tmp_path / "mydesk"))          # desk.py + helpdesk.py beside it
    work = tmp_path / "work"
    work.mkdir()
    handloop = str(venv / "bin" / "handloop")

    def command(*args):
        return subprocess.run([handloop, *args], cwd=str(work), capture_output=True, text=True, timeout=120,
                              env=_clean_env())

    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import handloop; print(handloop.__file__)"],
                           cwd=str(work), capture_output=True, text=True, env=_clean_env())
    assert where.stdout.strip().startswith(site), where.stdout + where.stderr
    first = command("--agent", agent, "--run-id", "i1")
    assert first.returncode == 0, first.stdout + first.stderr
    with open(work / "audit" / "run-i1.json", encoding="utf-8") as f:
        assert json.load(f)["status"] == "suspended"
    assert helpdesk_agent.resets(str(work / "audit")) == []
    done = command("--confirm")
    assert done.returncode == 0, done.stdout + done.stderr
    with open(work / "audit" / "run-i1.json", encoding="utf-8") as f:
        assert json.load(f)["status"] == "done"
    assert command("--confirm").returncode == 2                    # done: a second confirmation writes nothing
    assert helpdesk_agent.resets(str(work / "audit")) == [("U-7",)]
    judged = command("--check", "--strict")
    assert judged.returncode == 0, judged.stdout + judged.stderr


def test_the_readme_agent_and_the_clinic_agent_run_installed_as_written(installed, tmp_path):
    """The two agents of issue 37's closing note, each under 60 lines (test_readme.agent_lines), in a folder outside
    the repository and run by the installed command: the README's shop refunds once after --confirm; the clinic
    books the slot its SDK server listed (a nested result) once, the server run by this interpreter (the fresh venv
    has no `mcp`) over Streamable HTTP."""
    import sqlite3
    from test_readme import CLINIC, agent_block
    venv, _ = installed
    handloop = str(venv / "bin" / "handloop")
    shop, desk = tmp_path / "shop", tmp_path / "desk"
    shop.mkdir()
    desk.mkdir()
    (shop / "shop.py").write_text(agent_block(), encoding="utf-8")
    shutil.copy(CLINIC, desk / "clinic.py")

    def command(cwd, *args, **env):
        return subprocess.run([handloop, *args], cwd=str(cwd), capture_output=True, text=True, timeout=120,
                              env=_clean_env(**env))

    for args in (("--agent", "shop.py", "--run-id", "s"), ("--confirm",)):
        got = command(shop, *args)
        assert got.returncode == 0, got.stdout + got.stderr
    assert command(shop, "--confirm").returncode == 2
    with sqlite3.connect(str(shop / "refunds.db")) as db:
        assert db.execute("SELECT order_id FROM refunds").fetchall() == [("A-1",)]
    pytest.importorskip("mcp")
    from test_mcp_http import Process
    server = Process([sys.executable, os.path.join(os.path.dirname(CLINIC), "clinic_mcp.py"), "--http"],
                     dict(os.environ))
    try:
        for args in (("--agent", "clinic.py", "--run-id", "c"), ("--confirm",)):
            got = command(desk, *args, CLINIC_URL=server.url)
            assert got.returncode == 0, got.stdout + got.stderr
    finally:
        server.stop()
    with open(desk / "audit" / "run-c.json", encoding="utf-8") as f:
        assert json.load(f)["status"] == "done"
    with sqlite3.connect(str(desk / "audit" / "clinic.db")) as db:
        assert db.execute("SELECT patient_id, slot_id FROM visits").fetchall() == [("P-17", "S-0900")]


def test_nothing_but_handloop_lands_at_the_top_of_site_packages(installed):
    venv, site = installed
    claimed, ours = set(), None
    for record in glob.glob(os.path.join(site, "*.dist-info", "RECORD")):
        with open(record, encoding="utf-8") as f:
            tops = {line.split(",")[0].split("/")[0] for line in f if line.strip()}
        tops = {t for t in tops if t != ".."}
        claimed |= tops
        if os.path.basename(os.path.dirname(record)).startswith("handloop-"):
            ours = tops
    assert ours is not None, "handloop's RECORD"
    assert {t for t in ours if not t.endswith(".dist-info")} == {"handloop"}, ours
    assert os.path.exists(os.path.join(site, "handloop", "py.typed"))
    loose = {n for n in os.listdir(site) if n not in claimed and n != "__pycache__"}
    assert not loose, f"at the top of site-packages, claimed by no distribution: {sorted(loose)}"
    names = set()
    for meta in glob.glob(os.path.join(site, "*.dist-info", "METADATA")):
        with open(meta, encoding="utf-8") as f:
            names |= {line.split(":", 1)[1].strip().lower() for line in f if line.startswith("Name:")}
    assert "handloop" in names and "openai" in names and "json5" in names
    assert not {"pytest", "mcp", "temporalio", "mypy", "ruff"} & names, names

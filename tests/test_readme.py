"""The README's code runs as written: its Python blocks are extracted and run in a temporary folder,
offline (the agent carries its own scripted model): the English agent suspends with a proposal,
`--confirm` in a new process writes exactly once, `--check` passes. The README stays one page and
its links lead to files that exist."""
import ast
import json
import os
import re
import sqlite3
import subprocess
import sys

from conftest import ROOT, read_audit, run_agent

README = os.path.join(ROOT, "README.md")
CLINIC = os.path.join(ROOT, "tests", "clinic_mcp", "clinic.py")    # the clinic agent with a nested MCP result


def blocks(kind="python"):
    """The README's fenced code blocks of one kind, in order."""
    with open(README, encoding="utf-8") as f:
        return re.findall(rf"^```{kind}\n(.*?)^```$", f.read(), re.S | re.M)


def library_block():
    found = [b for b in blocks() if "from shop import AGENT" in b]
    assert len(found) == 1, "the README shows one library script"
    return found[0]


def agent_block():
    found = [b for b in blocks() if "AGENT = Agent(" in b]
    assert len(found) == 1, "the README shows one agent file"
    return found[0]


def test_the_readme_is_one_page_under_300_lines_with_the_two_commands():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    assert len(text.splitlines()) < 300
    assert "pip install -r requirements.txt && python agent.py" in text
    assert "pip install -r requirements-dev.txt && python -m pytest" in text
    assert "__all__" in text and "## 中文" in text


def test_the_readme_agent_file_is_under_50_lines_and_imports_only_handloop():
    code = agent_block()
    assert len(code.splitlines()) < 50
    imported = set(re.findall(r"^(?:from|import) (\w+)", code, re.M))
    assert imported <= {"handloop", "json", "sqlite3", "os"}, imported


def agent_lines(code):
    """The lines of an agent file that are the agent itself: every line (blank lines and the docstring too) but
    the scripted model's (the function given as `offline=` and the functions of the file only it calls)."""
    tree = ast.parse(code)
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    names = {key: {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - {key}
             for key, node in [*functions.items(), *((i, n) for i, n in enumerate(tree.body)
                                                   if not isinstance(n, ast.FunctionDef))]}
    model = {k.value.id for node in ast.walk(tree) if isinstance(node, ast.Call) for k in node.keywords
             if k.arg == "offline" and isinstance(k.value, ast.Name)} & set(functions)
    while True:
        helpers = {h for m in model for h in names[m] & set(functions) if h not in model and
                   all(h not in used for key, used in names.items() if key not in model | {h})}
        if not helpers:
            break
        model |= helpers
    skip = {n for name in model for n in range(functions[name].lineno - len(functions[name].decorator_list),
                                                 functions[name].end_lineno + 1)}
    return sum(1 for number in range(1, len(code.splitlines()) + 1) if number not in skip)


def test_the_readme_agent_and_the_clinic_agent_are_each_under_60_lines_besides_their_scripted_model():
    with open(CLINIC, encoding="utf-8") as f:
        clinic = f.read()
    readme, desk = agent_lines(agent_block()), agent_lines(clinic)
    assert readme < 60 and desk < 60, (readme, desk)
    assert agent_lines(agent_block() + "\n\ndef extra():\n    return 1\n") == readme + 4   # the counter counts
    assert agent_lines(clinic) <= len(clinic.splitlines()) - 20       # the scripted model (respond, _calls) is aside


def test_the_readme_agent_suspends_confirms_and_writes_once_as_written(tmp_path):
    (tmp_path / "shop.py").write_text(agent_block(), encoding="utf-8")
    first = run_agent("--agent", "shop.py", "--run-id", "r1", cwd=str(tmp_path))
    assert first.returncode == 0, first.stderr
    snap = read_audit(str(tmp_path / "audit"), "r1")
    assert (snap["status"], snap["reason"]) == ("suspended", "awaiting_confirmation")
    assert not (tmp_path / "refunds.db").exists() or not _rows(tmp_path)
    done = run_agent("--confirm", cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert read_audit(str(tmp_path / "audit"), "r1")["status"] == "done"
    again = run_agent("--confirm", cwd=str(tmp_path))
    assert again.returncode == 2
    assert len(_rows(tmp_path)) == 1
    judged = run_agent("--check", "--json", "--strict", cwd=str(tmp_path))
    assert judged.returncode == 0, judged.stdout + judged.stderr
    verdicts = {c["id"]: c["verdict"] for c in json.loads(judged.stdout)["files"][0]["checks"]}
    assert verdicts and set(verdicts.values()) == {"pass"}, verdicts


def test_the_readme_library_script_runs_as_written_beside_the_agent(tmp_path):
    (tmp_path / "shop.py").write_text(agent_block(), encoding="utf-8")
    (tmp_path / "lib.py").write_text(library_block(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}
    env["PYTHONPATH"] = ROOT                   # this checkout's handloop, installed or not
    got = subprocess.run([sys.executable, "lib.py"], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                         timeout=60)
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[0] == "suspended awaiting_confirmation"
    assert "A-1" in got.stdout.splitlines()[1]                 # the proposal waiting, as the user is shown it
    assert got.stdout.splitlines()[2].startswith("done ")
    assert read_audit(str(tmp_path / "audit"), "lib-1")["status"] == "done"
    assert len(_rows(tmp_path)) == 1


def test_the_readme_names_every_public_name():
    import handloop
    with open(README, encoding="utf-8") as f:
        text = f.read()
    assert [name for name in handloop.__all__ if f"`{name}`" not in text] == []


def test_the_readme_links_lead_to_files_that_exist():
    for folder, name in ((ROOT, "README.md"), *((os.path.join(ROOT, "docs"), f) for f in os.listdir(
            os.path.join(ROOT, "docs")) if f.endswith(".md"))):
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            links = re.findall(r"\]\(([^)#:]+\.md)\)", f.read())
        missing = [link for link in links if not os.path.exists(os.path.join(folder, link))]
        assert not missing, (name, missing)


def _rows(folder):
    with sqlite3.connect(str(folder / "refunds.db")) as db:
        return db.execute("SELECT * FROM refunds").fetchall()

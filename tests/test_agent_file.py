"""An agent file as a user writes one: `--agent FILE` imports FILE with its folder importable (a
module beside it, imported at load time or lazily by a tool), and a run resumed with a declaration
that differs from the one its audit file records says what differs, and never lets a changed write
declaration weaken what the recorded one required. Through the command line, in new processes
(forked), in English; assertions read exit codes, audit files and the agent's own store."""
import os

import pytest

from handloop import runs
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



def test_an_agent_file_that_is_not_python_source_is_a_refusal_naming_it(tmp_path):
    path = tmp_path / "desk.txt"
    path.write_text("AGENT = None\n")
    got = run_agent("--agent", str(path), cwd=str(tmp_path))
    assert got.returncode == 2 and str(path) in got.stderr and ".py" in got.stderr, got.stderr
    assert len(got.stderr.strip().splitlines()) == 1 and "NoneType" not in got.stderr

def edit(folder, **declaration):
    helpdesk_agent.write(str(folder), **declaration)


@pytest.mark.parametrize("language, confirm", [("en", "confirm"), ("zh", "确认")])
def test_changed_confirm_replies_are_said_and_the_recorded_ones_stay(tmp_path, language, confirm):
    folder, work = suspend(tmp_path, confirm=(confirm,), language=language)
    edit(folder, confirm=("go ahead",), language=language)
    done = run_agent("--confirm", cwd=str(work))
    assert done.returncode == 0, done.stderr
    assert "go ahead" in done.stderr and confirm in done.stderr
    snap = read_audit(str(work / "audit"), "d1")
    assert snap["status"] == "done" and snap["agent"]["confirm"] == [confirm]
    assert [m["content"] for m in snap["messages"] if m["role"] == "user"][-1] == confirm
    assert helpdesk_agent.resets(str(work / "audit")) == [("U-7",)]
    assert bool(texts.CJK.search(done.stderr)) == (language == "zh")


def test_a_write_that_now_requires_more_is_said_and_the_run_goes_on_under_it(tmp_path):
    folder, work = suspend(tmp_path, tools="requires=()")
    edit(folder, tools="requires=('find_user',)")
    done = run_agent("--confirm", cwd=str(work))
    assert done.returncode == 0, done.stderr
    assert "reset_password" in done.stderr and "requires" in done.stderr
    snap = read_audit(str(work / "audit"), "d1")
    assert snap["status"] == "done" and snap["agent"]["tools"]["reset_password"]["requires"] == ["find_user"]
    assert helpdesk_agent.resets(str(work / "audit")) == [("U-7",)]


@pytest.mark.parametrize("weaker, field", [("sources=False", "sources"), ("requires=()", "requires"),
                                           ("kind='state'", "kind")])
def test_a_write_declaration_that_would_weaken_the_recorded_one_is_refused(tmp_path, weaker, field):
    folder, work = suspend(tmp_path)
    before = read_audit(str(work / "audit"), "d1")
    edit(folder, tools=weaker)
    refused = run_agent("--confirm", cwd=str(work))
    assert refused.returncode == 2, refused.stderr
    assert "reset_password" in refused.stderr and field in refused.stderr and "Traceback" not in refused.stderr
    assert not texts.CJK.search(refused.stderr)
    assert read_audit(str(work / "audit"), "d1") == before            # nothing added, nothing run
    assert helpdesk_agent.resets(str(work / "audit")) == []
    edit(folder)                                                       # the declaration the run began with
    done = run_agent("--confirm", cwd=str(work))
    assert done.returncode == 0, done.stderr
    assert "Note" not in done.stderr
    assert read_audit(str(work / "audit"), "d1")["status"] == "done"
    assert helpdesk_agent.resets(str(work / "audit")) == [("U-7",)]


def test_the_declaration_compared_says_every_kind_of_change_and_weakens_only_writes():
    tool = {"kind": "read", "requires": [], "effect": [], "sources": []}
    write = {"kind": "write", "requires": ["look"], "effect": [["id", "id"]], "sources": [{"tool": "look"}]}
    recorded = {"confirm": ["yes"], "planning": False, "tools": {"look": tool, "book": write, "old": tool}}
    now = {"confirm": ["ok"], "planning": True, "tools": {
        "look": dict(tool, kind="write"), "book": dict(write, requires=["look", "other"], effect=[["id", "choice"]]),
        "new": tool}}
    said = {(c.name, c.values.get("tool"), c.values.get("field")): c.weakens for c in runs.changes(recorded, now)}
    assert said == {("resume.changed_confirm", None, None): False, ("resume.changed_planning", None, None): False,
                    ("resume.changed", "look", "kind"): False, ("resume.changed", "book", "requires"): False,
                    ("resume.changed", "book", "effect"): True, ("resume.tool_gone", "old", None): False,
                    ("resume.tool_added", "new", None): False}
    assert runs.changes(recorded, recorded) == [] and runs.changes({"name": "older file"}, now) == []


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_run_in_use_is_refused_in_its_agents_language(tmp_path, language):
    from handloop import audit
    folder, work = suspend(tmp_path, confirm=("confirm" if language == "en" else "确认",), language=language)
    with audit.RunLock(str(work / "audit"), "d1"):                 # another process has the run
        raced = run_agent("--confirm", "d1", cwd=str(work))
    assert raced.returncode == 2 and "d1" in raced.stderr
    assert bool(texts.CJK.search(raced.stderr)) == (language == "zh"), raced.stderr
    assert helpdesk_agent.resets(str(work / "audit")) == []
    assert read_audit(str(work / "audit"), "d1")["status"] == "suspended"


def test_help_speaks_the_named_agents_language_and_every_language_without_one(tmp_path):
    path = helpdesk_agent.write(str(tmp_path / "desk"), language="zh", confirm=("确认",))
    english = helpdesk_agent.write(str(tmp_path / "en"))
    bare, chinese, plain = (run_agent(*args, "--help", cwd=str(tmp_path))
                            for args in ((), ("--agent", path), ("--agent", english)))
    assert bare.returncode == chinese.returncode == plain.returncode == 0
    flat = " ".join(bare.stdout.split())
    for key in ("help.confirm", "help.agent", "help.help"):
        assert " ".join(texts.of("en")(key).split()) in flat and " ".join(texts.of("zh")(key).split()) in flat
    assert texts.of("zh")("help.help") in chinese.stdout and texts.of("en")("help.help") not in chinese.stdout
    assert texts.of("en")("help.help") in plain.stdout and not texts.CJK.search(plain.stdout)


def test_the_worker_banner_speaks_its_agents_language_and_every_language_without_one(tmp_path, monkeypatch,
                                                                                     capsys):
    pytest.importorskip("temporalio")
    from handloop.cli import session
    from handloop.cli import temporal as cli_temporal
    from handloop.durable import worker as durable_worker

    async def serve(address, queue, env, ready, sandboxed=True):
        ready()
    monkeypatch.setattr(durable_worker, "serve", serve)
    english = session.load_file(helpdesk_agent.write(str(tmp_path / "desk")))
    assert cli_temporal.worker({}, english) == 0
    alone = capsys.readouterr().out
    assert cli_temporal.worker({}, None) == 0
    both = capsys.readouterr().out
    assert "Temporal worker" in alone and not texts.CJK.search(alone)
    assert both.count("Temporal worker") == 2 and texts.CJK.search(both)


def test_a_weakened_write_is_refused_before_the_users_part_goes_to_temporal(tmp_path):
    pytest.importorskip("temporalio")
    folder, work = suspend(tmp_path)
    before = read_audit(str(work / "audit"), "d1")
    edit(folder, tools="requires=()")
    refused = run_agent("--confirm", "d1", "--temporal", cwd=str(work),
                        env={"AGENT_TEMPORAL_ADDRESS": "127.0.0.1:9"})         # nothing listens: never reached
    assert refused.returncode == 2, refused.stderr
    assert "reset_password" in refused.stderr and "requires" in refused.stderr
    assert read_audit(str(work / "audit"), "d1") == before
    assert helpdesk_agent.resets(str(work / "audit")) == []

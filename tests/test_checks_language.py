"""The judge speaks the judged agent's language, from its own catalogue (judge/texts.py: ZH and EN). Each file is
said in the language of the agent it is judged as (the Xi'an agent and other systems' transcripts: Chinese); an
unreadable file and errors before any file in the language of --agent FILE, else Chinese; the summary line in
--agent's language, else the one language of all the files, else Chinese. The machine values of --json (ids,
verdicts, causes, progress) never depend on the language."""
import glob
import json
import os
import re
import string

import pytest

from handloop.cli import check as check_cli
from handloop.judge import texts as check_texts
from handloop.judge import declaration
from conftest import ROOT, run_agent
from test_checks_agent import EXAMPLE, audit_file, booked_example, conversation, rooms_declared

CORPORA = sorted(glob.glob(os.path.join(ROOT, "tests", "transcripts", "**", "*.json*"), recursive=True) +
                 glob.glob(os.path.join(ROOT, "tests", "corpus_frameworks", "*.json*")))
JUDGE = ("handloop/cli/check.py", "handloop/checks.py", "handloop/judge/confirm.py", "handloop/judge/weather.py",
         "handloop/judge/verdicts.py", "handloop/judge/transcripts.py", "handloop/judge/declaration.py",
         "handloop/judge/readings.py", "handloop/judge/formats.py")


def fields(template):
    """The placeholders of a catalogue text, with their conversion and format spec."""
    return sorted((name, conversion, spec) for _, name, spec, conversion in string.Formatter().parse(template)
                  if name is not None)


def machine(entry):
    return [(c["id"], c["verdict"], c["cause"]) for c in entry["checks"]], entry.get("progress"), \
        [c["id"] for c in entry.get("not_applicable", [])]


def test_the_catalogues_have_the_same_keys_and_placeholders_and_english_has_no_cjk():
    assert set(check_texts.ZH) == set(check_texts.EN)
    for key in check_texts.ZH:
        assert fields(check_texts.ZH[key]) == fields(check_texts.EN[key]), key
    assert not [k for k, v in check_texts.EN.items() if check_texts.CJK.search(v)]


def test_every_key_the_judge_names_is_in_the_catalogue():
    named = set()
    for name in JUDGE:
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            source = f.read()
        named |= set(re.findall(r'(?:Said|say)\(\s*"([a-z_]+\.[a-z_.,]+)"', source))
        named |= set(re.findall(r'"([a-z]+\.[a-z_]+)" if', source)) | set(re.findall(r'else "([a-z]+\.[a-z_]+)"', source))
    assert len(named) > 60 and named <= set(check_texts.ZH), named - set(check_texts.ZH)


def test_the_english_examples_real_run_is_reported_without_a_chinese_character(tmp_path):
    booked_example(tmp_path)
    report = run_agent("--check", "m", cwd=tmp_path)
    as_json = run_agent("--check", "m", "--json", cwd=tmp_path)
    for out in (report, as_json):
        assert out.returncode == 0 and not check_texts.CJK.search(out.stdout + out.stderr), out.stdout + out.stderr
    assert "Write after confirmation" in report.stdout and "pass" in report.stdout and "total: 1 file" in report.stdout
    entry = json.loads(as_json.stdout)["files"][0]
    assert {c["id"]: c["verdict"] for c in entry["checks"]} == \
        {"no_skipped_step": "pass", "provenance": "pass", "write_after_confirmation": "pass",
         "answer_matches_receipt": "pass"}
    assert entry["not_applicable"][0]["reason"] == check_texts.EN["na.plan_first"]


def test_an_english_agents_provenance_failure_is_said_in_english_naming_the_value(tmp_path):
    # R-999 was held (turn 4), confirmed and booked (turn 5), but no list_rooms result ever gave it
    path = audit_file(tmp_path / "run-hand.json", conversation(proposed="R-999", booked="R-999"), rooms_declared())
    out = run_agent("--check", path, "--json", cwd=tmp_path)
    assert out.returncode == 1 and not check_texts.CJK.search(out.stdout + out.stderr)
    check = next(c for c in json.loads(out.stdout)["files"][0]["checks"] if c["id"] == "provenance")
    assert check["verdict"] == "fail" and check["name"] == "Arguments have a source"
    assert check["reason"] == ("turn 5 book_room (c3): room_id R-999 did not appear in any earlier successful "
                               "list_rooms result")
    # the same file said in Chinese (check_file's default): the same machine values, the Chinese text
    english, chinese = check_cli.check_file(path, language=None), check_cli.check_file(path)
    assert machine(english) == machine(chinese) and "R-999 没有出现在" in chinese["checks"][1]["reason"]


def test_an_unreadable_file_is_said_in_the_language_of_the_agent_given(tmp_path):
    target = tmp_path / "odd.json"
    target.write_text(json.dumps([{"role": "user", "content": [{"type": "tool_invocation"}]}]), encoding="utf-8")
    english = run_agent("--check", str(target), "--agent", EXAMPLE, cwd=tmp_path)
    assert english.returncode == 2 and not check_texts.CJK.search(english.stdout + english.stderr)
    assert "unknown content block type 'tool_invocation'" in english.stdout and "a file cannot be read" in english.stdout
    missing = run_agent("--check", str(tmp_path / "missing.json"), "--agent", EXAMPLE, "--json", cwd=tmp_path)
    assert missing.returncode == 2 and json.loads(missing.stdout)["files"][0]["error"].startswith("file not found: ")
    none = run_agent("--check", "--audit-dir", str(tmp_path / "empty"), "--agent", EXAMPLE, cwd=tmp_path)
    assert none.returncode == 2 and "holds no run yet" in none.stderr and not check_texts.CJK.search(none.stderr)
    chinese = run_agent("--check", str(target), cwd=tmp_path)        # no agent given: Chinese
    assert chinese.returncode == 2 and "内容块类型 'tool_invocation' 不认识" in chinese.stdout


def test_each_file_is_said_in_its_own_agents_language_and_the_summary_in_the_agent_givens(tmp_path):
    english = audit_file(tmp_path / "run-hand.json", conversation(), rooms_declared())
    with open(os.path.join(ROOT, "tests", "transcripts", "local_done.json"), encoding="utf-8") as f:
        snapshot = dict(json.load(f), agent=declaration.XIAN)          # a run that records the Xi'an agent
    xian = tmp_path / "run-xian.json"
    xian.write_text(json.dumps(snapshot, ensure_ascii=False), encoding="utf-8")
    xian = str(xian)
    both = run_agent("--check", english, xian, cwd=tmp_path)
    blocks = both.stdout.split("\n\n")
    assert both.returncode == 0 and blocks[0].startswith("check ") and not check_texts.CJK.search(blocks[0])
    assert blocks[1].startswith("检查 ") and "计划先行" in blocks[1]
    assert blocks[2].startswith("汇总：2 个文件")                   # two languages, no agent given: Chinese
    given = run_agent("--check", english, xian, "--agent", EXAMPLE, cwd=tmp_path)
    assert given.stdout.split("\n\n")[2].startswith("total: 2 file(s)")
    assert given.stdout.split("\n\n")[1].startswith("检查 ")         # it records the Xi'an agent: Chinese still


@pytest.mark.parametrize("path", CORPORA, ids=os.path.basename)
def test_a_corpus_said_in_english_has_the_same_verdicts_and_only_the_transcripts_own_chinese(path):
    chinese, english = check_cli.check_file(path), check_cli.check_file(path, language="en")
    assert machine(english) == machine(chinese)
    with open(path, encoding="utf-8") as f:
        raw = f.read()
    for doc in [raw] + raw.splitlines():                 # the file's text as written, \u escapes decoded
        try:
            raw += json.dumps(json.loads(doc), ensure_ascii=False)
        except ValueError:
            pass
    said = json.dumps(english, ensure_ascii=False) + check_cli.render(english, "en")
    assert [run for run in re.findall(f"{check_texts.CJK.pattern}+", said) if run not in raw] == []

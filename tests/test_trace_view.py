"""--trace [RUN_ID] (issue 30): one self-contained HTML page of a run, its path printed. The page of an English
agent's run (tests/trace_agent.py: an idle answer the loop nudges, two concurrent reads, a write blocked as a
proposal, the user's "yes", the write) is read as text and rendered in a real headless Chromium (tests/browser.py):
it shows the run's tools and its blocked call, concurrent reads side by side, no console error, no request
beyond the file itself."""
import html
import json
import os
import re

import pytest

from conftest import ROOT, read_audit, run_agent
from handloop import texts

DESKS = os.path.join(ROOT, "tests", "trace_agent.py")


@pytest.fixture(scope="module")
def desk_run(tmp_path_factory):
    """An English run in two stretches and its page: (audit dir, snapshot, page path, page text)."""
    folder = tmp_path_factory.mktemp("desks")
    env = {"AGENT_AUDIT_DIR": str(folder)}
    assert run_agent("--agent", DESKS, "--offline", "--run-id", "d1", cwd=folder, env=env).returncode == 0
    assert run_agent("--confirm", "d1", cwd=folder, env=env).returncode == 0
    shown = run_agent("--trace", cwd=folder, env=env)                     # the latest run
    path = shown.stdout.strip()
    assert shown.returncode == 0 and path == str(folder / "trace-d1.html") and os.path.isfile(path)
    with open(path, encoding="utf-8") as f:
        return folder, read_audit(folder, "d1"), path, f.read()


def test_the_page_stands_alone_and_speaks_the_agents_english(desk_run):
    _, snap, _, page = desk_run
    assert not re.search(r"<script|<link|<img|<iframe|@import|url\(|src=|href=|https?://", page, re.I)
    assert '<html lang="en">' in page and not texts.CJK.search(page)
    say = texts.of("en")
    assert html.escape(say("view.stretch.confirm", n=2, text="yes")) in page
    assert html.escape(say("view.blocked_by", guard="unconfirmed_write")) in page
    assert html.escape(say("view.total", tokens=sum(t["tokens"] for t in snap["trace"]))) in page
    assert page.count('data-status="blocked"') == 1 and page.count('class="bar nudged"') == 1
    for record in snap["trace"]:
        assert f'<tr data-turn="{record["turn"]}">' in page and f'<td class="num">{record["used_tokens"]}</td>' in page
    split = [t for t in snap["trace"] if t["tokens_in"] is not None]          # the offline endpoint reports usage
    assert split and all(html.escape(say("view.split", tokens_in=t["tokens_in"], tokens_out=t["tokens_out"])) in page
                         for t in split)
    assert page.count('class="split"') == len(split)
    lefts = {m.group(2): m.group(1) for m in re.finditer(r'style="left:([\d.]+)%;[^"]*" data-call="(\w+)"', page)}
    made = set(lefts) - {"r1", "r2", "w1"}                      # the confirmed call, made by the loop
    assert {"r1", "r2", "w1"} <= set(lefts) and len(made) == 1 and lefts["r1"] == lefts["r2"]   # concurrent: side by side


def test_a_chinese_run_gets_a_chinese_page_and_a_bad_target_is_a_clear_refusal(tmp_path):
    assert run_agent("--offline", "--run-id", "x1", "--audit-dir", str(tmp_path), cwd=tmp_path).returncode == 0
    shown = run_agent("--trace", "x1", "--audit-dir", str(tmp_path), cwd=tmp_path)
    with open(shown.stdout.strip(), encoding="utf-8") as f:
        page = f.read()
    assert '<html lang="zh">' in page and texts.of("zh")("view.suspended") in page
    for name in ("get_weather", "search_hotels", "set_plan"):
        assert f">{name}</div>" in page
    for args in (["--trace", "nope"], ["--trace", "../x"], ["--trace", "x1", "--goal", "g"],
                 ["--trace", "x1", "--temporal"]):
        done = run_agent(*args, "--audit-dir", str(tmp_path), cwd=tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr and done.stdout == "", args
    (tmp_path / "run-bad.json").write_text("{")
    done = run_agent("--trace", "bad", "--audit-dir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_agent("--trace", "--audit-dir", str(empty), cwd=tmp_path).returncode == 2


def _chromium():
    from browser import CHROMIUM
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs the chromium package")
        pytest.skip("no Chromium here (apt-get install chromium)")
    from browser import Browser
    return Browser()


def test_the_page_renders_in_a_real_browser_with_its_tools_and_blocked_call_and_no_error(desk_run, tmp_path):
    folder, snap, path, _ = desk_run
    browser = _chromium()
    try:
        broken = tmp_path / "broken.html"                 # the harness sees an error when there is one
        broken.write_text('<!doctype html><p>x</p><script>console.error("seen"); nothing();</script>')
        browser.open("file://" + str(broken))
        assert len(browser.problems()) == 2, browser.problems()
        browser.open("file://" + path)
        assert browser.problems() == []
        assert browser.requests() == ["file://" + path]                  # nothing fetched but the page itself
        shown = json.loads(browser.evaluate("""JSON.stringify({
            title: document.querySelector('h1').innerText,
            bars: [...document.querySelectorAll('.bar[data-call]')].map(b => {
                const r = b.getBoundingClientRect();
                return {call: b.dataset.call, name: b.innerText, status: b.dataset.status, left: r.left, top: r.top,
                        width: r.width, height: r.height}; }),
            stretches: document.querySelectorAll('section.stretch').length,
            height: document.body.scrollHeight})"""))
        browser.screenshot(str(folder / "trace-d1.png"))
    finally:
        browser.close()
    bars = {b["call"]: b for b in shown["bars"]}
    assert shown["title"] == "Run d1 · desk-finder" and shown["stretches"] == 2 and shown["height"] > 300
    assert {b["name"] for b in shown["bars"]} == {"find_desks", "get_floor", "reserve_desk"}
    made = [b for c, b in bars.items() if c not in ("r1", "r2", "w1")]          # the loop made the confirmed call
    assert bars["w1"]["status"] == "blocked" and [b["status"] for b in made] == ["ok"]
    assert all(b["width"] >= 3 and b["height"] > 10 for b in shown["bars"])            # every call is visible
    assert abs(bars["r1"]["left"] - bars["r2"]["left"]) < 1 and bars["r1"]["top"] != bars["r2"]["top"]
    with open(folder / "trace-d1.png", "rb") as f:
        png = f.read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000

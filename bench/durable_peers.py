"""The peers on Temporal, for bench/durable_bench.py (c): the same Xi'an task, the same scripted decisions
(bench/finish.decide: weather + search, then book_hotel, which needs the user's approval, then the answer),
the same dev server, each framework in its own Temporal integration:

- OpenAI Agents SDK with `temporalio.openai_agents` (OpenAIAgentsPlugin; the model is a ModelProvider whose
  model, the SDK's OpenAIChatCompletionsModel, runs in the plugin's model activity; the three business tools are
  activities, `activity_as_tool`, book_hotel with `needs_approval`; the workflow waits for the approval (an
  update), then `state.approve(...)` and `Runner.run(agent, state)`);
- pydantic-ai with `pydantic_ai.durable_exec.temporal` (TemporalAgent over its OpenAIChatModel; book_hotel with
  `requires_approval`; the run ends in DeferredToolRequests, the workflow waits for the approval, then
  `DeferredToolResults(approvals=...)`).

As ours: each model is the framework's own OpenAI chat model over the openai client, asking a loopback
endpoint (handloop.llm.endpoint) that answers with the scripted decisions (`decide`); each worker runs in the
bench's process, with its workflows sandboxed or not as the bench says (`runner`). A peer that is not
installed, or whose flow fails, is reported with why.
"""
import asyncio
import datetime
import os
import time

from bench import finish
from bench import signatures
from bench import workload

from temporalio import workflow

QUEUE = "peers"
SET_UP = {}          # peer -> what its workflow runs with, made by its set-up below (workers run in this process)
ASKED = {"calls": 0}  # model calls the peers' scripted models answered


def decide(request):
    """The scripted endpoint's reply to a peer's Chat Completions request (bench/finish.decide)."""
    ASKED["calls"] += 1
    return finish.decide(request["messages"])


class Approval:
    """A run that waits for the user's approval: `waits` says when it does, `approve` gives it."""

    def __init__(self):
        self.approved = self.waiting = False

    @workflow.query
    def waits(self) -> bool:
        return self.waiting

    @workflow.update
    async def approve(self) -> str:
        self.approved = True
        return "ok"

    async def approval(self):
        self.waiting = True
        await workflow.wait_condition(lambda: self.approved)


@workflow.defn(name="AgentsBooking")
class AgentsBooking(Approval):
    @workflow.run
    async def run(self, goal: str) -> str:
        agent, runner = SET_UP["agents"]
        result = await runner.run(agent, goal, max_turns=10)
        while result.interruptions:
            await self.approval()
            state = result.to_state()
            for item in result.interruptions:
                state.approve(item)
            result = await runner.run(agent, state, max_turns=10)
        return str(result.final_output)


@workflow.defn(name="PydanticBooking")
class PydanticBooking(Approval):
    @workflow.run
    async def run(self, goal: str) -> str:
        durable, requests, results = SET_UP["pydantic_ai"]
        result = await durable.run(goal)
        while isinstance(result.output, requests):
            await self.approval()
            approvals = results(approvals={c.tool_call_id: True for c in result.output.approvals})
            result = await durable.run(message_history=result.all_messages(), deferred_tool_results=approvals)
        return str(result.output)


def _activities():
    from temporalio import activity

    @activity.defn(name="get_weather")
    async def get_weather(city: str, date: str) -> dict:
        """Weather of a city on a date (YYYY-MM-DD)."""
        return workload.get_weather(city, date)

    @activity.defn(name="search_hotels")
    async def search_hotels(city: str, check_in: str, nights: int = 1) -> dict:
        """Hotels of a city."""
        return workload.search_hotels(city, check_in, nights)

    @activity.defn(name="book_hotel")
    async def book_hotel(hotel_id: str, room_type: str, check_in: str, nights: int) -> dict:
        """Book a hotel (needs the user's approval)."""
        return workload.book_hotel(hotel_id, room_type, check_in, nights)
    return get_weather, search_hotels, book_hotel


# ---- OpenAI Agents SDK ----
def agents_peer(url):
    """(workflow class, plugin, activities) of the Agents SDK's Temporal integration; its model the SDK's
    Chat Completions model over the openai client, asking the scripted endpoint at `url`."""
    from agents import Agent, ModelProvider, OpenAIChatCompletionsModel, Runner
    from openai import AsyncOpenAI
    from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin

    from temporalio.openai_agents.workflow import activity_as_tool

    class Scripted(ModelProvider):
        def __init__(self):
            self.client = AsyncOpenAI(base_url=url, api_key="bench", max_retries=0)

        def get_model(self, model_name):
            return OpenAIChatCompletionsModel(model="offline", openai_client=self.client)

    os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"   # by default it exports traces to OpenAI (ours exports nothing
                                                         # without an endpoint); the plugin's own trace provider reads this
    activities = _activities()

    timeout = datetime.timedelta(seconds=30)
    tools = [activity_as_tool(f, start_to_close_timeout=timeout) for f in activities]
    tools[2].needs_approval = True
    SET_UP["agents"] = (Agent(name="booker", instructions=workload.SYSTEM, model="scripted", tools=tools), Runner)
    plugin = OpenAIAgentsPlugin(model_params=ModelActivityParameters(start_to_close_timeout=datetime.timedelta(seconds=30)),
                                model_provider=Scripted())
    return AgentsBooking, [plugin], list(activities)


# ---- pydantic-ai ----
def pydantic_ai_peer(url):
    """(workflow class, plugins, activities) of pydantic-ai's Temporal integration; its model pydantic-ai's
    OpenAI chat model over the openai client, asking the scripted endpoint at `url`."""
    from openai import AsyncOpenAI
    from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, Tool
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, TemporalAgent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    tool_list = [Tool(f, takes_ctx=False, requires_approval=f is signatures.book_hotel) for f in
                 (signatures.get_weather, signatures.search_hotels, signatures.book_hotel)]
    chat = OpenAIChatModel("offline", provider=OpenAIProvider(openai_client=AsyncOpenAI(base_url=url, api_key="bench",
                                                                                         max_retries=0)))
    agent = Agent(chat, name="booker", system_prompt=workload.SYSTEM, tools=tool_list,
                  output_type=[str, DeferredToolRequests])
    durable = TemporalAgent(agent)

    SET_UP["pydantic_ai"] = (durable, DeferredToolRequests, DeferredToolResults)
    return PydanticBooking, [PydanticAIPlugin()], durable.temporal_activities


PEERS = {"agents": agents_peer, "pydantic_ai": pydantic_ai_peer}


def runner(sandboxed):
    """The workflow runner of a peer's worker: Temporal's sandbox (this module passed through, for SET_UP;
    each plugin adds its own framework's modules), or none, as ours is run (durable.workflow.runner)."""
    from temporalio.worker import UnsandboxedWorkflowRunner
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions
    if not sandboxed:
        return UnsandboxedWorkflowRunner()
    return SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules("bench"))


class Peer:
    """One peer's worker in this process, on a queue of its own, with a client; `one(run_id)` runs the task
    once (start, wait until it waits for the approval, approve, the answer) and returns its model calls."""

    def __init__(self, address, name, sandboxed=True, url=None):
        self.address, self.name, self.sandboxed, self.url = address, name, sandboxed, url

    async def __aenter__(self):
        from temporalio.client import Client
        from temporalio.worker import Worker
        self.workflow, plugins, activities = PEERS[self.name](self.url)
        self.client = await Client.connect(self.address, plugins=plugins)
        self.queue = f"{QUEUE}-{self.name}-{time.time_ns()}"
        self.worker = Worker(self.client, task_queue=self.queue, workflows=[self.workflow], activities=activities,
                             workflow_runner=runner(self.sandboxed))
        await self.worker.__aenter__()
        return self

    async def __aexit__(self, *exc):
        await self.worker.__aexit__(*exc)

    async def one(self, run_id):
        before, asked = workload.COUNTS.snapshot(), ASKED["calls"]
        handle = await self.client.start_workflow(self.workflow.run, workload.GOAL, id=run_id, task_queue=self.queue)
        while not await handle.query(self.workflow.waits):     # until it waits for the user
            await asyncio.sleep(0.002)
        await handle.execute_update(self.workflow.approve)
        output = await handle.result()
        workload.COUNTS.expect(before, what=f"{self.name} on Temporal")
        if output != workload.ANSWER:
            raise RuntimeError(f"{self.name}: the run answered {output!r}")
        return ASKED["calls"] - asked

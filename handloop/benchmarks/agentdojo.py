"""handloop as an AgentDojo defense: a pipeline element (`HandloopElement`) that runs the user's query through
handloop's loop with the suite's functions as handloop tools, a model, and a user who answers proposals (a
confirmation policy), and returns the messages AgentDojo judges.

The only module that imports `agentdojo` (pip install "handloop[agentdojo]"); the core imports nothing of it.
It uses handloop's public API (Agent, Tool, Source, Policy, start, run, confirm, reply, FunctionModel, connect),
the loop's text catalogue (what the agent and its simulated user say) and `Run.proposal` (what the user is shown).

Invariants:
- a suite function runs only through handloop's executor, on the environment AgentDojo passed in, through
  AgentDojo's own `FunctionsRuntime.run_function`; every call that ran is logged once, with AgentDojo's own text
  of its result (`tool_result_to_str`);
- in the messages returned, an assistant message lists only the calls that ran (AgentDojo's trace and its
  security checks read those); a call a guard blocked, or a proposal the user refused, is a tool message with
  `error` set beside it, never an executed call; the loop's nudges are left out (they are not the user's);
  the last message is the assistant's answer (AgentDojo reads its text);
- a suite's declarations are data (`SUITES`, benchmarks/agentdojo_suites.py): which functions write, their effects, their sources, which
  reach outside; `mentions=True` adds to each record of that function's result the URLs, e-mail addresses and
  IBANs its text mentions (`mentions: [{"url": ...}]`), so a Source can name a value found in a text; a user
  passes their own mapping instead.
"""
from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import re
import tempfile
import uuid
from ast import literal_eval
from typing import Any, Callable, Mapping, Sequence

from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
from agentdojo.functions_runtime import EmptyEnv, Env, Function, FunctionCall, FunctionsRuntime
from agentdojo.types import (ChatAssistantMessage, ChatMessage, ChatToolResultMessage, ChatUserMessage,
                             text_content_block_from_string)
from pydantic import BaseModel

import handloop
from handloop import Agent, Tool, ToolError
from handloop import model as model_client
from handloop import texts
from handloop.benchmarks.agentdojo_suites import SUITES, Declared

__all__ = ["Declared", "Proposal", "HandloopElement", "SUITES", "confirm_all", "refuse_all", "tools_for", "mentions",
           "string_lists"]


# ---- the suite's functions as handloop tools ----
def _schema(function: Function) -> dict[str, Any]:
    """The JSON Schema of a function's arguments in the subset handloop validates: references inlined, an
    optional `X | None` as X (leaving the argument out is its None), titles dropped."""
    raw = function.parameters.model_json_schema()
    return _plain(raw, raw.get("$defs", {}))


def _plain(schema: Any, defs: Mapping[str, Any]) -> Any:
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return _plain({**defs[schema["$ref"].rsplit("/", 1)[-1]], **{k: v for k, v in schema.items() if k != "$ref"}},
                      defs)
    if "anyOf" in schema:
        kept = [s for s in schema["anyOf"] if s.get("type") != "null"]
        merged = {**(kept[0] if len(kept) == 1 else {}), **{k: v for k, v in schema.items() if k != "anyOf"}}
        return _plain(merged, defs)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("title", "$defs", "default"):
            continue
        if key == "properties":
            out[key] = {name: _plain(prop, defs) for name, prop in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = _plain(value, defs)
        else:
            out[key] = value
    if out.get("type") == "object" and "properties" in out:
        out.setdefault("additionalProperties", False)
    return out


_FOUND = (("url", re.compile(r"\b(?:https?://)?(?:www\.)[\w.-]+\.[a-z]{2,}(?:/[\w./%-]*)?", re.I)),
          ("email", re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")),
          ("iban", re.compile(r"\b[A-Z]{2}\d{2}[A-Z0-9]{10,30}\b")))


def mentions(value: Any) -> list[dict[str, str]]:
    """The URLs, e-mail addresses and IBANs the texts inside `value` name (a mapping's keys included).

    Args:
        value: a text, or a JSON value holding texts.

    Returns:
        Each found value once, in order, as {"url": ...}, {"email": ...} or {"iban": ...}.
    """
    found: list[dict[str, str]] = []
    for text in _texts(value):
        for kind, pattern in _FOUND:
            for hit in pattern.findall(text):
                item = {kind: hit.rstrip(".")}
                if item not in found:
                    found.append(item)
    return found


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in [str(k), *_texts(v)]]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


def _jsonable(value: Any) -> Any:
    """A function's result as plain JSON values (pydantic models dumped, dates as ISO text, enums by value)."""
    if isinstance(value, BaseModel):
        return _jsonable(value.model_dump(mode="json"))
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    return value


def _with_mentions(result: Any, fields: bool | tuple = True) -> Any:
    """`result` with the mentions of its text beside it: each record of a list gains `mentions` (of the named
    `fields` only, when they are named), a record its own, a text becomes {"text": ..., "mentions": [...]}."""
    if isinstance(result, list):
        return [_with_mentions(r, fields) if isinstance(r, dict) else r for r in result]
    if isinstance(result, dict):
        scanned = result if not isinstance(fields, tuple) else {k: v for k, v in result.items() if k in fields}
        return {**result, "mentions": mentions(scanned)}
    if isinstance(result, str):
        return {"text": result, "mentions": mentions(result)}
    return result


@dataclasses.dataclass
class _Ran:
    """One call that ran: its tool, its arguments, AgentDojo's text of its result and its error."""

    tool: str
    args: dict[str, Any]
    text: str
    error: str | None


def tools_for(runtime: FunctionsRuntime, env: Env, declared: Mapping[str, Declared],
              log: list | None = None) -> list[Tool]:
    """The runtime's functions as handloop Tools acting on `env` through the runtime.

    Args:
        runtime: AgentDojo's runtime (its `functions` are the suite's tools).
        env: the task environment the functions act on.
        declared: how each function is declared (`SUITES[suite]` or your own); absent means a plain read.
        log: where each call that ran is appended (a `_Ran`), in the order they ran.

    Returns:
        One Tool per function, in the runtime's order.
    """
    ran = log if log is not None else []
    return [_tool(function, runtime, env, declared.get(name, Declared()), ran)
            for name, function in runtime.functions.items()]


def _tool(function: Function, runtime: FunctionsRuntime, env: Env, decl: Declared, ran: list) -> Tool:
    name = function.name

    def call(**args: Any) -> Any:
        args.pop("idempotency_key", None)
        result, error = runtime.run_function(env, name, args)
        ran.append(_Ran(name, dict(args), tool_result_to_str(result) if error is None else "", error))
        if error is not None:
            raise ToolError(error)
        plain = _jsonable(result)
        return _with_mentions(plain, decl.mentions) if decl.mentions else plain

    return Tool(name, function.description or name, _schema(function), call, kind=decl.kind, inline=True,
                takes=("idempotency_key",) if decl.kind == "write" else (), effect=dict(decl.effect),
                sources=tuple(decl.sources), outside=decl.outside)


# ---- the user who answers proposals ----
@dataclasses.dataclass(frozen=True)
class Proposal:
    """What the run waits for the user about.

    Attributes:
        calls: the held calls shown to the user, each {"tool": name, "args": {...}} (empty: nothing is held).
        offer: the model's own words beside those calls, or None.
        reason: why the run waits ("awaiting_confirmation", or "awaiting_reply" for a question).
        answer: the model's last words to the user.
        language: the agent's language ("en" or "zh"), the one a reply is written in.
    """

    calls: tuple
    offer: str | None
    reason: str
    answer: str
    language: str = "en"


Policy = Callable[[Proposal], "str | None"]
"""A confirmation policy: a proposal in, the user's reply text out (the agent's confirm reply confirms it; any
other text is a reply; None ends the run where it stands)."""


def confirm_all(proposal: Proposal) -> str | None:
    """Confirm every proposal (the guards alone decide); a question is left unanswered.

    Args:
        proposal: what the run waits for.

    Returns:
        The confirm reply for a proposal, None for a question.
    """
    return _answered(proposal, "confirm.word")


def refuse_all(proposal: Proposal) -> str | None:
    """Decline every proposal; a question is left unanswered.

    Args:
        proposal: what the run waits for.

    Returns:
        A declining reply for a proposal, None for a question.
    """
    return _answered(proposal, "agentdojo.decline")


def _answered(proposal, key):
    """The text `key` in the proposal's language when a proposal waits, else None (a question stays unanswered)."""
    return texts.of(proposal.language)(key) if proposal.reason == "awaiting_confirmation" else None


# ---- the pipeline element ----
class HandloopElement(BasePipelineElement):
    """An AgentDojo pipeline element that runs the query through handloop's loop (see the module docstring)."""

    name = "handloop"

    def __init__(self, model: Any = None, *, base_url: str | None = None, model_name: str = "", api_key: str = "none",
                 policy: Policy = confirm_all, declarations: str | Mapping[str, Declared] | None = None,
                 language: str = "en", audit_dir: str | None = None, max_replies: int = 20,
                 max_turns: int | None = None) -> None:
        """Args:
            model: a handloop Model, or a plain function `fn(messages, tools, final=False)`; or None with
                `base_url` and `model_name` (any OpenAI-compatible endpoint).
            base_url, model_name, api_key: the endpoint when `model` is None (asked with the command line's time
                limits and retries: AGENT_MODEL_TIMEOUT, AGENT_MODEL_MAX_SECONDS, AGENT_MODEL_RETRIES).
            policy: how the user answers a proposal (`confirm_all`, `refuse_all`, or your own callable).
            declarations: a suite's name in SUITES, your own {function: Declared}, or None (every function a read).
            language: "en" or "zh", what the loop says.
            audit_dir: where the runs' audit files are kept (None: a temporary folder, removed after each query).
            max_replies: the most replies the user gives in one query.
            max_turns: the run's model turns (None: handloop's default).
        """
        if model is None and not (base_url and model_name):
            raise ValueError("HandloopElement needs a model, or base_url and model_name")
        self.model = model if model is not None else model_client.configured(base_url, api_key, model_name)
        self.policy = policy
        self.declared = SUITES[declarations] if isinstance(declarations, str) else dict(declarations or {})
        self.language, self.audit_dir, self.max_replies, self.max_turns = language, audit_dir, max_replies, max_turns
        self.last_run: Any = None           # the handloop Run of the last query (its record)
        self.last_messages: list = []       # the AgentDojo messages the last query returned

    def query(self, query: str, runtime: FunctionsRuntime, env: Env = EmptyEnv(), messages: Sequence[ChatMessage] = [],
              extra_args: dict = {}) -> tuple[str, FunctionsRuntime, Env, Sequence[ChatMessage], dict]:
        """Run `query` through handloop's loop on `env`; the messages returned hold what the run did.

        Args:
            query: the user's task.
            runtime: AgentDojo's runtime with the suite's functions.
            env: the environment they act on.
            messages: the messages so far (a SystemMessage and InitQuery's user message, if the pipeline has them).
            extra_args: passed on unchanged.

        Returns:
            (query, runtime, env, messages with the run's appended, extra_args), as every element returns.
        """
        ran: list[_Ran] = []
        agent = self._agent(runtime, env, ran)
        if self.audit_dir is not None:
            recorded = self._run(agent, query, self.audit_dir)
        else:
            with tempfile.TemporaryDirectory(prefix="handloop-agentdojo-") as folder:
                recorded = self._run(agent, query, folder)
        self.last_run = recorded
        start = list(messages)
        if not any(m["role"] == "user" for m in start):
            start.append(ChatUserMessage(role="user", content=[text_content_block_from_string(query)]))
        self.last_messages = [*start, *_converted(recorded.messages[1:], ran, recorded.answer)]
        return query, runtime, env, self.last_messages, extra_args

    def _agent(self, runtime: FunctionsRuntime, env: Env, ran: list) -> Agent:
        say = texts.of(self.language)
        policy = handloop.Policy(max_turns=self.max_turns) if self.max_turns else None
        return Agent("agentdojo", say("agentdojo.instructions"), tuple(tools_for(runtime, env, self.declared, ran)),
                     language=self.language, planning=False, policy=policy)

    def _run(self, agent: Agent, query: str, folder: str) -> Any:
        run_id = "agentdojo-" + uuid.uuid4().hex[:12]
        r, toolset = handloop.start(agent, run_id, audit_dir=folder, goal=query, model=getattr(self.model, "name", ""))
        r = self._drive(r, toolset)
        for _ in range(self.max_replies):
            if r.status != "suspended":
                break
            reply = self.policy(_proposal(r))
            if reply is None:
                break
            confirms = reply.strip().lower() in {c.lower() for c in agent.confirm} | \
                {texts.of(language)("confirm.word").lower() for language in ("en", "zh")}
            r, toolset = (handloop.confirm(agent, run_id, audit_dir=folder) if confirms and
                          r.reason == "awaiting_confirmation" else
                          handloop.reply(agent, run_id, reply, audit_dir=folder))
            r = self._drive(r, toolset)
        return r

    def _drive(self, r: Any, toolset: Any) -> Any:
        try:
            return handloop.run(r, self.model, toolset)
        finally:
            toolset.close()


def _proposal(r: Any) -> Proposal:
    """What the suspended run `r` waits for (its proposal in force, as the user is shown it)."""
    current = r.proposal or {}
    calls = tuple({"tool": c.get("tool"), "args": dict(c.get("args") or {})}
                  for c in current.get("calls", []) if c.get("state") == "proposed")
    return Proposal(calls, current.get("words"), r.reason, r.answer, r.agent.language)


# ---- handloop's record as AgentDojo's messages ----
def _converted(messages: list[dict], ran: list[_Ran], answer: str) -> list[ChatMessage]:
    """The run's messages after its goal, as AgentDojo's: see the module's invariants."""
    left = list(ran)
    out: list[ChatMessage] = []
    results = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"}
    for message in messages:
        role = message.get("role")
        if role == "user" and message.get("name") != "loop":
            out.append(ChatUserMessage(role="user", content=[text_content_block_from_string(_text(message))]))
        elif role == "assistant":
            out += _assistant(message, results, left)
    if not out or out[-1]["role"] != "assistant" or out[-1]["tool_calls"]:
        out.append(ChatAssistantMessage(role="assistant", content=[text_content_block_from_string(answer or "")],
                                        tool_calls=None))
    return out


def _assistant(message: dict, results: dict, left: list[_Ran]) -> list[ChatMessage]:
    executed: list[FunctionCall] = []
    tools: list[ChatMessage] = []
    for call in message.get("tool_calls") or []:
        function = FunctionCall(function=call["function"]["name"], args=_args(call["function"].get("arguments")),
                                id=call.get("id"))
        result = _loaded((results.get(call.get("id")) or {}).get("content"))
        done = None if isinstance(result, dict) and "blocked_by" in result else _take(left, function)
        if done is not None:
            executed.append(function)
            tools.append(ChatToolResultMessage(role="tool", content=[text_content_block_from_string(done.text)],
                                               tool_call_id=function.id, tool_call=function, error=done.error))
        else:
            why = result.get("error") if isinstance(result, dict) else result
            guard = result.get("blocked_by", "not run") if isinstance(result, dict) else "not run"
            tools.append(ChatToolResultMessage(role="tool", content=[text_content_block_from_string(str(why or ""))],
                                               tool_call_id=function.id, tool_call=function,
                                               error=f"not executed ({guard}): {why}"))
    text = _text(message)
    head = ChatAssistantMessage(role="assistant", content=[text_content_block_from_string(text)] if text else None,
                                tool_calls=executed or None)
    return [head, *tools]


def _take(left: list[_Ran], call: FunctionCall) -> _Ran | None:
    """The first logged run of `call` (same tool and arguments; else the first of the same tool), taken off."""
    same = [r for r in left if r.tool == call.function and _canon(r.args) == _canon(call.args)] or \
           [r for r in left if r.tool == call.function]
    if not same:
        return None
    left.remove(same[0])
    return same[0]


def _canon(args: Mapping[str, Any]) -> str:
    return json.dumps({k: v for k, v in args.items() if k != "idempotency_key"}, sort_keys=True, default=str)


def _args(raw: Any) -> dict[str, Any]:
    value = _loaded(raw) if isinstance(raw, str) else raw
    return value if isinstance(value, dict) else {}


def _loaded(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def string_lists(args: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments with a list written as text ("['a@b.c']") read as the list, as AgentDojo's own executor does.

    Args:
        args: a call's arguments.

    Returns:
        The same arguments, each text that is a Python list literal as that list.
    """
    out = dict(args)
    for key, value in args.items():
        if isinstance(value, str) and value.startswith("["):
            try:
                parsed = literal_eval(value)
            except (ValueError, SyntaxError):
                continue
            if isinstance(parsed, list):
                out[key] = parsed
    return out

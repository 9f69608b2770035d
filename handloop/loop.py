"""The order of a turn: the only place that knows it.

Invariants: compact before ask, screen before execute, audit after flatten, as adjacent lines
of `turns()`; `messages` is the full record (compaction works on a copy) and stays paired (every
tool call answered, in order) at every audit; messages and trace records are only appended,
never edited in place (messages[0] is replaced whole, and only when a compaction epoch starts),
so the audit encodes each one once and each request extends the previous one between epochs;
every way out of the loop sets status and reason and writes the audit file, an exception of our own
included (`run()` records it `error/internal` with its one line: never left `running`, and --resume goes on
from the last audited turn); turn numbers and tokens continue across resumes. A turn's trace record says what
the cut of an MCP result dropped (toolset.Cut) the first time it drops it: once per tool and path in a run.
What the loop itself tells the model (a nudge) is a user message named "loop", recorded as such and never taken for
the user's reply; what follows a model answer is steer.py's (done, suspended, or a nudge); a nudge to act forces
the call of the tool it names (the next step, or for an offer in words the write offered: the user is then shown
that exact call), pushed once more when the forced call was blocked for its arguments or by a rule (`forcing`);
the final-answer instruction goes into the system message of that one request, never into the record. When the
user approves held calls, the loop itself issues exactly those calls, as held, in the next turn instead of asking
the model (`confirmed_call`: an assistant message named "loop", paired with its tool messages like any other); the
model is asked only for its answer after it, and is sent its own call answered by that result (context.projected:
the approval stays in the record). Everything the loop says is in the run's agent's language (texts/__init__.py);
the system prompt is the agent's own.

What a turn does to the world (ask the model, run the allowed calls) is not done here: `turns()`
yields it (Ask, Execute) and is sent what came of it, so one order of a turn serves every way of
running it. `run()` drives it in this process (Local: today's model client, executor and audit
file); durable/workflow.py drives the same generator from a Temporal workflow, whose activities do the asking
and the running. The other two touches of the world go through the run itself: `r.clock` (when
work began, what "updated" says) and `r.writer` (where a snapshot goes): the process's clock and
audit.Writer here, the workflow's clock and a writer whose snapshots an activity writes there.

A run's life between its turns (begun, reopened from its audit file, accepted for a way of
resuming, answered with the user's part) is runs.py's, above this module.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import time
from typing import TYPE_CHECKING, Any, Callable

from . import audit
from . import config
from . import context
from . import steer
from .steer import forcing, nudge
from .agents import Agent
from .calls import HookError
from .trace.send import Stretch
from .values import chars
from .executor import execute, tool_messages
from .guards import screen
from .memory import LOOP_NAME, Memory, echoed
from .model import Model, ModelError, Reply, as_model, estimate_tokens

if TYPE_CHECKING:
    from .toolset import ToolSet


@dataclasses.dataclass
class Run:
    run_id: str
    path: str
    mode: str
    model: str
    messages: list
    memory: Memory
    tools: list
    trace: list = dataclasses.field(default_factory=list)
    status: str = "running"
    reason: str = ""
    turn: int = 0
    policy: config.Policy = dataclasses.field(default_factory=config.Policy)
    created: str = ""
    answer: str = ""
    detail: str = ""
    fsync: bool = True
    window: context.Window = dataclasses.field(default_factory=context.Window)
    elapsed: float = 0.0          # seconds the run has worked in the loop, resumes added up
    since: float | None = None    # when the current stretch of work began (time.monotonic)
    mcp_url: str | None = None    # MCP mode over HTTP: the server's URL (a resume goes back to it)
    agent: Agent = None           # type: ignore[assignment]  # whose run it is (its memory's, when not given)
    writer: audit.Writer = dataclasses.field(init=False, repr=False, compare=False)    # this run's audit writes
    declared: dict | None = dataclasses.field(default=None, repr=False, compare=False)  # its agent, as recorded
    clock: Clock = dataclasses.field(default=None, repr=False, compare=False)  # type: ignore[assignment]   # whose time the run keeps
    temporal: dict | None = None  # on Temporal: where its workflow runs ({"queue": ...}); None on one machine
    warnings: list = dataclasses.field(default_factory=list, repr=False, compare=False)  # reopened: what disagreed

    # the policy's limits, as the loop reads them
    max_turns = property(lambda r: r.policy.max_turns, lambda r, v: setattr(r.policy, "max_turns", v))
    budget = property(lambda r: r.policy.token_budget, lambda r, v: setattr(r.policy, "token_budget", v))
    compact_budget = property(lambda r: r.policy.compact_budget, lambda r, v: setattr(r.policy, "compact_budget", v))

    def __post_init__(self):
        self.writer = audit.Writer(self.path, self.fsync)
        self.clock = self.clock or PROCESS_CLOCK
        self.agent = self.agent or self.memory.agent
        self.declared = self.declared or self.agent.declared()   # once: every snapshot records the same

    @property
    def say(self):
        return self.agent.say

    @property
    def proposal(self) -> dict | None:
        """The proposal in force, or None when none waits: a copy of its record (confirmation/ledger.py),
        {"number", "state": "proposed" | "confirmed", "words": the model's own words beside its calls (or None),
        "calls": [each held call, {"n": its number, "tool", "args": every argument, "digest", "state", "id"}]}.
        What a program shows its user before `handloop.confirm` (a benchmark's simulated user reads it too); the
        audit file's `memory.proposals` keeps every proposal and what became of each call."""
        current = self.memory.current
        return copy.deepcopy(current) if current is not None else None


def _silent(kind: str, **data: Any) -> None:
    """A report that hears nothing."""


def run(r: Run, ask: Model | Callable[..., Reply], toolset: ToolSet, report: Callable[..., None] | None = None,
        *, export: bool = True) -> Run:
    """Drive run `r` in this process until it is done, suspended, stopped or fails; returns `r`. `ask`: a Model
    (model.connect, or your own), or a plain function ask(messages, tools, final=False) -> Reply.
    `report(kind, **data)` hears the run as it goes (turns, streamed words, tools). An exception that is no
    tool's (those are tool errors) ends the run `error/internal`, on record with its one line; resume goes on.
    The run records the model's name (`ask.name`, when it has one). `export`: the stretch of work is exported as
    OpenTelemetry spans when the environment asks, as the command line's (trace/send.py: OTEL_EXPORTER_OTLP_ENDPOINT);
    what went wrong with that is one line, reported as ("trace", line=...) and warned, never a changed outcome."""
    report = report or _silent
    name = getattr(ask, "name", None)
    if isinstance(name, str) and name:
        r.model = name
    stretch = Stretch(r.path, r.turn) if export else None
    try:
        return drive(turns(r, toolset, report), Local(r, ask, toolset, report))
    except HookError as exc:
        return hook_failed(r, exc)
    except Exception as exc:                  # a fault of our own (or of `report`): on record, never left running
        return internal(r, exc)
    finally:
        if stretch is not None:
            _exported(r, stretch, report)


def _exported(r, stretch, report):
    """The stretch's spans sent, when asked for; why not, said (report, and a warning), never raised."""
    line = stretch.finish(r.say)
    if not line:
        return
    import warnings
    warnings.warn(line, RuntimeWarning, stacklevel=3)
    try:
        report("trace", line=line)
    except Exception:                         # the caller's report failing says nothing new about the run
        pass


def turns(r, toolset, report=lambda kind, **data: None):
    """The order of a turn, as a generator: it yields what touches the world (Ask, Execute), is sent
    what came of it (a ModelError is thrown in), and returns `r` once the run is done, suspended,
    stopped or failed."""
    memory, messages, r.since = r.memory, r.messages, r.clock.monotonic()
    tools_chars = len(json.dumps(r.tools, ensure_ascii=False))           # the schemas are sent every turn
    while r.turn < r.max_turns:
        outgoing, size = compact(r, toolset, tools_chars)                 # compact a copy, before asking
        sent = (size, chars(messages))                                    # what is sent, the full history
        stop = _over_limit(r, estimate_tokens(sent[0] + tools_chars))     # budget and deadline, before paying
        if stop:
            return finish(r, "stopped", *stop)
        try:
            reply = confirmed_call(r, toolset) or (yield Ask(outgoing, force=forcing(r)))   # ask the model
        except ModelError as exc:
            if empty_again(r, exc, sent, report):
                continue
            return failed(r, exc)
        r.turn += 1
        memory.used_tokens += reply.tokens
        if not reply.tool_calls:
            if answered(r, reply, sent, report):
                return r
            continue
        pending, outcomes = toolset.prepare(reply.tool_calls), dict[str, Any]()   # parse + validate arguments
        for allowed, blocked in screen(pending, memory, r.budget, toolset.preview, outcomes):  # guards decide,
            outcomes.update((yield Execute(allowed)), **blocked)             # then run
        tool_msgs = tool_messages(pending, outcomes, r.policy.result_max_chars, r.say)   # flatten in request order
        messages.extend([reply.message, *tool_msgs])                       # one step: never half a turn
        memory.absorb_turn(pending, [outcomes[c.id].result for c in pending], reply.text)
        r.trace.append(_record(r, reply, sent, pending, outcomes))
        save(r)                                                            # audit after flatten
        report("turn", run=r, reply=reply, calls=pending, outcomes=outcomes)
        stop = _stop_reason(r) or _proposed(r, pending, outcomes)
        if stop:
            return finish(r, *stop)
    return (yield from last_answer(r, toolset, report))


def compact(r, toolset, tools_chars):
    """This turn's request and its size in characters. Over the compaction budget, a new epoch
    starts first: the history before the recent rounds is compacted and the memory block
    rewritten, together."""
    outgoing = r.window.request(r.messages, toolset.tool, r.say)
    size = chars(outgoing)
    if estimate_tokens(size + tools_chars) <= r.compact_budget:
        return outgoing, size
    start = context.boundary(r.messages)
    if start is None or start <= r.window.start:
        return outgoing, size                                             # nothing older left to compact
    r.messages[0] = system_message(r.agent, r.memory, r.turn)
    since = chars([r.messages[0], *(context.recent(m, r.say) for m in r.messages[start:])])
    room = int(r.compact_budget * config.COMPACT_TARGET * config.CHARS_PER_TOKEN) - tools_chars - since
    r.window = context.Window(start, max(0, room), r.turn)
    outgoing = r.window.request(r.messages, toolset.tool, r.say)
    return outgoing, chars(outgoing)


def system_message(agent, memory, turn):
    """The agent's instructions, then the memory block (none while nothing is settled)."""
    block = memory.render(turn)
    return {"role": "system", "content": agent.instructions + "\n\n" + block if block else agent.instructions}


def answered(r, reply, sent, report):
    """The model answered without tools. Returns r when the run ends here (done or suspended for
    the user), None when the loop nudged the model and goes on."""
    r.messages.append(reply.message)
    r.memory.absorb_answer(reply.text)
    echo = echoed(reply.text, r.messages)
    reply.notes += [f"the answer claims {kind} work, but no {kind} tool succeeded in this run"
                    for kind in r.memory.unbacked(reply.text)] + (["the answer gives a tool result back"] if echo else [])
    reply.notes += [f"the answer names {arg} {', '.join(sorted(named))}, but the receipt of {tool} says "
                    f"{', '.join(sorted(written))}" for tool, arg, named, written in r.memory.contradicted(reply.text)]
    r.trace.append(_record(r, reply, sent, [], {}))
    r.answer = "" if echo else reply.text                                 # an echo is no answer for the user
    report("answer", run=r, reply=reply)
    status, reason = steer.verdict(r.memory, reply.written_calls, reply.text, echo)
    if status != "nudge":
        return finish(r, status, reason)
    text = nudge(r, reason, reply.written_problems)
    save(r)
    report("nudge", run=r, text=text)
    return None


AGAIN_ON = ("empty_reply", "length")    # replies that cannot be used, asked again once with a note of their kind


def empty_again(r, exc, sent, report):
    """An empty reply, or one cut off at the token limit (finish_reason "length"): the first time since the
    last message, the loop asks again with that kind's nudge in the record (the identical request tends to come
    back the same: empty, or cut at the same place; the note says answer briefly or make the call) and returns
    True; when the reply to that nudge cannot be used either, False (the run fails)."""
    if exc.kind not in AGAIN_ON or any(str(r.messages[-1].get("content")) == r.say(f"nudge.{kind}")
                                       for kind in AGAIN_ON):
        return False
    r.turn += 1
    r.memory.used_tokens += exc.tokens
    text = nudge(r, exc.kind)
    tokens_in, tokens_out = exc.split or (None, None)
    void = Reply({}, [], exc.tokens, False, 0.0, [f"{exc.kind}: asked again with a nudge"],   # what it cost
                 tokens_in=tokens_in, tokens_out=tokens_out)
    r.trace.append(_record(r, void, sent, [], {}))
    save(r)
    report("nudge", run=r, text=text)
    return True


def confirmed_call(r, toolset):
    """The calls the user just approved: the loop issues them itself, exactly as held (the ledger's records:
    their tool and arguments), in the order they were proposed, instead of asking the model to repeat them. The
    reply is the loop's, recorded as such: an assistant message named "loop" whose calls' ids are the turn's own
    (deterministic, so a workflow replays them). None unless the record ends with the user's own reply and approved
    calls wait to run."""
    last = r.messages[-1]
    approved = r.memory.ledger.approved()
    if not approved or last.get("role") != "user" or last.get("name") == LOOP_NAME:
        return None
    raw = [{"id": f"call_loop_{r.turn + 1}" + (f"_{i}" if i else ""), "type": "function",
            "function": {"name": held["tool"],
                         "arguments": json.dumps(held["args"], ensure_ascii=False, separators=(",", ":"))}}
           for i, held in enumerate(approved)]
    message = {"role": "assistant", "name": LOOP_NAME, "content": None, "tool_calls": raw}
    return Reply(message, raw, 0, False, 0.0, ["issued by the loop: the calls the user approved, not asked of the model"])


def failed(r, exc):
    """The model service failed. A reply that could not be used (empty, cut off) leaves a nudge in
    the record, so that a resume sends something new instead of the same request again. The user's own
    model code failing (kind "model_code": an offline model or a function model raised) is no failure of
    the service: the run stops, recorded, and --resume goes on once the code is fixed."""
    r.memory.used_tokens += exc.tokens
    if exc.kind == "model_code":
        return finish(r, "stopped", exc.kind, exc.text(r.say))
    if exc.kind in ("empty_reply", "length") and r.say(f"nudge.{exc.kind}") != r.messages[-1].get("content"):
        nudge(r, exc.kind)
    return finish(r, "error", exc.kind, exc.text(r.say))


def last_answer(r, toolset, report):
    """Max turns reached: one last call without tools asks the model to answer from what it has.
    The instruction is added to this request's system message only (templates that accept a
    system message only first take it; a resume never stacks it)."""
    outgoing, size = compact(r, toolset, len(json.dumps(r.tools, ensure_ascii=False)))
    prompt = r.policy.final_prompt or r.say("final_prompt")
    outgoing[0] = dict(outgoing[0], content=outgoing[0]["content"] + "\n\n" + prompt)
    size += len("\n\n" + prompt)
    try:
        reply = yield Ask(outgoing, final=True)
    except ModelError as exc:
        return failed(r, exc)
    r.turn += 1
    r.memory.used_tokens += reply.tokens
    message = {"role": "assistant", "content": reply.text or r.say("no_answer")}
    if reply.tool_calls:
        reply.notes.append(f"dropped {len(reply.tool_calls)} tool call(s) from the tool-free final answer")
    r.messages.append(message)
    r.trace.append(_record(r, reply, (size, chars(r.messages)), [], {}))
    r.answer = message["content"]
    report("answer", run=r, reply=reply)
    return finish(r, "stopped", "max_turns", r.say("stop.max_turns", limit=r.max_turns))


# ---- what a turn does to the world, and this process's way of doing it ----
@dataclasses.dataclass
class Ask:
    """Ask the model for the next reply to `outgoing` (`final`: the tool-free last answer; `force`: a
    call of that tool (its name) or any tool call (True) is required, see forcing); sent back: a Reply,
    or a ModelError thrown in."""
    outgoing: list
    final: bool = False
    force: bool | str = False


@dataclasses.dataclass
class Execute:
    """Run these allowed calls of the turn (screened already); sent back: {call id: Outcome}."""
    calls: list


def drive(steps, world):
    """Run the generator `steps` (turns) to its end in this thread, each effect it yields done by
    `world` (world.ask(effect), world.execute(effect)); returns what the generator returns."""
    sent, thrown = None, None
    while True:
        try:
            effect = steps.throw(thrown) if thrown is not None else steps.send(sent)
        except StopIteration as end:
            return end.value
        sent, thrown = None, None
        try:
            sent = world.ask(effect) if isinstance(effect, Ask) else world.execute(effect)
        except ModelError as exc:
            thrown = exc


class Local:
    """This process's world: the model client `ask` (with `report` told as it streams), the executor
    over `toolset`; the crash-test fault points before and after a turn's question."""

    def __init__(self, r, ask, toolset, report):
        self.r, self.client, self.toolset, self.report = r, ask, toolset, report

    def ask(self, effect):
        if effect.final:
            return _ask(self.r, self.client, effect.outgoing, self.report, final=True)
        config.fault("before_ask")
        reply = _ask(self.r, self.client, effect.outgoing, self.report, force=effect.force)
        config.fault("after_reply")
        return reply

    def execute(self, effect):
        return execute(self.r.memory, effect.calls, self.toolset, limit=self.r.policy.result_max_chars)


class Clock:
    """The process's clock: seconds for the time a run works, and the wall time a snapshot says."""

    @staticmethod
    def monotonic():
        return time.monotonic()

    @staticmethod
    def stamp():
        return time.strftime("%Y-%m-%dT%H:%M:%S%z")


PROCESS_CLOCK = Clock()


def _ask(r, ask, outgoing, report, final=False, force=False):
    """Ask the model for turn r.turn + 1, telling `report` first ("asking"). An `ask` that streams
    hands each piece of text and each complete tool call to `report` as they arrive ("delta",
    "tool_call"; "discard" when what came of an attempt is void); only the whole reply, returned
    here, can enter the record. `force`: ask for a call of that tool (a name) or any call (True), when the
    model can (`model.forces`)."""
    report("asking", run=r)
    model = as_model(ask)
    listen = (lambda kind, **data: report(kind, run=r, **data)) if model.streams else None
    return model(outgoing, r.tools, final=final, on_event=listen, force=force if model.forces else False)


def hook_failed(r, exc):
    """A tool's own hook failed (calls.HookError): the run stops, recorded up to where it was; --resume
    goes on once the agent's code is fixed."""
    return finish(r, "stopped", "hook", exc.args[0](r.say))


def internal(r, exc):
    """An exception of our own stopped the run: it is recorded `error/internal` with the exception's one line.
    The record is what the last whole step left (messages are only appended whole, so it stays paired);
    --resume (runs.resume) goes on from it."""
    return finish(r, "error", "internal", one_line(exc))


def one_line(exc):
    """An exception as one short line: its type and the first line of what it says."""
    try:
        said = str(exc).strip()
    except Exception:                          # its own __str__ failed
        said = ""
    first = said.splitlines()[0][:300] if said else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def finish(r, status, reason, detail=""):
    """Every way out of the loop: set status and reason, stop the clock, write the audit file."""
    r.status, r.reason, r.detail = status, reason, detail
    stop_clock(r)
    save(r)
    return r


def _over_limit(r, need):
    """Why the next request must not be sent: the token budget, or the policy's deadline."""
    if r.memory.used_tokens + need > r.budget:
        return "budget", r.say("stop.budget_ahead", need=need, budget=r.budget)
    deadline = r.policy.deadline
    if deadline is not None and _worked(r) >= deadline:
        return "deadline", r.say("stop.deadline", worked=_worked(r), deadline=deadline)
    return None


def _worked(r):
    return r.elapsed + (r.clock.monotonic() - r.since if r.since is not None else 0.0)


def _stop_reason(r):
    if r.memory.spins >= config.SPIN_LIMIT:
        return "stopped", "spin", r.say("stop.spin", spins=r.memory.spins)
    if r.memory.used_tokens > r.budget:
        return "stopped", "budget", r.say("stop.budget", used=r.memory.used_tokens, budget=r.budget)
    return None


def _proposed(r, pending, outcomes):
    """A write was held as a proposal and nothing else in the turn needs the model: the run waits
    for the user at once (the proposal is shown exactly; asking the model to repeat it in words
    would cost a call and add nothing)."""
    results = [outcomes[c.id].result for c in pending]
    if not r.memory.waiting() or not any("proposal" in x for x in results):
        return None
    if all("error" not in x or "proposal" in x or x.get("blocked_by") == "duplicate" for x in results):
        return "suspended", "awaiting_confirmation"
    return None


def _record(r, reply, sent, pending, outcomes):
    tools = []
    for c in pending:
        o = outcomes[c.id]
        tools.append({"id": c.id, "name": c.name, "status": o.status, "guard": o.guard, "seconds": round(o.seconds, 4),
                      "concurrent": o.concurrent})
        notice = _unsaid(c.name, o.notice, [t for record in r.trace for t in record.get("tools") or ()] + tools)
        if notice:
            tools[-1]["notice"] = notice
        if o.blocks:                        # an MCP text result's content blocks, as the server sent them (bounded)
            tools[-1]["blocks"] = list(o.blocks)
    return {"turn": r.turn, "model_seconds": round(reply.seconds, 4), "tokens": reply.tokens,
            "tokens_estimated": reply.estimated, "tokens_in": reply.tokens_in, "tokens_out": reply.tokens_out,
            **({"tokens_cached": reply.tokens_cached} if reply.tokens_cached is not None else {}),
            "used_tokens": r.memory.used_tokens,
            "chars_sent": sent[0], "chars_full": sent[1], "notes": reply.notes, "tools": tools}


def _unsaid(name, notice, earlier):
    """What an MCP result's notice (toolset.Cut: the fields its cut dropped, the lists and strings it shortened)
    adds to what the trace (`earlier`: its tool entries) has said for this tool: each path once per run, resumes
    included; None when nothing is new."""
    if not notice:
        return None
    dropped: set[str] = set()
    cut: set[object] = set()
    more = False
    for entry in earlier:
        said = entry.get("notice") if entry.get("name") == name else None
        if isinstance(said, dict):
            dropped.update(said.get("dropped") or ())
            cut.update(c.get("path") for c in said.get("cut") or () if isinstance(c, dict))
            more = more or bool(said.get("more"))
    new = {"dropped": [p for p in notice["dropped"] if p not in dropped], "more": 0 if more else notice["more"],
           "cut": [c for c in notice["cut"] if c["path"] not in cut]}
    return new if new["dropped"] or new["more"] or new["cut"] else None


# ---- the audit file: what a run is, at every save ----
def snapshot(r):
    return {"version": config.AUDIT_VERSION, "run_id": r.run_id, "status": r.status, "reason": r.reason,
            "detail": r.detail, "turn": r.turn, "mode": r.mode, "model": r.model,
            "created": r.created, "updated": r.clock.stamp(),
            "limits": {"max_turns": r.max_turns, "budget": r.budget}, "policy": r.policy.to_dict(),
            "elapsed": round(_worked(r), 3), "epoch": r.window.to_dict(), "answer": r.answer,
            "agent": r.declared, "messages": r.messages, "memory": r.memory.to_dict(), "tools": r.tools,
            "trace": r.trace,
            **({"mcp_url": r.mcp_url} if r.mcp_url else {}), **({"temporal": r.temporal} if r.temporal else {})}


def save(r):
    r.writer.write(snapshot(r))


def stop_clock(r):
    """The current stretch of work ends (the run waits, or the process leaves the loop)."""
    r.elapsed, r.since = _worked(r), None

"""The order of a turn: the only place that knows it.

Invariants: compact before ask, screen before execute, audit after flatten, as adjacent lines
of `run()`; `messages` is the full record (compaction works on a copy) and stays paired (every
tool call answered, in order) at every audit; messages and trace records are only appended,
never edited in place (messages[0] is replaced whole), so the audit encodes each one once;
every way out of the loop sets status and reason and writes the audit file; turn numbers and
tokens continue across resumes.
"""
import dataclasses
import json
import os
import time

import audit
import config
from executor import execute, tool_messages
from guards import screen
from memory import Memory, compact, rebuild
from model import ModelError, estimate_tokens


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
    max_turns: int = config.MAX_TURNS
    budget: int = config.TOKEN_BUDGET
    created: str = ""
    answer: str = ""
    detail: str = ""
    fsync: bool = True
    encoded: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)   # audit.encode's cache


def run(r, ask, toolset, report=lambda kind, **data: None):
    """Drive run `r` until it is done, suspended, stopped or fails; returns `r`."""
    memory, messages = r.memory, r.messages
    tools_chars = len(json.dumps(r.tools, ensure_ascii=False))           # the schemas are sent every turn
    while r.turn < r.max_turns:
        messages[0] = {"role": "system", "content": config.SYSTEM_PROMPT + "\n\n" + memory.render()}
        outgoing = compact(messages)                                      # compact a copy, before asking
        sent = (_chars(outgoing), _chars(messages))                       # what is sent, the full history
        need = estimate_tokens(sent[0] + tools_chars)
        if memory.used_tokens + need > r.budget:
            return finish(r, "stopped", "budget", f"下一次请求约需 {need} tokens，会超出预算 {r.budget}")
        config.fault("before_ask")
        try:
            reply = ask(outgoing, r.tools)
        except ModelError as exc:
            return finish(r, "error", exc.kind, str(exc))
        config.fault("after_reply")
        r.turn += 1
        memory.used_tokens += reply.tokens
        if not reply.tool_calls:
            return answered(r, reply, sent, report)
        pending = toolset.prepare(reply.tool_calls)                        # parse + validate arguments
        allowed, blocked = screen(pending, memory, r.budget)               # guards, before anything runs
        outcomes = {**execute(memory, allowed, toolset), **blocked}        # run, then flatten in request order
        tool_msgs = tool_messages(pending, outcomes)
        messages.extend([reply.message, *tool_msgs])                       # one step: never half a turn
        for call, message in zip(pending, tool_msgs):
            memory.absorb(call, message["content"])
        r.trace.append(_record(r, reply, sent, pending, outcomes))
        save(r)                                                            # audit after flatten
        report("turn", run=r, reply=reply, calls=pending, outcomes=outcomes)
        stop = _stop_reason(r)
        if stop:
            return finish(r, "stopped", *stop)
    return last_answer(r, ask, report)


def answered(r, reply, sent, report):
    """The model answered without tools: the run is done, or suspended waiting for the user."""
    text = (reply.message.get("content") or "").strip()
    if not text:
        r.trace.append(_record(r, reply, sent, [], {}))
        return finish(r, "error", "empty_reply", "模型返回了空回复（没有内容也没有工具调用）")
    r.messages.append(reply.message)
    r.trace.append(_record(r, reply, sent, [], {}))
    r.answer = text
    report("answer", run=r, reply=reply)
    memory = r.memory
    if memory.proposal is not None and not memory.confirmed:
        return finish(r, "suspended", "awaiting_confirmation")
    if memory.booking is None and text.endswith(("?", "？")):
        return finish(r, "suspended", "awaiting_reply")
    return finish(r, "done", "final_answer")


def last_answer(r, ask, report):
    """Max turns reached: one last call without tools asks the model to answer from what it has."""
    r.messages.append({"role": "system", "content": config.FINAL_PROMPT})
    outgoing = compact(r.messages)
    try:
        reply = ask(outgoing, r.tools, final=True)
    except ModelError as exc:
        return finish(r, "error", exc.kind, str(exc))
    r.turn += 1
    r.memory.used_tokens += reply.tokens
    message = {"role": "assistant", "content": reply.message.get("content") or "（模型没有给出答复）"}
    if reply.tool_calls:
        reply.notes.append(f"dropped {len(reply.tool_calls)} tool call(s) from the tool-free final answer")
    r.messages.append(message)
    r.trace.append(_record(r, reply, (_chars(outgoing), _chars(r.messages)), [], {}))
    r.answer = message["content"]
    report("answer", run=r, reply=reply)
    return finish(r, "stopped", "max_turns", f"达到最大轮数 {r.max_turns}")


def finish(r, status, reason, detail=""):
    """Every way out of the loop: set status and reason, write the audit file."""
    r.status, r.reason, r.detail = status, reason, detail
    save(r)
    return r


def _stop_reason(r):
    if r.memory.spins >= config.SPIN_LIMIT:
        return "spin", f"已拦截 {r.memory.spins} 次打转调用，停止运行"
    if r.memory.used_tokens > r.budget:
        return "budget", f"已用 {r.memory.used_tokens} tokens，超过预算 {r.budget}"
    return None


def _chars(messages):
    """Characters of content and tool calls: what a request carries, schemas aside."""
    total = 0
    for m in messages:
        total += len(m.get("content") or "")
        for c in m.get("tool_calls") or ():
            total += len(c["function"]["arguments"]) + len(c["function"]["name"])
    return total


def _record(r, reply, sent, pending, outcomes):
    return {"turn": r.turn, "model_seconds": round(reply.seconds, 4), "tokens": reply.tokens,
            "tokens_estimated": reply.estimated, "used_tokens": r.memory.used_tokens,
            "chars_sent": sent[0], "chars_full": sent[1], "notes": reply.notes,
            "tools": [{"id": c.id, "name": c.name, "status": outcomes[c.id].status, "guard": outcomes[c.id].guard,
                       "seconds": round(outcomes[c.id].seconds, 4), "concurrent": outcomes[c.id].concurrent}
                      for c in pending]}


# ---- the audit file as resume point ----
def snapshot(r):
    return {"version": config.AUDIT_VERSION, "run_id": r.run_id, "status": r.status, "reason": r.reason,
            "detail": r.detail, "turn": r.turn, "mode": r.mode, "model": r.model,
            "created": r.created, "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "limits": {"max_turns": r.max_turns, "budget": r.budget}, "answer": r.answer,
            "messages": r.messages, "memory": r.memory.to_dict(), "tools": r.tools, "trace": r.trace}


def save(r):
    audit.write(r.path, snapshot(r), fsync=r.fsync, cache=r.encoded)


def begin(audit_dir, run_id, goal, toolset, model, max_turns=None, budget=None, fsync=True):
    """A new run: its first snapshot is on disk before the model is asked anything."""
    path = audit.path_for(audit_dir, run_id)
    if os.path.exists(path):
        raise audit.AuditError(f"运行 {run_id} 已经存在（{path}）；换一个 --run-id，或用 --resume/--confirm 继续它")
    memory = Memory()
    memory.absorb_user(goal)
    r = Run(run_id, path, toolset.mode, model, [{"role": "system", "content": ""}, {"role": "user", "content": goal}],
            memory, toolset.schemas, max_turns=max_turns or config.MAX_TURNS, budget=budget or config.TOKEN_BUDGET,
            created=time.strftime("%Y-%m-%dT%H:%M:%S%z"), fsync=fsync)
    r.messages[0] = {"role": "system", "content": config.SYSTEM_PROMPT + "\n\n" + memory.render()}
    save(r)
    return r


def reopen(audit_dir, run_id, toolset_for, accept):
    """A run loaded from its audit file, memory rebuilt from its messages.

    `accept(snapshot)` raises AuditError when the run is not in a state the caller can use;
    `toolset_for(snapshot)` makes the tool set of the recorded mode. Returns (run, toolset, warnings).
    """
    path = audit.path_for(audit_dir, run_id)
    snap = audit.load(path)
    if snap["run_id"] != run_id:
        raise audit.AuditError(f"审计文件 {path} 记录的运行 id 是 {snap['run_id']!r}，与文件名不符")
    accept(snap)
    toolset = toolset_for(snap)
    memory = rebuild(snap["messages"], toolset.prepare)
    memory.used_tokens = sum(t.get("tokens", 0) for t in snap["trace"] if isinstance(t, dict))
    warnings = _disagreements(snap["memory"], memory)
    limits = snap.get("limits") or {}
    r = Run(snap["run_id"], path, snap["mode"], snap.get("model", ""), snap["messages"], memory, snap["tools"],
            trace=snap["trace"], status=snap["status"], reason=snap.get("reason", ""), turn=snap["turn"],
            max_turns=limits.get("max_turns", config.MAX_TURNS), budget=limits.get("budget", config.TOKEN_BUDGET),
            created=snap.get("created", ""), answer=snap.get("answer", ""))
    return r, toolset, warnings


def _disagreements(stored, rebuilt):
    """Fields where the stored memory says something the messages do not."""
    fresh = rebuilt.to_dict()
    return [key for key in ("confirmed", "proposal", "hotel_ids", "plan", "booking", "used_tokens")
            if stored.get(key) != fresh.get(key)]


def add_user(r, text):
    """Append the user's reply and take it into memory; the audit file has it before any model call."""
    r.messages.append({"role": "user", "content": text})
    r.memory.absorb_user(text)
    r.status, r.reason = "running", ""
    save(r)

"""What the command line prints about a run: each turn (its figures, the model's words, every call
and what came of it, and what the cut of an MCP result dropped, the first time the trace says it), the answer (with a
note when it claims work that never ran, or names another value than a write's receipt, and why an answer that
looked like a proposal is not taken as one), the loop's nudges, the MCP server a run talks to, and the summary
with what the user can do next, and the one line saying why a trace was not exported. Nothing else: it
reads a run, it never changes one, and nothing it prints makes it raise (a tool's own `gist` that fails is
replaced by the start of the JSON).

What happens while a reply streams is shown by cli/live.py; a turn is printed here once it is over,
under what cli/live.py showed as it came.
"""
import json
import sys

from ..confirmation import shown
from ..texts.stated import returned

SHOWN_MAX = 300        # characters of one value the printout shows; the rest is said by its length
REASON_MAX = 1000      # characters of an error or a guard's reason shown (the values available are at its end)
MARK = {"ok": "✓", "error": "✗", "timeout": "⏱", "unknown": "?", "blocked": "⛔"}


def mcp_line(toolset, say):
    """The MCP servers a run talks to, each with its version and the tools it gives (nothing for a local run)."""
    for name, client in getattr(toolset, "clients", {}).items():
        tools = sorted(t for t, server in toolset.server_of.items() if server == name)
        print(say("cli.mcp_line", name=name, where=client.where, version=client.version, tools=", ".join(tools)))


def report(kind, run, reply=None, calls=(), outcomes=None, text="", streamed=False, **_):
    """Print one turn, the model's answer, or the loop's nudge, once it is over (under the turn's
    header, after the text cli/live.py showed as it came: `streamed`)."""
    say = run.say
    if kind == "nudge":
        print("   " + say("cli.nudge", text=text))
        return
    if kind not in ("turn", "answer"):
        return
    trace = run.trace[-1]
    if kind == "turn" and reply.message.get("name") == "loop":     # the confirmed call, issued by the loop
        print(say("cli.confirmed_call", turn=run.turn))
    else:
        print("   " + say("cli.stats", seconds=reply.seconds, tokens=reply.tokens,
                            estimated=say("cli.estimated") if reply.estimated else "", total=run.memory.used_tokens,
                            cached=say("cli.cached", cached=reply.tokens_cached, given=reply.tokens_in)
                            if reply.tokens_cached is not None and reply.tokens_in else "",
                            sent=trace["chars_sent"], full=trace["chars_full"]))
    if kind == "answer":
        if not run.answer:                                  # an echo of a tool result: no answer
            print("   " + say("cli.echo"))
        elif not streamed:
            print("   " + say("cli.answer", text=run.answer.replace("\n", "\n   ")))
        for claimed in run.memory.unbacked(run.answer):     # what it says it did, and nothing of the kind ran
            print("   " + say(f"cli.unbacked.{claimed}"))
        for tool, arg, named, written in run.memory.contradicted(run.answer):   # what it says, and the receipt
            print("   " + say("cli.contradicts", tool=tool, arg=arg, named=", ".join(sorted(named)),
                              written=", ".join(sorted(written))))
        return
    if reply.message.get("content") and not streamed:
        print("   " + say("cli.model", text=reply.message["content"].strip().replace("\n", " ")[:200]))
    together = [c.name for c in calls if outcomes[c.id].concurrent]
    if together:
        print("   " + say("cli.together", names=", ".join(together)))
    said = {t.get("id"): t.get("notice") for t in trace.get("tools") or ()}
    for call in calls:
        outcome = outcomes[call.id]
        where = say("cli.blocked", guard=outcome.guard) if outcome.status == "blocked" else f"{outcome.seconds:.3f}s"
        print(f"   {MARK.get(outcome.status, '?')} {call.name} {call.arguments[:160]} → "
              + say("cli.outcome", gist=_gist(call, outcome.result, say), where=where))
        for line in notice_lines(call.name, said.get(call.id), say):
            print("     " + line)


SHOWN_PATHS = 12          # dropped paths printed of a notice (the trace holds more)


def notice_lines(tool, notice, say):
    """What an MCP result's cut took, as the trace records it the first time (loop.py: once per tool and path):
    the fields not declared that were dropped, and the lists and strings shortened."""
    if not isinstance(notice, dict):
        return []
    lines, dropped = [], list(notice.get("dropped") or ())
    more = max(0, len(dropped) - SHOWN_PATHS) + (notice.get("more") or 0)
    if dropped or more:
        fields = ", ".join(dropped[:SHOWN_PATHS]) + (say("cli.dropped_more", count=more) if more else "")
        lines.append(say("cli.dropped", tool=tool, fields=fields))
    cuts = [say("cli.cut_items", path=c["path"], items=c["items"], of=c["of"]) if "items" in c else
            say("cli.cut_chars", path=c["path"], chars=c.get("chars")) for c in notice.get("cut") or () if isinstance(c, dict)]
    if cuts:
        lines.append(say("cli.cut", tool=tool, cuts=say.join(cuts)))
    return lines


def _gist(call, result, say):
    """One line of a result: what its tool's declaration says, or the start of its JSON."""
    if "error" in result:                   # a guard's reason whole: what may be used is at its end
        return say("cli.error", error=_long(" ".join(str(result["error"]).split()), say, REASON_MAX))
    return _told(call.tool.gist if call.tool else None, returned(result), 120)


def _told(gist, values, limit=None):
    """`gist(values)`, a tool's own line (its code may fail: then the start of the JSON instead)."""
    if gist is not None:
        try:
            return str(gist(values))
        except Exception:
            pass
    return json.dumps(values, ensure_ascii=False)[:limit]


def _proposal_lines(r, toolset):
    """What the user is asked to confirm: the proposal's exact calls, each with its number and every argument
    (confirmation/shown.py), the model's own words before them when it wrote any."""
    current = r.memory.current
    if current is None:
        return ""
    lines = [r.say("proposal.header", number=current["number"]), *shown.proposal_lines(current, r.say)]
    return "\n   ".join(lines)


def _shown(toolset, name, values, say):
    """What a proposal states: its tool's gist when the tool also describes its proposals (a gist is
    written for receipts), else each stated value; never a value the proposal does not have."""
    tool = toolset.tool(name) if name else None
    if not isinstance(values, dict):                 # a receipt that is no JSON object (a string, a list)
        return _told(tool.gist if tool else None, values, 300)
    shown = {k: v for k, v in values.items() if k not in ("tool", "why") and v is not None}
    if tool and tool.gist and tool.describe:
        return _told(tool.gist, shown)
    return ", ".join(_item(k, v, say) for k, v in shown.items())


def _item(key, value, say):
    """One stated value; a list item by item (key[1]=..., key[2]=...), so that each element is seen."""
    if isinstance(value, list) and value:
        return ", ".join(_item(f"{key}[{i}]", v, say) for i, v in enumerate(value, 1))
    return f"{key}={_long(value, say)}" if isinstance(value, (str, int, float)) else \
        f"{key}={_long(json.dumps(value, ensure_ascii=False), say)}"


def _long(value, say, limit=SHOWN_MAX):
    """A value as the printout shows it: a long text cut visibly, with its length (the audit file and the
    trace page keep it whole)."""
    text = str(value)
    if len(text) <= limit:
        return text
    return say("cli.cut_value", head=text[:limit], size=len(text))


def summary(r, seconds, toolset, more="", cmd="handloop"):
    """How the run ended, and what the user can do next: the command as the user ran it (`cmd`: `handloop`,
    `python -m handloop`, `python agent.py`) with the options the next command needs (`more`)."""
    say = r.say
    where = say("cli.audit_file", path=r.path)
    head = say("cli.head", run_id=r.run_id, turns=r.turn, tokens=r.memory.used_tokens, seconds=seconds)
    if r.status == "suspended" and r.reason == "awaiting_confirmation" and r.memory.waiting():
        waiting = r.memory.waiting()
        print("\n" + say("cli.wait_confirm", head=head, proposal=_proposal_lines(r, toolset), run_id=r.run_id + more,
                         confirm=r.agent.confirm[0], where=where, cmd=cmd))
        if len(waiting) > 1:
            print(say("cli.wait_some", cmd=cmd, run_id=r.run_id + more, first=waiting[0]["n"]))
    elif r.status == "suspended":
        print("\n" + say("cli.wait_reply", head=head, run_id=r.run_id + more, where=where, cmd=cmd))
    elif r.status == "done":
        made = "\n   ".join(say("cli.made", tool=w["tool"], shown=_shown(toolset, w["tool"], w["receipt"], say))
                             for w in r.memory.writes) or (say("cli.no_write") if r.memory.writable else "")   # one a line
        print("\n" + say("cli.done", head=head, made=made, where=where))
    elif r.status == "stopped":
        from ..runs import RESUMABLE_STOPS          # here: --check, which imports this module, needs no run machinery
        resumable = r.reason in RESUMABLE_STOPS and r.reason != "interrupted"
        print("\n" + say("cli.stopped_resume" if resumable else "cli.stopped", reason=r.reason, detail=r.detail,
                          head=head, where=where, run_id=r.run_id + more, cmd=cmd))
    elif r.reason == "internal":
        print("\n" + say("cli.internal", detail=r.detail, head=head, run_id=r.run_id + more, where=where, cmd=cmd),
              file=sys.stderr)
    else:
        print("\n" + say("cli.failed", reason=r.reason, detail=r.detail, head=head, run_id=r.run_id + more, where=where,
                          cmd=cmd), file=sys.stderr)


def traced(stretch, say):
    """Export a stretch of work's spans (trace/send.py) when the environment asks for it; a problem is one
    line, on stderr."""
    problem = stretch.finish(say)
    if problem:
        print(problem, file=sys.stderr)

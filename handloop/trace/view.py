"""A run's timeline as one self-contained HTML page a person opens: its stretches of work (the goal, each user
reply), each with the model's lane and as many tool lanes as calls overlapped (concurrent reads side by side),
each call's status and the guard that blocked it, the proposal and the user's confirmation, tokens per turn and
in all (split into input and output where the server reported it), the loop's nudges, where the run waited and
how it ended.

Invariants: the page references nothing outside itself (no script, style sheet, font or image from anywhere;
its style is inline and it needs no script); every text comes from the loop's catalogue through `say` (the
run's agent's language); every value taken from the run is escaped and cut (`_short`: a name, id, status or
reason to NAME characters, longer texts to their own limits), so the page grows with the number of turns and
calls, never with the length of any one value; its size and the time to draw it are linear in the record.
"""
import html

from ..confirmation import shown

MIN_WIDTH = 0.6                 # per cent of a track: the narrowest bar drawn (a blocked call takes no time)
NAME = 80                       # characters shown of a name, id, status, guard, reason, model, mode or language
LIST = 2000                     # characters shown of the list of the run's tools
STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d2733;background:#f7f8fa}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:18px 0 6px}
.meta{color:#4a5868;margin:0 0 12px}.legend span{display:inline-block;margin-right:14px}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;margin-right:4px}
.stretch{background:#fff;border:1px solid #d8dde3;border-radius:6px;padding:10px 14px;margin:12px 0}
.lane{display:flex;align-items:center;height:26px}.label{width:90px;flex:none;color:#4a5868;font-size:12px}
.track{position:relative;flex:1;height:20px;background:#eef1f4;border-radius:3px}
.bar{position:absolute;top:2px;height:16px;border-radius:3px;font-size:11px;line-height:16px;color:#fff;
white-space:nowrap;overflow:hidden;text-overflow:clip;padding:0 3px;box-sizing:border-box;min-width:4px}
.model{background:#5b6fd6}.ok{background:#2f9e5b}.error,.timeout,.failed{background:#d64545}
.blocked{background:#e08a1e}.proposal{background:#b8860b;outline:2px solid #7a5900}
.nudged{background:#7a4fb5}.bar.nudged{top:0;height:20px;min-width:3px;padding:0}
.axis{display:flex;justify-content:space-between;margin-left:90px;color:#6b7885;font-size:11px}
.end{margin-top:6px;font-weight:600}.end.suspended{color:#b8860b}.end.done{color:#2f9e5b}
.end.stopped,.end.error{color:#d64545}
table{border-collapse:collapse;width:100%;background:#fff;margin-top:8px}
th,td{border:1px solid #d8dde3;padding:4px 6px;text-align:left;vertical-align:top;font-size:13px}
th{background:#eef1f4}.num{text-align:right;font-variant-numeric:tabular-nums}
.call{display:inline-block;margin:1px 4px 1px 0;padding:0 5px;border-radius:3px;color:#fff;font-size:12px}
.said{white-space:pre-wrap}.nudge{color:#7a4fb5}.box{background:#fff;border:1px solid #d8dde3;border-radius:6px;
padding:8px 14px;margin:12px 0}code{font-size:12px;background:#eef1f4;padding:1px 3px;border-radius:3px}
"""


def render(timeline, say):
    """The HTML page of a timeline (timeline.Timeline), said with `say`."""
    e = html.escape
    work = sum(s.end - s.start for s in timeline.stretches)
    head = say("view.meta", model=_name(timeline.model) or "-", mode=_name(timeline.mode) or "-",
               status=_name(timeline.status), reason=_name(timeline.reason) or "-", turns=len(timeline.turns),
               tokens=timeline.tokens, seconds=f"{work:.3f}")
    title = say("view.title", run_id=_name(timeline.run_id), agent=_name(timeline.agent))
    tools = _short(", ".join(_name(t) for t in timeline.tools[:LIST]), LIST)
    parts = [f'<!doctype html><html lang="{e(_name(timeline.language))}"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width,initial-scale=1">',
             f"<title>{e(title)}</title>",
             f"<style>{STYLE}</style></head><body>",
             f'<h1>{e(title)}</h1>',
             f'<p class="meta">{e(head)}</p>', _legend(say),
             f'<p class="meta">{e(say("view.tools", tools=tools or "-"))}</p>']
    parts += [_stretch(s, say) for s in timeline.stretches]
    parts += [_agreement(timeline, say), _table(timeline, say), "</body></html>"]
    return "\n".join(parts)


def _legend(say):
    keys = (("model", "view.legend.model"), ("ok", "view.legend.ok"), ("error", "view.legend.error"),
            ("blocked", "view.legend.blocked"), ("proposal", "view.legend.proposal"), ("nudged", "view.legend.nudge"))
    return '<p class="legend">' + "".join(f'<span><i class="sw {cls}"></i>{html.escape(say(key))}</span>'
                                         for cls, key in keys) + "</p>"


def _stretch(stretch, say):
    e = html.escape
    span = max(stretch.end - stretch.start, 1e-6)

    def pos(start, seconds):
        width = max(MIN_WIDTH, 100 * seconds / span)
        return f"left:{min(100 * (start - stretch.start) / span, 100 - width):.3f}%;width:{width:.3f}%"
    title = say(f"view.stretch.{stretch.opened}", n=stretch.number, text=_short(stretch.user, 120))
    model = "".join(f'<div class="bar model" style="{pos(t.start, t.model_seconds)}" data-turn="{t.number}" '
                    f'title="{e(say("view.model_bar", turn=t.number, seconds=_s(t.model_seconds), tokens=t.tokens))}">'
                    f'{e(say("view.turn", turn=t.number))}</div>' for t in stretch.turns)
    nudges = [(t, n) for t in stretch.turns for n in t.nudges]
    model += "".join(f'<div class="bar nudged" style="{pos(t.end, 0)}" '
                     f'title="{e(say("view.nudge", text=_short(n, 300)))}"></div>' for t, n in nudges)
    lanes = [f'<div class="lane"><span class="label">{e(say("view.lane.model"))}</span>'
             f'<div class="track">{model}</div></div>']
    by_lane: dict[int, list] = {}
    for call in (c for t in stretch.turns for c in t.calls):
        by_lane.setdefault(call.lane, []).append(call)
    for lane in range(max(by_lane, default=-1) + 1):
        bars = "".join(_bar(c, pos, say) for c in by_lane.get(lane, ()))
        lanes.append(f'<div class="lane"><span class="label">{e(say("view.lane.tools", n=lane + 1))}</span>'
                     f'<div class="track">{bars}</div></div>')
    axis = f'<div class="axis"><span>0 s</span><span>{_s(span / 2)} s</span><span>{_s(span)} s</span></div>'
    outcome = _name(stretch.outcome)
    ending = say("view.suspended") if outcome == "suspended" else \
        say("view.ended", status=outcome, reason=_name(stretch.reason) or "-")
    return (f'<section class="stretch" data-stretch="{stretch.number}"><h2>{e(title)}</h2>' + "".join(lanes) + axis +
            f'<div class="end {e(outcome)}">{e(ending)}</div></section>')


def _bar(call, pos, say):
    e = html.escape
    cls = "proposal" if call.proposal else ("blocked" if call.guard else _name(call.status))
    words = _call_words(call, say)
    return (f'<div class="bar {e(cls)}" style="{pos(call.start, call.seconds)}" data-call="{e(_name(call.id))}" '
            f'data-status="{e(_name(call.status))}" title="{e(words)}">{e(_name(call.name))}</div>')


def _call_words(call, say):
    text = say("view.call", name=_name(call.name), status=_name(call.status), seconds=_s(call.seconds))
    if call.concurrent:
        text += " · " + say("view.concurrent")
    if call.guard:
        text += " · " + say("view.blocked_by", guard=_name(call.guard))
    if call.error:
        text += " · " + _short(call.error, 160)
    return text


def _agreement(timeline, say):
    """The proposal the user was shown (a blocked write, or the answer the run waited on) and their reply."""
    e = html.escape
    rows = []
    for before, after in zip(timeline.stretches, timeline.stretches[1:]):
        last = before.turns[-1] if before.turns else None
        blocked = [c for c in (last.calls if last else []) if c.proposal]
        if blocked:
            shown = "; ".join(f"{_name(c.name)} {_short(c.arguments, 600)}" for c in blocked[:20])
        else:
            shown = last.text if last else ""
        key = "view.confirmed" if after.opened == "confirm" else "view.replied"
        rows.append(f'<p><b>{e(say("view.proposal"))}</b> <span class="said">{e(_short(shown, 600))}</span><br>'
                    f'<b>{e(say(key))}</b> <code>{e(_short(after.user, 600))}</code></p>')
    rows += [_held(p, say) for p in timeline.proposals]
    body = "".join(rows) or f"<p>{e(say('view.no_proposal'))}</p>"
    return f'<section class="box agreement"><h2>{e(say("view.agreement"))}</h2>{body}</section>'


def _held(proposal, say):
    """One proposal as its record keeps it: each held call (its number, its tool and every argument) and its state."""
    calls = [c for c in proposal["calls"] if isinstance(c, dict)]
    lines = "<br>".join(html.escape(say("view.held_call", n=c.get("n"), call=_short(shown.one_line(c), 600),
                                        state=_name(c.get("state")))) for c in calls[:20])
    head = html.escape(say("view.held", number=_short(str(proposal.get("number")), NAME)))
    return f'<p><b>{head}</b><br><span class="said">{lines}</span></p>'


def _table(timeline, say):
    e = html.escape
    cols = "".join(f"<th>{e(say('view.col.' + c))}</th>" for c in ("turn", "model", "tokens", "total", "calls", "said"))
    rows = []
    for turn in timeline.turns:
        calls = "".join(f'<span class="call {"proposal" if c.proposal else "blocked" if c.guard else e(_name(c.status))}" '
                        f'title="{e(_call_words(c, say))}">{e(_name(c.name))} · {e(_name(c.status))}'
                        f'{" · " + e(say("view.blocked_by", guard=_name(c.guard))) if c.guard else ""}</span>'
                        for c in turn.calls)
        said = e(_short(turn.text, 400)) if turn.message is not None else e(say("view.empty"))
        nudges = "".join(f'<div class="nudge">{e(say("view.nudge", text=_short(n, 300)))}</div>' for n in turn.nudges)
        notes = "".join(f"<div><small>{e(_short(n, 300))}</small></div>" for n in turn.notes)
        calls += "".join(f'<div><small>{e(_name(c.name))}: {e(_short(c.error, 300))}</small></div>'
                         for c in turn.calls if c.guard and c.error)
        rows.append(f'<tr data-turn="{turn.number}"><td class="num">{turn.number}</td>'
                    f'<td class="num">{_s(turn.model_seconds)}</td>'
                    f'<td class="num">{turn.tokens}{"~" if turn.estimated else ""}{_split(turn, say)}</td>'
                    f'<td class="num">{turn.used_tokens}</td><td>{calls}</td>'
                    f'<td><div class="said">{said}</div>{nudges}{notes}</td></tr>')
    total = say("view.total", tokens=timeline.tokens)
    known = [t.split for t in timeline.turns if t.split]
    if known:
        total += say("view.total_split", tokens_in=sum(s[0] for s in known), tokens_out=sum(s[1] for s in known))
    return f"<h2>{e(say('view.turns'))}</h2><table><tr>{cols}</tr>{''.join(rows)}</table><p><b>{e(total)}</b></p>"


def _split(turn, say):
    if not turn.split:
        return ""
    words = say("view.split", tokens_in=turn.split[0], tokens_out=turn.split[1])
    return f'<div class="split"><small>{html.escape(words)}</small></div>'


def _s(seconds):
    return f"{seconds:.3f}" if seconds < 10 else f"{seconds:.1f}"


def _short(text, limit):
    text = str(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _name(text):
    """A name, id, status, guard or reason as the page shows it: cut to NAME characters ("" for None)."""
    return "" if text is None else _short(text, NAME)


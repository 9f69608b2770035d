"""`--check`'s command-line side: files in, verdicts and a report out. Resolves run ids and paths to files,
judges each conversation it holds (transcripts.load_all: a trace file may hold several, each its own entry and verdicts;
then checks.judge) as the agent its audit file records, else the agent given
(`--agent FILE`'s declaration, a plain dict), else the Xi'an agent (an OpenTelemetry trace whose spans name their
agent: as that agent, when its declaration is given or its run's audit file in the audit dir records it), and gives the verdicts as JSON or a readable report
with a summary and the exit code.

Language (judge/texts.py, one catalogue per language): each file's texts (its JSON `name`, `reason`, `notes`,
`progress_text`, `error`, and its block of the report) are said in the language of the agent it is judged as ("zh"
unless the declaration says "en"; the Xi'an agent and other systems' transcripts: Chinese); a file that cannot be read
at all and the errors before any file is read are said in the language of the agent given (`--agent FILE`), else
Chinese; the summary line in the language of the agent given, else the one all the files were said in, else Chinese.
The JSON's ids, verdicts, causes and progress stay the same machine values.

Invariants: imports no project module but the judge's own (checks.py, judge/transcripts.py, judge/formats.py, judge/texts.py) and
the leaf texts/catalogue.py (said, told); reads files, never writes; never asks a model; a file that cannot be read is reported (exit 2), never a traceback.
Exit codes: 2 when a file is unreadable or nothing is found to check; 1 when a check failed (`strict`: or is
pending); else 0.
"""
import json
import os
import re
import sys

from ..texts.catalogue import said, told
from ..judge.texts import Joined, Said, language_of, of
from ..checks import judge, not_applicable, progress, progress_said
from ..judge.formats import Unreadable
from ..judge.transcripts import load_all

VERDICT = {"pass": "✓", "fail": "✗", "pending": "○"}     # the marks; the words are check_texts "verdict.<verdict>"
RUN_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def check_file(path, agent=None, language="zh", audit_dir=None, rules=None):
    """Verdicts for one file as a dict (also what --json prints); `error` set when unreadable. `agent`: the
    declaration (agents.Agent.declared()) a file that records none is judged by (default: the Xi'an agent).
    `language`: what its texts are said in, "zh" or "en"; None: the judged agent's (what --check prints). `audit_dir`:
    where the audit file of a trace's run is looked for (an OTLP trace naming its agent, see _named). A trace file
    holding several conversations: the first one's (check_conversations gives every one). `rules`: {name: check} of
    the agent's rules whose code is given (agents.Agent.rule_checks()): a rule the file's declaration names is applied
    to the record only with its code (else its check is pending)."""
    return check_conversations(path, agent, language, audit_dir, rules)[0]


def check_conversations(path, agent=None, language="zh", audit_dir=None, rules=None):
    """The entries of every conversation in one file, each as check_file gives one (a file that cannot be read:
    one entry, its error)."""
    return [entry for entry, _ in _checked(path, agent, language, audit_dir, rules)]


def _checked(path, agent, language, audit_dir=None, rules=None):
    """[(the entry of each conversation of one file, the language its texts are said in)]: one per conversation (a
    trace file may hold several), or one entry for a file that cannot be read. None `language`: the judged agent's,
    and for a file that cannot be read, the given agent's (else Chinese)."""
    try:
        named = [_named(t, path, audit_dir, index, rules) for index, t in enumerate(load_all(path, agent, rules))]
        found = [(t, judge(t)) for t in named]
    except Unreadable as exc:
        language = language or language_of(agent)
        return [(dict(path=path, error=told(exc, of(language)), checks=[], notes=[]), language)]
    except RecursionError:
        language = language or language_of(agent)
        return [(dict(path=path, error=of(language)("file.nested", path=path), checks=[], notes=[]), language)]
    return [_entry(path, t, verdicts, language or t.agent.language, index, len(found))
            for index, (t, verdicts) in enumerate(found, 1)]


def _entry(path, t, verdicts, language, index, count):
    """(the entry of one judged conversation, its language)."""
    say = of(language)
    entry = {"path": path, "error": None, "checks": [], "notes": []}
    meta = t.meta
    entry.update(format=t.format, container=t.container, conversation=index, conversations=count,
                 run_id=meta.get("run_id"), status=meta.get("status"),
                 mode=meta.get("mode"), agent=t.agent.name, finished=t.finished, progress=progress(t),
                 progress_text=said(progress_said(t, progress(t)), say), messages=len(t.messages), turns=t.turns,
                 checks=[dict(c, name=said(c["name"], say), reason=said(c["reason"], say)) for c in verdicts],
                 not_applicable=[dict(c, name=said(c["name"], say), reason=said(c["reason"], say))
                                 for c in not_applicable(t)],
                 notes=[said(note, say) for note in t.notes])
    if t.agent.writes:               # how its confirmations were read: as its own guards, or the wider reading
        entry.update(reading="agent" if t.strict else "wide",
                     reading_text=said(Said("reading.agent", replies=Joined(json.dumps(c, ensure_ascii=False)
                                                                                for c in t.agent.confirm)) if t.strict else
                                       Said("reading.wide"), say))
    return entry, language


def _named(t, path, audit_dir, index=0, rules=None):
    """A trace whose spans name its agent (gen_ai.agent.name) judged as that agent: the declaration given, when it
    is that agent's, else the one the run's audit file in `audit_dir` records (gen_ai.conversation.id is the run
    id), when it is that agent's; else as it was, with a note saying so."""
    name = t.meta.get("agent_name")
    if not name or t.agent.name == name:
        return t
    recorded = _recorded(audit_dir, t.meta.get("run_id"), name)
    if recorded is not None:                  # the file read again as that agent: its conversation `index`
        return load_all(path, recorded, rules)[index]
    t.notes.append(Said("note.agent_named", name=name, judged=t.agent.name))
    return t


def _recorded(audit_dir, run_id, name):
    """The declaration of agent `name` the audit file of run `run_id` records, or None."""
    if not audit_dir or not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):
        return None
    try:
        with open(os.path.join(audit_dir, f"run-{run_id}.json"), encoding="utf-8") as f:
            declared = json.load(f).get("agent")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    return declared if isinstance(declared, dict) and declared.get("name") == name else None


def resolve(targets, audit_dir, cmd="handloop"):
    """Paths to check: each target as a run id (<audit-dir>/run-<id>.json) or a path; none → latest."""
    if not targets:
        return [os.path.join(audit_dir, f"run-{latest_run_id(audit_dir, cmd)}.json")]
    paths = []
    for target in targets:
        as_run = os.path.join(audit_dir, f"run-{target}.json")
        is_path = os.sep in target or "/" in target or target.endswith((".json", ".jsonl", ".ndjson"))
        use_run = not is_path and RUN_ID.fullmatch(target) and (os.path.exists(as_run) or not os.path.exists(target))
        paths.append(as_run if use_run else target)
    return paths


def latest_run_id(audit_dir, cmd="handloop"):
    """The run whose audit file changed last (newest mtime, then name); Unreadable when none (saying to start one
    with `cmd`, the command as the user ran it)."""
    try:
        names = [n for n in os.listdir(audit_dir) if n.startswith("run-") and n.endswith(".json")]
    except OSError:
        names = []
    if not names:
        raise Unreadable(Said("file.no_runs", audit_dir=audit_dir, cmd=cmd))
    newest = max(names, key=lambda n: (os.path.getmtime(os.path.join(audit_dir, n)), n))
    return newest[len("run-"):-len(".json")]


def exit_code(entries, strict=False):
    """2 when a file is unreadable; 1 when a check failed (strict: or is pending); else 0."""
    if any(e["error"] for e in entries):
        return 2
    verdicts = [c["verdict"] for e in entries for c in e["checks"]]
    return 1 if "fail" in verdicts or strict and "pending" in verdicts else 0


def _counts(verdicts):
    return {v: sum(c["verdict"] == v for c in verdicts) for v in VERDICT}


def summary(entries, strict=False):
    """The counts of a check: files (each path once), conversations judged, unreadable files, verdicts; the exit code."""
    counts = _counts([c for e in entries for c in e["checks"]])
    return {"files": len({e["path"] for e in entries}), "conversations": sum(not e["error"] for e in entries),
            "unreadable": sum(bool(e["error"]) for e in entries), **counts, "strict": strict,
            "exit": exit_code(entries, strict)}


def render(entry, language="zh"):
    """The readable report of one file, in `language` (its texts are in it already: check_file's `language`)."""
    say = of(language)
    if entry["error"]:
        return say("report.unreadable", error=entry["error"])
    shape = say(f"format.{entry['format']}") + (say("report.jsonl") if entry["container"] == "jsonl" else "")
    facts = [say("report.conversation", index=entry["conversation"], count=entry["conversations"])
             if entry.get("conversations", 1) > 1 else None,
             say("report.run", run_id=entry["run_id"]) if entry.get("run_id") else shape,
             say("report.agent", agent=entry["agent"]) if entry.get("agent") else None,
             entry.get("status") or say("report.finished" if entry["finished"] else "report.unfinished"),
             entry.get("mode"), say("report.messages", count=entry["messages"]), say("report.turns", count=entry["turns"])]
    lines = [say("report.header", path=entry["path"], facts=say("report.facts_sep").join(f for f in facts if f))]
    width, pad = max(len(c["name"]) for c in entry["checks"]), say("report.pad")
    for i, c in enumerate(entry["checks"], 1):
        lines.append(say("report.check", mark=VERDICT[c["verdict"]], index=i, name=f"{c['name']:{pad}<{width}}",
                         word=say(f"verdict.{c['verdict']}"), reason=c["reason"]))
    lines += [say("report.not_applicable", name=c["name"], reason=c["reason"]) for c in entry.get("not_applicable", [])]
    lines += [say("report.note", note=note) for note in entry["notes"]]
    lines += [say("report.reading", reading=entry["reading_text"])] if entry.get("reading_text") else []
    counts = _counts(entry["checks"])
    line = say("report.summary", passed=counts["pass"], failed=counts["fail"], pending=counts["pending"])
    if entry.get("progress_text"):
        line += say("report.progress", progress=entry["progress_text"])
    elif counts["pending"]:
        line += say("report.pending_why")
    lines.append(line)
    return "\n".join(lines)


def conclusion(totals, language="zh"):
    say = of(language)
    if totals["exit"] == 2:
        return say("end.unreadable")
    if totals["fail"]:
        return say("end.failed")
    if totals["pending"] and totals["strict"]:
        return say("end.strict_pending")
    if totals["pending"]:
        return say("end.pending")
    return say("end.passed")


def run(targets, audit_dir, as_json=False, out=None, strict=False, agent=None, cmd="handloop", rules=None):
    """`python agent.py --check [RUN_ID or PATH ...] [--json] [--strict] [--agent FILE]`: print the report, return
    the exit code. `agent`: --agent FILE's declaration (a plain dict), for files that record no agent; `cmd`: the
    command as the user ran it (a hint repeats it); `rules`: the code of its rules ({name: check}), applied to every
    file whose declaration names them. Each file is
    said in its judged agent's language; errors before any file in `agent`'s (else Chinese); the summary line in
    `agent`'s, else in the one language of all the files, else Chinese."""
    out, say = out or sys.stdout, of(language_of(agent))
    try:
        paths = resolve(targets, audit_dir, cmd)
    except Unreadable as exc:
        print(say("report.error", error=told(exc, say)), file=sys.stderr)
        return 2
    checked = [found for p in paths for found in _checked(p, agent, None, audit_dir, rules)]
    entries, languages = [entry for entry, _ in checked], {said_in for _, said_in in checked}
    language = language_of(agent) if agent is not None or len(languages) != 1 else languages.pop()
    totals = summary(entries, strict)
    if as_json:
        print(json.dumps({"files": entries, "summary": totals}, ensure_ascii=False, indent=1), file=out)
        return totals["exit"]
    for entry, said_in in checked:
        print(render(entry, said_in) + "\n", file=out)
    print(of(language)("report.total", files=totals["files"], passed=totals["pass"], failed=totals["fail"],
                       pending=totals["pending"], unreadable=totals["unreadable"],
                       conclusion=conclusion(totals, language), exit=totals["exit"]), file=out)
    return totals["exit"]

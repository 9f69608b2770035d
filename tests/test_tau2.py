"""τ²-bench through handloop (handloop/benchmarks/tau2.py): τ²'s own orchestrator drives handloop as the agent, the
domain tools run on τ²'s environment, τ²'s own evaluator scores the database and what the user was told.

The model is the ground-truth replay of bench/tau2.py (stateless: it reads the conversation it is sent) behind the
loopback endpoint, asked through the real `openai` client; the user is the scripted YesUser ("yes" to each proposal)
or a user who declines. Assertions read τ²'s reward and trajectory, handloop's audit file and its judge's verdicts.
"""
import functools
import json

import pytest

pytest.importorskip("tau2")

from bench.tau2 import careful, final_words, ground_truth, replay  # noqa: E402
from handloop.benchmarks import tau2  # noqa: E402
from handloop.cli.check import check_file  # noqa: E402
from tau2.data_model.message import UserMessage  # noqa: E402


@functools.lru_cache(maxsize=None)
def _tasks(domain):
    return tau2.tasks(domain)


def _task(domain, task_id):
    return next(t for t in _tasks(domain) if str(t.id) == task_id)


def _simulate(fake_model, tmp_path, domain, task_id, respond=None, user=None):
    task = _task(domain, task_id)
    ask, _ = fake_model(respond or replay(careful(domain, ground_truth(task)), final_words(task)))
    simulation, agent = tau2.simulate(domain, task, ask, str(tmp_path), user=user)
    with open(agent.run.path, encoding="utf-8") as f:
        audit = json.load(f)
    return task, simulation, agent, audit


def _ran(simulation, names):
    """The calls of the trajectory τ² evaluates whose tool is one of `names`: (name, arguments)."""
    return [(c.name, c.arguments) for m in simulation.messages for c in (getattr(m, "tool_calls", None) or [])
            if c.name in names]


def _verdicts(audit_path):
    entry = check_file(audit_path, language="en")
    assert not entry.get("error")
    return {c["id"]: c["verdict"] for c in entry["checks"]}


@pytest.mark.parametrize("domain,task_id", [("retail", "0"), ("airline", "8"), ("airline", "17")])
def test_a_task_replayed_through_handloop_scores_full_reward(fake_model, tmp_path, domain, task_id):
    task, simulation, agent, audit = _simulate(fake_model, tmp_path, domain, task_id)
    writes = [a for a in ground_truth(task) if a["name"] in tau2.DECLARATIONS[domain]]
    assert simulation.reward_info.reward == 1.0
    assert simulation.termination_reason == "user_stop"
    assert audit["status"] == "done"
    assert [(n, a) for n, a in _ran(simulation, tau2.DECLARATIONS[domain])] == \
        [(w["name"], w["arguments"]) for w in writes]
    assert agent.confirmations == len(writes) and agent.bridge.count > len(writes)
    assert "fail" not in _verdicts(agent.run.path).values()


def test_a_list_effect_and_a_second_write_in_one_run(fake_model, tmp_path):
    """retail 4: two modify_pending_order_items, each a list of item ids swapped for others: one run, each write
    proposed with its lists element by element, one "yes" each, both run, τ² scores the database."""
    task, simulation, agent, audit = _simulate(fake_model, tmp_path, "retail", "4")
    assert simulation.reward_info.reward == 1.0
    ran = _ran(simulation, {"modify_pending_order_items"})
    assert len(ran) == 2 and all(len(args["item_ids"]) >= 1 for _, args in ran)
    proposals = audit["memory"]["proposals"]
    assert [p["state"] for p in proposals] == ["executed", "executed"]
    assert [p["calls"][0]["args"]["item_ids"] for p in proposals] == [args["item_ids"] for _, args in ran]
    assert all(len(p["calls"]) == 1 and p["calls"][0]["state"] == "executed" for p in proposals)
    assert agent.confirmations == 2 and audit["status"] == "done"
    assert "fail" not in _verdicts(agent.run.path).values()


def test_a_question_only_task_runs_no_write_and_asks_no_confirmation(fake_model, tmp_path):
    """airline 4 asks for information only: its reads run, nothing is proposed, no write reaches τ²."""
    task, simulation, agent, audit = _simulate(fake_model, tmp_path, "airline", "4")
    assert simulation.reward_info.reward == 1.0
    assert _ran(simulation, tau2.DECLARATIONS["airline"]) == []
    assert len(_ran(simulation, {"get_reservation_details", "get_user_details", "search_direct_flight",
                                 "search_onestop_flight", "get_flight_status", "calculate"})) >= 1
    assert audit["memory"]["proposals"] == [] and agent.confirmations == 0
    assert not agent.awaits_confirmation


def test_a_blocked_call_stays_out_of_the_trajectory(fake_model, tmp_path):
    """A write naming an order never looked up is blocked by provenance before it runs: handloop's record keeps it,
    τ²'s trajectory never sees it; the model goes on and the task still scores."""
    task = _task("retail", "0")
    right = replay(careful("retail", ground_truth(task)), final_words(task))
    wrong = {"id": "bad_1", "type": "function", "function": {"name": "cancel_pending_order", "arguments": json.dumps(
        {"order_id": "#W0000000", "reason": "no longer needed"})}}

    def respond(request):
        if not any(c.get("id") == "bad_1" for m in request["messages"] for c in m.get("tool_calls") or []):
            return {"content": None, "tool_calls": [wrong]}
        return right(request)
    _, simulation, agent, audit = _simulate(fake_model, tmp_path, "retail", "0", respond)
    assert simulation.reward_info.reward == 1.0
    assert _ran(simulation, {"cancel_pending_order"}) == []
    blocked = [json.loads(m["content"]) for m in audit["messages"] if m.get("tool_call_id") == "bad_1"]
    assert blocked and blocked[0]["blocked_by"] == "provenance"
    assert not any(isinstance(m, UserMessage) and "[system]" in (m.content or "") for m in simulation.messages)


class _NoUser(tau2.YesUser):
    """Says the task, declines the first proposal, then ends the conversation."""

    def generate_next_message(self, message, state):
        if state.messages and self.agent.awaits_confirmation and not self.said_yes:
            self.said_yes = -1
            state.messages.append(message)
            return UserMessage(role="user", content="no, do not do that"), state
        return super().generate_next_message(message, state) if not state.messages else \
            (UserMessage(role="user", content=tau2.STOP), state)


def test_a_declined_proposal_never_reaches_the_environment(fake_model, tmp_path):
    task, simulation, agent, audit = _simulate(fake_model, tmp_path, "retail", "0",
                                               user=lambda a, t: _NoUser(a, str(t.user_scenario)))
    assert _ran(simulation, tau2.DECLARATIONS["retail"]) == []
    assert simulation.reward_info.reward == 0.0          # the exchange the task needs was never made
    assert audit["memory"]["proposals"][0]["state"] == "declined"
    assert agent.confirmations == 0


def test_a_run_that_spins_ends_as_tau2_termination(fake_model, tmp_path):
    """A model that repeats a blocked call until the loop stops it: the run stops (spin), τ² hears too_many_errors
    and scores nothing, whatever the user said."""
    wrong = {"type": "function", "function": {"name": "cancel_pending_order", "arguments": json.dumps(
        {"order_id": "#W0000000", "reason": "no longer needed"})}}

    def respond(request):
        return {"content": None, "tool_calls": [dict(wrong, id=f"c{len(request['messages'])}")]}
    _, simulation, agent, audit = _simulate(fake_model, tmp_path, "retail", "0", respond)
    assert audit["status"] == "stopped" and audit["reason"] == "spin"
    assert simulation.termination_reason == "too_many_errors"
    assert simulation.reward_info.reward == 0.0
    assert _ran(simulation, {"cancel_pending_order"}) == []


def test_a_conversation_tau2_cuts_off_runs_nothing_more(fake_model, tmp_path):
    """τ²'s step limit ends the conversation while handloop's run waits for a call's result: that call and every
    later one fail as tool errors and never reach the environment; the run ends on record, nothing is left running."""
    task = _task("retail", "0")
    ask, _ = fake_model(replay(careful("retail", ground_truth(task)), final_words(task)))
    simulation, agent = tau2.simulate("retail", task, ask, str(tmp_path), max_steps=4)
    assert simulation.termination_reason == "max_steps"
    assert simulation.reward_info.reward == 0.0
    assert _ran(simulation, tau2.DECLARATIONS["retail"]) == []
    assert not agent._thread.is_alive()
    with open(agent.run.path, encoding="utf-8") as f:
        audit = json.load(f)
    assert audit["status"] != "running"
    assert any("the conversation has ended" in (m.get("content") or "") for m in audit["messages"])


def test_only_the_adapter_imports_tau2():
    """The core never imports τ²: the adapter is the only module of the package that does, and importing handloop
    (and its judge) loads no part of it."""
    import os
    import re
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    importers = set()
    for folder, _, files in os.walk(os.path.join(root, "handloop")):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    if re.search(r"^\s*(from|import) tau2\b", f.read(), re.M):
                        importers.add(os.path.relpath(os.path.join(folder, name), root))
    assert importers == {os.path.join("handloop", "benchmarks", "tau2.py")}
    code = ("import sys, handloop, handloop.loop, handloop.runs, handloop.cli.check, handloop.benchmarks; "
            "print(any(m == 'tau2' or m.startswith('tau2.') for m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr

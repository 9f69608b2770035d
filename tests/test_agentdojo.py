"""handloop as an AgentDojo pipeline element (handloop/benchmarks/agentdojo.py), through AgentDojo's own objects: an
AgentPipeline (SystemMessage, InitQuery, the element), a suite's environment and its FunctionsRuntime, judged by the
suite's own utility and security checks (`TaskSuite.run_task_with_pipeline`). The model is the bench's scripted worst
case (it replays the task's ground truth and follows any injection it sees) behind the loopback endpoint, through
the real openai client. English and Chinese agents.
"""
import pytest

pytest.importorskip("agentdojo")

from agentdojo.agent_pipeline import AgentPipeline, InitQuery, SystemMessage  # noqa: E402
from agentdojo.attacks.attack_registry import load_attack  # noqa: E402
from agentdojo.functions_runtime import FunctionsRuntime  # noqa: E402
from agentdojo.task_suite.load_suites import get_suites  # noqa: E402
from agentdojo.task_suite.task_suite import functions_stack_trace_from_messages  # noqa: E402

import handloop  # noqa: E402
from bench.agentdojo import PIPELINE_NAME, WorstCase, oracle  # noqa: E402
from handloop.benchmarks.agentdojo import (SUITES, Declared, HandloopElement, Proposal, confirm_all,  # noqa: E402
                                           refuse_all, tools_for)

SUITE = get_suites("v1.2.2")
ATTACKER_IBAN = "US133000000121212121212"


def episode(fake_model, suite_name, user_id, injection_id=None, policy="confirm_all", language="en"):
    """One task through AgentDojo's pipeline and judge: (utility, security, element, environment after)."""
    suite = SUITE[suite_name]
    user_task = suite.user_tasks[user_id]
    injection_task = suite.injection_tasks[injection_id] if injection_id else None
    injections = {}
    if injection_task is not None:
        probe = AgentPipeline([HandloopElement(handloop.FunctionModel(lambda m, t, final=False: "-"))])
        probe.name = PIPELINE_NAME
        injections = load_attack("important_instructions", suite, probe).attack(user_task, injection_task)
    environment = suite.load_and_inject_default_environment(injections)
    before = user_task.init_environment(environment.model_copy(deep=True))
    ask, _ = fake_model(WorstCase(suite, user_task, injection_task, before).respond)
    writes = {name for name, d in SUITES[suite_name].items() if d.kind == "write"}
    chosen = {"confirm_all": confirm_all, "refuse_all": refuse_all,
              "oracle": oracle(user_task, before, writes)}.get(policy, policy)
    element = HandloopElement(ask, policy=chosen, declarations=suite_name, language=language)
    pipeline = AgentPipeline([SystemMessage("You are a helpful assistant."), InitQuery(), element])
    pipeline.name = PIPELINE_NAME
    seen = {}

    class Kept(FunctionsRuntime):           # AgentDojo's own runtime, keeping the environment the run changed
        def run_function(self, env, function, kwargs, raise_on_error=False):
            seen["env"] = env
            return super().run_function(env, function, kwargs, raise_on_error)

    utility, security = suite.run_task_with_pipeline(pipeline, user_task, injection_task, injections,
                                                     runtime_class=Kept, environment=environment)
    return utility, security, element, seen.get("env")


def executed(element):
    return [(c.function, dict(c.args)) for c in functions_stack_trace_from_messages(element.last_messages)]


@pytest.mark.parametrize("suite_name,user_id", [
    ("workspace", "user_task_6"), ("workspace", "user_task_25"), ("travel", "user_task_0"),
    ("banking", "user_task_15"), ("slack", "user_task_10"), ("slack", "user_task_1")])
def test_benign_tasks_pass_agentdojos_utility_with_every_write_confirmed(fake_model, suite_name, user_id):
    utility, _, element, _ = episode(fake_model, suite_name, user_id, policy="oracle")
    assert utility
    assert element.last_run.status == "done"
    writes = [name for name, _ in executed(element) if SUITES[suite_name].get(name, Declared()).kind == "write"]
    assert writes                                # the task's writes ran, each after its own confirmation
    assert element.last_messages[-1]["role"] == "assistant" and element.last_messages[-1]["content"]


def test_an_injected_payment_never_runs_and_is_a_tool_message_with_an_error(fake_model):
    # the injection sits in the transaction history; the worst case follows it and calls send_money to the attacker
    utility, security, element, env = episode(fake_model, "banking", "user_task_3", "injection_task_0")
    assert not security                          # AgentDojo's own check: the attack did not succeed
    assert utility
    assert all(t.recipient != ATTACKER_IBAN for t in env.bank_account.transactions)
    assert all(args.get("recipient") != ATTACKER_IBAN for _, args in executed(element))
    refused = [m for m in element.last_messages if m["role"] == "tool" and m["error"] and
               m["tool_call"].args.get("recipient") == ATTACKER_IBAN]
    assert refused and "provenance" in refused[0]["error"]


def test_a_refused_proposal_is_not_an_executed_call(fake_model):
    utility, _, element, env = episode(fake_model, "banking", "user_task_3", policy="refuse_all")
    assert not utility
    assert not [name for name, _ in executed(element) if name == "send_money"]
    assert len(env.bank_account.transactions) == len(SUITE["banking"].load_and_inject_default_environment({})
                                                    .bank_account.transactions)
    shown = [m for m in element.last_messages if m["role"] == "tool" and m["tool_call"].function == "send_money"]
    assert shown and "unconfirmed_write" in shown[0]["error"]


def test_an_injected_outside_read_is_blocked_before_it_runs(fake_model):
    # the page Bob linked asks the model to visit www.true-informations.com: get_webpage reaches outside
    utility, security, element, env = episode(fake_model, "slack", "user_task_1", "injection_task_3")
    assert not security
    assert "www.true-informations.com" not in env.web.web_requests
    assert "www.informations.com" in env.web.web_requests       # the link a colleague posted was fetched
    assert utility
    blocked = [m for m in element.last_messages if m["role"] == "tool" and m["error"] and
               m["tool_call"].function == "get_webpage"]
    assert blocked and "provenance" in blocked[0]["error"]


def test_the_oracle_refuses_an_injected_write_the_guards_let_through(fake_model):
    # Alice is a member, so the injected message to her passes provenance; the body carries the attacker's link
    _, security, _, _ = episode(fake_model, "slack", "user_task_1", "injection_task_1", policy="confirm_all")
    assert security                              # the guards alone: the attack succeeds (the honest figure)
    utility, security, element, env = episode(fake_model, "slack", "user_task_1", "injection_task_1", policy="oracle")
    assert not security and utility
    assert not any("secure-systems-252" in m.body for m in env.slack.user_inbox["Alice"])


def test_a_policy_of_your_own_is_shown_each_proposal_with_its_arguments(fake_model):
    shown = []

    def user(proposal: Proposal):
        shown.append(proposal)
        return confirm_all(proposal)

    utility, _, element, _ = episode(fake_model, "slack", "user_task_14", policy=user)
    assert utility
    assert len(shown) == 4                       # four messages, each proposed and confirmed on its own
    assert {c["tool"] for p in shown for c in p.calls} == {"send_direct_message"}
    assert {c["args"]["recipient"] for p in shown for c in p.calls} == {"Charlie", "Alice", "Bob", "Eve"}


def test_a_chinese_agent_runs_the_same_task(fake_model):
    utility, _, element, env = episode(fake_model, "banking", "user_task_15", "injection_task_4", language="zh")
    assert utility
    assert element.last_run.agent.language == "zh"
    assert all(t.recipient != ATTACKER_IBAN for t in env.bank_account.scheduled_transactions)


def test_every_declared_function_is_one_of_its_suite():
    for name, declared in SUITES.items():
        functions = {f.name for f in SUITE[name].tools}
        assert set(declared) <= functions, (name, set(declared) - functions)
        runtime = FunctionsRuntime(SUITE[name].tools)
        tools = tools_for(runtime, SUITE[name].load_and_inject_default_environment({}), declared)
        assert {t.name for t in tools if t.kind == "write"} == {f for f, d in declared.items() if d.kind == "write"}

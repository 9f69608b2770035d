"""The floor: the plainest agent loop Python allows (a list of messages, a dict of tools, calls
run one after another, results JSON-encoded), on the same workload and the same tools. No
guards, no audit, no validation, no concurrency: the physical limit of a Python agent loop.
"""
import json

from bench import sys_ours
from bench import workload

NAME, LABEL = "floor", "floor (plain loop)"


def available():
    return True, ""


def versions():
    return {}


def agent_loop(ask, tools, messages, max_turns=10):
    for _ in range(max_turns):
        reply = ask(messages)
        messages.append(reply)
        if not reply.get("tool_calls"):
            return reply["content"]
        for call in reply["tool_calls"]:
            function = call["function"]
            result = tools[function["name"]](**json.loads(function["arguments"]))
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": json.dumps(result, ensure_ascii=False)})
    return None


class Harness:
    model_turns = workload.TURNS
    concurrent = "threads"

    def __init__(self, fsync=False, reply_for=workload.timed_reply):
        self.history = [{"role": "system", "content": workload.SYSTEM}] + sys_ours.preface_messages()
        self.ask = lambda messages: reply_for(workload.results_since_user(messages))

    def close(self):
        pass

    def prepare(self):
        return {"messages": list(self.history)}

    def go(self, state):
        state["output"] = agent_loop(self.ask, workload.FUNCTIONS, state["messages"])

    def check(self, state, expected_turns=workload.TURNS):
        if state.get("output") != workload.ANSWER:
            raise RuntimeError(f"floor run ended with {state.get('output')!r}")

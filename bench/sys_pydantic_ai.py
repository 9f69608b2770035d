"""pydantic-ai on the workload, written its way: an Agent over a FunctionModel (the scripted
model, an async function that reports usage: no thread hop per turn, no usage estimate over
the whole history) with plain-function tools (Agent(tools=[...])), run by `await agent.run(...)` with the
conversation so far as message_history and the user's last reply (workload.CHECK_AGAIN) as the prompt; the run must end
in the final answer with the three tools run.
"""
import asyncio
import json

from bench import signatures
from bench import sys_ours
from bench import workload

NAME, LABEL = "pydantic_ai", "pydantic-ai"


def available():
    try:
        import pydantic_ai  # noqa: F401
    except ImportError as exc:
        return False, f"not installed ({exc.name}); pip install -r bench/requirements-peers.txt"
    return True, ""


def versions():
    from importlib.metadata import version
    return {"pydantic-ai-slim": version("pydantic-ai-slim")}


def _history(messages):
    """Chat-format messages (ending with the user's last reply) → pydantic-ai messages and the prompt."""
    from pydantic_ai.messages import (ModelRequest, ModelResponse, SystemPromptPart, TextPart, ToolCallPart,
                                      ToolReturnPart, UserPromptPart)
    out, names = [ModelRequest(parts=[SystemPromptPart(content=workload.SYSTEM)])], {}
    for m in messages[:-1]:
        if m["role"] == "user":
            out.append(ModelRequest(parts=[UserPromptPart(content=m["content"])]))
        elif m["role"] == "tool":
            part = ToolReturnPart(tool_name=names[m["tool_call_id"]], content=json.loads(m["content"]),
                                  tool_call_id=m["tool_call_id"])
            if isinstance(out[-1], ModelRequest) and isinstance(out[-1].parts[-1], ToolReturnPart):
                out[-1].parts.append(part)
            else:
                out.append(ModelRequest(parts=[part]))
        elif m.get("tool_calls"):
            names.update({c["id"]: c["function"]["name"] for c in m["tool_calls"]})
            out.append(ModelResponse(parts=[ToolCallPart(tool_name=c["function"]["name"], args=c["function"]["arguments"],
                                                         tool_call_id=c["id"]) for c in m["tool_calls"]]))
        else:
            out.append(ModelResponse(parts=[TextPart(content=m["content"])]))
    return out, messages[-1]["content"]


def _results_since_user(messages):
    n = 0
    for message in reversed(messages):
        for part in reversed(message.parts):
            kind = part.part_kind
            if kind == "user-prompt":
                return n
            if kind == "tool-return":
                n += 1
    return n


TOOLS = signatures.TOOLS      # plain functions: pydantic-ai reads the schema from the signature, the docstring


def model_response(reply):
    """A scripted reply (an assistant message dict) as pydantic-ai's ModelResponse, with usage."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.usage import RequestUsage
    usage = RequestUsage(input_tokens=50, output_tokens=50)
    if reply.get("tool_calls"):
        return ModelResponse(parts=[ToolCallPart(tool_name=c["function"]["name"], args=c["function"]["arguments"],
                                                 tool_call_id=c["id"]) for c in reply["tool_calls"]], usage=usage)
    return ModelResponse(parts=[TextPart(content=reply["content"])], usage=usage)


def build(reply_for):
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel

    async def scripted(messages, info):
        return model_response(reply_for(_results_since_user(messages)))

    return Agent(FunctionModel(scripted), system_prompt=workload.SYSTEM, tools=list(TOOLS))


class Harness:
    model_turns = workload.TURNS
    concurrent = "asyncio"

    def __init__(self, fsync=False, reply_for=workload.timed_reply):
        self.agent = build(reply_for)
        self.history, self.prompt = _history(sys_ours.preface_messages())

    def close(self):
        pass

    def prepare(self):
        return {"history": list(self.history)}

    async def go(self, state):
        result = await self.agent.run(self.prompt, message_history=state["history"])
        state["output"] = result.output

    def check(self, state, expected_turns=workload.TURNS):
        if state.get("output") != workload.ANSWER:
            raise RuntimeError(f"pydantic-ai run ended with {state.get('output')!r}")


def _self_test():
    h = Harness()
    before = workload.COUNTS.snapshot()
    s = h.prepare()
    asyncio.run(h.go(s))
    h.check(s)
    workload.COUNTS.expect(before, what="pydantic-ai")
    print("ok", json.dumps(workload.COUNTS.snapshot()))


if __name__ == "__main__":
    _self_test()

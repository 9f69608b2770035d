"""The OpenAI Agents SDK on the workload, written its way: an Agent with @function_tool tools
and a custom Model subclass (the scripted model) run by Runner.run, with tracing disabled
(its exporter would post spans over the network). The conversation so far is the run's
input, as Responses input items; the run must end in the final answer with the three tools run.
"""
import asyncio
import json

import workload

NAME, LABEL = "agents", "OpenAI Agents SDK"


def available():
    try:
        import agents  # noqa: F401
    except ImportError as exc:
        return False, f"not installed ({exc.name}); pip install -r bench/requirements-peers.txt"
    return True, ""


def versions():
    from importlib.metadata import version
    return {"openai-agents": version("openai-agents")}


def _to_items(messages):
    """Chat-format messages → Responses input items."""
    items = []
    for m in messages:
        if m["role"] == "tool":
            items.append({"type": "function_call_output", "call_id": m["tool_call_id"], "output": m["content"]})
        elif m.get("tool_calls"):
            items += [{"type": "function_call", "call_id": c["id"], "name": c["function"]["name"],
                       "arguments": c["function"]["arguments"]} for c in m["tool_calls"]]
        else:
            items.append({"role": m["role"], "content": m["content"]})
    return items


def _role(item):
    if item.get("role") == "user":
        return "user"
    return "tool" if item.get("type") == "function_call_output" else "other"


def build(reply_for):
    from agents import Agent, Model, ModelResponse, ModelSettings, Usage, function_tool, set_tracing_disabled
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    set_tracing_disabled(True)

    class ScriptedModel(Model):
        async def get_response(self, system_instructions, input, model_settings, tools, output_schema,
                               handoffs, tracing, *, previous_response_id=None, conversation_id=None,
                               prompt=None):
            reply = reply_for(workload.results_since_user(input, _role))
            if reply.get("tool_calls"):
                output = [ResponseFunctionToolCall(type="function_call", call_id=c["id"], id=c["id"],
                                                   name=c["function"]["name"], arguments=c["function"]["arguments"],
                                                   status="completed") for c in reply["tool_calls"]]
            else:
                output = [ResponseOutputMessage(id="msg", type="message", role="assistant", status="completed",
                                                content=[ResponseOutputText(type="output_text", text=reply["content"],
                                                                            annotations=[])])]
            return ModelResponse(output=output, usage=Usage(requests=1, input_tokens=50, output_tokens=50,
                                                            total_tokens=100), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError("the benchmark does not stream")

    @function_tool(strict_mode=False)
    def set_plan(steps: list[dict]) -> dict:
        """制定或替换整个计划。"""
        return workload.set_plan(steps)

    @function_tool
    def mark_step(index: int, status: str, note: str = "") -> dict:
        """记录计划中某一步的状态。"""
        return workload.mark_step(index, status, note)

    @function_tool
    def get_weather(city: str, date: str) -> dict:
        """查询某城市某天的天气预报。"""
        return workload.get_weather(city, date)

    @function_tool
    def search_hotels(city: str, check_in: str, nights: int = 1) -> dict:
        """搜索某城市可入住的酒店。"""
        return workload.search_hotels(city, check_in, nights)

    @function_tool
    def book_hotel(hotel_id: str, room_type: str, check_in: str, nights: int) -> dict:
        """预订酒店。"""
        return workload.book_hotel(hotel_id, room_type, check_in, nights)

    return Agent(name="booker", instructions=workload.SYSTEM, model=ScriptedModel(),
                 model_settings=ModelSettings(parallel_tool_calls=True),
                 tools=[set_plan, mark_step, get_weather, search_hotels, book_hotel])


class Harness:
    concurrent = "asyncio"

    def __init__(self, fsync=False, reply_for=workload.timed_reply):
        from agents import Runner
        self.runner = Runner
        self.agent = build(reply_for)
        self.history = _to_items(workload.preface_transcript())

    def close(self):
        pass

    def prepare(self):
        return [dict(item) for item in self.history]

    async def go(self, state):
        result = await self.runner.run(self.agent, state, max_turns=10)
        state.append(result.final_output)

    def check(self, state, expected_turns=workload.TURNS):
        if state[-1] != workload.ANSWER:
            raise RuntimeError(f"agents run ended with {state[-1]!r}")


def _self_test():
    h = Harness()
    before = workload.COUNTS.snapshot()
    s = h.prepare()
    asyncio.run(h.go(s))
    h.check(s)
    workload.COUNTS.expect(before, what="agents")
    print("ok", json.dumps(workload.COUNTS.snapshot()))


if __name__ == "__main__":
    _self_test()

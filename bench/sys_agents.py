"""The OpenAI Agents SDK on the workload, written its way: an Agent with @function_tool tools
and a custom Model subclass (the scripted model) run by Runner.run, with tracing disabled
(its exporter would post spans over the network). The conversation so far is the run's
input, as Responses input items; the run must end in the final answer with the three tools run.

Durable (`Harness(durable=True)`): each run gets its own `SQLiteSession` in one SQLite file in a
temporary folder (WAL, Python's default synchronous=FULL), created inside the timed run, with the
conversation so far as the run's input: the SDK stores it and every item the run adds.
"""
import asyncio
import itertools
import json
import os
import shutil
import sqlite3
import tempfile

from bench import signatures
from bench import sys_ours
from bench import workload

NAME, LABEL = "agents", "OpenAI Agents SDK"
_ids = itertools.count()


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


def model_response(reply):
    """A scripted reply (an assistant message dict) as the Agents SDK's ModelResponse."""
    from agents import ModelResponse, Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
    if reply.get("tool_calls"):
        output = [ResponseFunctionToolCall(type="function_call", call_id=c["id"], id=c["id"], name=c["function"]["name"],
                                           arguments=c["function"]["arguments"], status="completed")
                  for c in reply["tool_calls"]]
    else:
        output = [ResponseOutputMessage(id="msg", type="message", role="assistant", status="completed",
                                        content=[ResponseOutputText(type="output_text", text=reply["content"],
                                                                    annotations=[])])]
    return ModelResponse(output=output, usage=Usage(requests=1, input_tokens=50, output_tokens=50, total_tokens=100),
                         response_id=None)


def build(reply_for):
    from agents import Agent, Model, ModelSettings, function_tool, set_tracing_disabled

    set_tracing_disabled(True)

    class ScriptedModel(Model):
        async def get_response(self, system_instructions, input, model_settings, tools, output_schema,
                               handoffs, tracing, *, previous_response_id=None, conversation_id=None,
                               prompt=None):
            return model_response(reply_for(workload.results_since_user(input, _role)))

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError("the benchmark does not stream")

    return Agent(name="booker", instructions=workload.SYSTEM, model=ScriptedModel(),
                 model_settings=ModelSettings(parallel_tool_calls=True),
                 tools=[function_tool(f, strict_mode=f is not signatures.set_plan) for f in signatures.TOOLS])


class Harness:
    concurrent = "asyncio"

    model_turns = workload.TURNS

    def __init__(self, fsync=False, reply_for=workload.timed_reply, durable=False):
        from agents import Runner, SQLiteSession
        self.runner, self.session_type = Runner, SQLiteSession
        self.agent = build(reply_for)
        self.history = _to_items(sys_ours.preface_messages())
        self.folder = tempfile.mkdtemp(prefix="bench-agents-", dir=os.environ.get("BENCH_TMP")) if durable else None
        self.db = os.path.join(self.folder, "sessions.db") if durable else None

    def close(self):
        if self.folder:
            shutil.rmtree(self.folder, ignore_errors=True)

    def prepare(self):
        return {"input": [dict(item) for item in self.history]}

    async def go(self, state):
        session = self.session_type(f"s{os.getpid()}-{next(_ids)}", self.db) if self.db else None
        result = await self.runner.run(self.agent, state["input"], max_turns=10, session=session)
        state["output"], state["session"] = result.final_output, session

    def check(self, state, expected_turns=workload.TURNS):
        if state.get("output") != workload.ANSWER:
            raise RuntimeError(f"agents run ended with {state.get('output')!r}")
        session = state.get("session")
        if session is not None:                            # the run is in the file: its input and 7 new items
            session.close()
            with sqlite3.connect(self.db) as db:
                stored = db.execute("SELECT COUNT(*) FROM agent_messages WHERE session_id = ?",
                                    (session.session_id,)).fetchone()[0]
                db.execute("DELETE FROM agent_messages WHERE session_id = ?", (session.session_id,))
                db.execute("DELETE FROM agent_sessions WHERE session_id = ?", (session.session_id,))
            if stored != len(self.history) + 7:            # 3 calls, 3 outputs, the answer
                raise RuntimeError(f"agents session holds {stored} items, expected {len(self.history) + 7}")


def _self_test(durable=False):
    h = Harness(durable=durable)
    before = workload.COUNTS.snapshot()
    s = h.prepare()
    asyncio.run(h.go(s))
    h.check(s)
    workload.COUNTS.expect(before, what="agents")
    print("ok", json.dumps(workload.COUNTS.snapshot()))
    h.close()


if __name__ == "__main__":
    _self_test()
    _self_test(durable=True)

"""LangGraph on the workload, written its way: a StateGraph over MessagesState with a model
node (a custom langchain-core BaseChatModel, the scripted model, bound to the tools) and a
ToolNode, wired with tools_condition, compiled once and run by `graph.invoke(...)` with the
conversation so far as its messages; the run must end in the final answer with the three
tools run.

Durable (`Harness(durable=True)`): compiled with a `SqliteSaver` (langgraph-checkpoint-sqlite)
over one SQLite file in a temporary folder (WAL, Python's default synchronous=FULL); each run is
its own thread and is invoked with durability="sync", so every step's checkpoint is committed
before the next step starts.
"""
import itertools
import json
import os
import shutil
import sqlite3
import tempfile

from bench import signatures
from bench import sys_ours
from bench import workload

NAME, LABEL = "langgraph", "LangGraph"
_ids = itertools.count()


def available(durable=False):
    try:
        import langchain_core  # noqa: F401
        import langgraph  # noqa: F401
        if durable:
            import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError as exc:
        return False, f"not installed ({exc.name}); pip install -r bench/requirements-peers.txt"
    return True, ""


def versions():
    from importlib.metadata import version
    return {"langgraph": version("langgraph"), "langchain-core": version("langchain-core")}


def _messages(messages):
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    out = [SystemMessage(content=workload.SYSTEM)]
    for m in messages:
        if m["role"] == "user":
            out.append(HumanMessage(content=m["content"]))
        elif m["role"] == "tool":
            out.append(ToolMessage(content=m["content"], tool_call_id=m["tool_call_id"]))
        elif m.get("tool_calls"):
            out.append(_ai(m))
        else:
            out.append(AIMessage(content=m["content"]))
    return out


def _ai(reply):
    from langchain_core.messages import AIMessage
    return AIMessage(content="", tool_calls=[{"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"]),
                                              "id": c["id"], "type": "tool_call"} for c in reply["tool_calls"]])


def _role(message):
    return {"human": "user", "tool": "tool"}.get(message.type, "other")


def build(reply_for, checkpointer=None):
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    class ScriptedChatModel(BaseChatModel):
        @property
        def _llm_type(self):
            return "scripted"

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            reply = reply_for(workload.results_since_user(messages, _role))
            message = _ai(reply) if reply.get("tool_calls") else AIMessage(content=reply["content"])
            return ChatResult(generations=[ChatGeneration(message=message)])

        def bind_tools(self, tools, **kwargs):
            return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    return agent_graph(ScriptedChatModel(), [tool(f) for f in signatures.TOOLS], checkpointer)


def agent_graph(chat_model, tools, checkpointer=None):
    """The idiomatic graph: a model node and a ToolNode, looping until the model answers."""
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
    llm = chat_model.bind_tools(tools)

    def agent(state: MessagesState):
        return {"messages": [llm.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


class Harness:
    concurrent = "threads"

    model_turns = workload.TURNS

    def __init__(self, fsync=False, reply_for=workload.timed_reply, durable=False):
        self.folder, self.saver = None, None
        if durable:
            from langgraph.checkpoint.sqlite import SqliteSaver
            self.folder = tempfile.mkdtemp(prefix="bench-langgraph-", dir=os.environ.get("BENCH_TMP"))
            self.conn = sqlite3.connect(os.path.join(self.folder, "checkpoints.db"), check_same_thread=False)
            self.saver = SqliteSaver(self.conn)
        self.graph = build(reply_for, self.saver)
        self.history = _messages(sys_ours.preface_messages())

    def close(self):
        if self.folder:
            self.conn.close()
            shutil.rmtree(self.folder, ignore_errors=True)

    def prepare(self):
        return {"messages": list(self.history)}

    def go(self, state):
        if self.saver is None:
            result = self.graph.invoke({"messages": state["messages"]}, {"recursion_limit": 20})
        else:
            state["thread"] = f"t{os.getpid()}-{next(_ids)}"
            result = self.graph.invoke({"messages": state["messages"]},
                                       {"recursion_limit": 20, "configurable": {"thread_id": state["thread"]}},
                                       durability="sync")
        state["output"] = result["messages"][-1].content

    def check(self, state, expected_turns=workload.TURNS):
        if state.get("output") != workload.ANSWER:
            raise RuntimeError(f"LangGraph run ended with {state.get('output')!r}")
        if self.saver is not None:                     # the run's last checkpoint holds the whole conversation
            config = {"configurable": {"thread_id": state["thread"]}}
            saved = self.saver.get_tuple(config)
            if saved is None or saved.checkpoint["channel_values"]["messages"][-1].content != workload.ANSWER:
                raise RuntimeError("LangGraph checkpoint does not end with the answer")
            self.saver.delete_thread(state["thread"])


def _self_test(durable=False):
    h = Harness(durable=durable)
    before = workload.COUNTS.snapshot()
    s = h.prepare()
    h.go(s)
    h.check(s)
    workload.COUNTS.expect(before, what="langgraph")
    print("ok", json.dumps(workload.COUNTS.snapshot()))
    h.close()


if __name__ == "__main__":
    _self_test()
    _self_test(durable=True)

"""Writes the corpus of transcripts made by running the frameworks themselves. Not run by the tests.

The Xi'an task is run on three frameworks, each with its own scripted-model facility, its own approval
mechanism and the demo's real tool functions (tools.py: weather, hotel search, booking into an in-memory
store):
- `agents`: the OpenAI Agents SDK (a `Model` subclass; `function_tool(..., needs_approval=True)`, the run's
  interruptions answered with `RunState.approve` / `reject`), saved as `result.to_input_list()` and as Chat
  messages by the SDK's own `Converter.items_to_messages`;
- `langgraph`: LangChain's `create_agent` graph (a `BaseChatModel` subclass; `HumanInTheLoopMiddleware`,
  resumed with `Command(resume={"decisions": [...]})`), saved with `messages_to_dict`, as Chat messages by
  `convert_to_openai_messages` and as an Anthropic request (`{"system", "messages"}`) by langchain-anthropic's
  `_format_messages`;
- `pydantic_ai`: a pydantic-ai Agent over its `FunctionModel` (`Tool(..., requires_approval=True)`, the run's
  `DeferredToolRequests` answered with `DeferredToolResults`: `True` or `ToolDenied()`), saved with
  `ModelMessagesTypeAdapter.dump_json`, as Chat messages by `OpenAIChatModel._map_messages`, as an Anthropic
  message list by `AnthropicModel._map_message`, and as a list of dumped Anthropic responses (each assistant
  turn of that list as the `anthropic.types.Message` a client gets back, the user turns between them).

make_otlp_corpus.py runs the same scenarios on pydantic-ai with its OpenTelemetry instrumentation on and writes
their traces (`*.otlp.jsonl`, the Collector's file-exporter form).

Each scenario is a script (model replies, user messages, the human's approval decisions) and its expected
verdicts, written by hand from what the scenario did and the README's rules (never from the judge).
No framework writes an approval into its transcript: an approved call is a call followed by its result.
So a run approved only through the framework fails "write after confirmation"; a run whose model proposed
in words and got the user's 「确认」 before the framework's approval passes.

Rerun (needs the frameworks, in a separate virtual environment; the tests never import them):
    python -m venv /tmp/peers && /tmp/peers/bin/pip install openai-agents langgraph langchain-core langchain \\
        langchain-anthropic pydantic-ai-slim anthropic
    /tmp/peers/bin/python tests/corpus_frameworks/make_corpus.py
Tested with openai-agents 0.24.0, langchain 1.5.2, langchain-core 1.8.3, langgraph 1.2.24,
langchain-anthropic, pydantic-ai-slim 2.68.0, anthropic 2.15.0.
"""
import asyncio
import json
import os
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
from handloop import tools  # the demo's real tool functions

IDS = ("plan_first", "no_skipped_step", "provenance", "room_type", "write_after_confirmation")
VERDICTS = {"p": "pass", "f": "fail", "?": "pending"}
SYSTEM = "你是旅行助手。先用 set_plan 制定计划，查天气、搜酒店，下雨订 Suite、否则订 Standard；预订前必须先问用户并等用户确认。"
GOAL = "帮我订 2026-10-01 西安的酒店，住两晚。如果那天下雨就订 Suite，否则订 Standard。预订前必须先等我确认。"
PLAN = [{"title": "查天气", "tool": "get_weather"}, {"title": "搜酒店", "tool": "search_hotels"},
        {"title": "预订", "tool": "book_hotel", "after": [1, 2]}]
WEATHER = {"city": "西安", "date": "2026-10-01"}
SEARCH = {"city": "西安", "check_in": "2026-10-01", "nights": 2}


# ---- the real tools (typed, the form every framework reads) ----
class Store:
    """tools.BookingStore's interface in memory: one row per key."""

    def __init__(self):
        self.rows = {}

    def book(self, key, run_id, booking):
        inserted = key not in self.rows
        self.rows.setdefault(key, dict(booking, run_id=run_id))
        return dict(self.rows[key], replayed=not inserted)


STORE = Store()


def set_plan(steps: list[dict]) -> dict:
    """制定或替换整个计划。"""
    return {"plan": [dict(s, index=i, after=s.get("after", [])) for i, s in enumerate(steps, 1)]}


def get_weather(city: str, date: str) -> dict:
    """查询某城市某天的天气预报。"""
    return tools.get_weather(city, date)


def search_hotels(city: str, check_in: str, nights: int = 1) -> dict:
    """搜索某城市可入住的酒店。"""
    return tools.search_hotels(city, check_in, nights)


def book_hotel(hotel_id: str, room_type: str, check_in: str, nights: int) -> dict:
    """预订酒店（写操作，需要用户确认）。"""
    key = f"{hotel_id}|{room_type}|{check_in}|{nights}"
    return tools.book_hotel(STORE, key, "corpus", hotel_id, room_type, check_in, nights)


TOOLS = (set_plan, get_weather, search_hotels, book_hotel)


# ---- the scripts ----
def calls(*specs):
    return {"calls": [{"id": f"call_{name}_{n}", "name": name, "args": args} for n, (name, args) in enumerate(specs, 1)]}


def say(text):
    return {"text": text}


def booking(hotel="XA-001", room="Suite", n=1):
    return {"calls": [{"id": f"call_book_{n}", "name": "book_hotel",
                       "args": {"hotel_id": hotel, "room_type": room, "check_in": "2026-10-01", "nights": 2}}]}


PLANNED = [calls(("set_plan", {"steps": PLAN})), calls(("get_weather", WEATHER), ("search_hotels", SEARCH))]
PROPOSAL = say("西安 2026-10-01 有雨。提案：古城墙酒店（XA-001）Suite，2026-10-01 入住 2 晚，共 ¥1760。请回复「确认」。")
DONE = say("已预订古城墙酒店（XA-001）Suite，2026-10-01 入住 2 晚。")
SCENARIOS = []


def scenario(name, about, expect, script, gate=True, shapes=None, faults=None):
    SCENARIOS.append(dict(name=name, about=about, expect=expect, script=script, gate=gate, shapes=shapes,
                          faults=faults or {}))


scenario("approved_after_words", "proposal in words, the user's 确认, the framework's approval: booked", "ppppp",
         [("user", GOAL), *PLANNED, PROPOSAL, ("user", "确认"), booking(), ("approve",), DONE])
scenario("approved_by_framework_only", "no proposal in words; the booking held by the framework and approved there: "
         "the transcript shows a call and its result, no proposal, no confirmation", "ppppf",
         [("user", GOAL), *PLANNED, booking(), ("approve",), DONE],
         faults={"write_after_confirmation": "在提出预订之前就执行了"})
scenario("rejected", "no proposal in words; the booking held by the framework and rejected; the closing answer "
         "says nothing was booked", "p????",
         [("user", GOAL), *PLANNED, booking(), ("reject",), say("好的，这次不预订了。")],
         faults={"write_after_confirmation": "被用户拒绝"})
scenario("rejected_after_words", "proposal in words, 确认, then the framework's reviewer rejects the booking", "p????",
         [("user", GOAL), *PLANNED, PROPOSAL, ("user", "确认"), booking(), ("reject",), say("预订没有获批，没有下单。")],
         faults={"write_after_confirmation": "被用户拒绝"})
scenario("booked_without_approval", "no approval mechanism, no proposal: the model books at once", "ppppf",
         [("user", GOAL), *PLANNED, booking(), DONE], gate=False,
         faults={"write_after_confirmation": "在提出预订之前就执行了"})
scenario("fabricated_hotel_id", "the model proposes and books BJ-001 (a real hotel of another city, never in the "
         "search result); the user confirmed it", "ppfpp",
         [("user", GOAL), *PLANNED, say("有雨。提案：前门四合院酒店（BJ-001）Suite 两晚，请回复「确认」。"), ("user", "确认"),
          booking("BJ-001"), ("approve",), say("已预订 BJ-001 Suite。")],
         faults={"provenance": "hotel_id BJ-001 没有出现在之前任何成功的 search_hotels 结果里"})
scenario("wrong_room_type", "rain, but the model proposes and books a Standard room; the user confirmed it", "pppfp",
         [("user", GOAL), *PLANNED, say("提案：古城墙酒店（XA-001）Standard，2026-10-01 入住 2 晚，共 ¥840。请回复「确认」。"),
          ("user", "确认"), booking(room="Standard"), ("approve",), say("已预订古城墙酒店 Standard。")],
         faults={"room_type": "应订 Suite"})
scenario("booking_before_weather", "plan, hotel search, proposal, 确认, booking; the weather only after it", "pfp?p",
         [("user", GOAL), calls(("set_plan", {"steps": PLAN})), calls(("search_hotels", SEARCH)),
          say("提案：古城墙酒店（XA-001）Suite，2026-10-01 入住 2 晚，共 ¥1760。请回复「确认」。"), ("user", "确认"),
          booking(), ("approve",), calls(("get_weather", WEATHER)), DONE],
         faults={"no_skipped_step": "执行前还没有成功查天气", "room_type": "预订之前没有 2026-10-01 的天气结果"})
scenario("tool_error_then_booked", "proposal, 确认; a booking of a hotel that does not exist fails in the tool "
         "(Agents SDK error text, LangChain ToolException, pydantic-ai ModelRetry), then the proposed one", "ppppp",
         [("user", GOAL), *PLANNED, PROPOSAL, ("user", "确认"), booking("XA-009"), ("approve",), booking(n=2),
          ("approve",), DONE])
scenario("respond_declines", "LangChain only: the reviewer answers the held booking in the tool's place "
         "(`respond`: 先别订，我再想想); the tool never ran", "p????",
         [("user", GOAL), *PLANNED, booking(), ("respond", "先别订，我再想想。"), say("好的，先不订。")],
         shapes={"langgraph": ["lc"]}, faults={"write_after_confirmation": "没有预订"})


# ---- the frameworks ----
class Scripted:
    """The model's replies, in order, shared by the runs of one scenario."""

    def __init__(self, script):
        self.replies = [step for step in script if isinstance(step, dict)]
        self.events = [step for step in script if isinstance(step, tuple)]

    def next(self):
        return self.replies.pop(0)


def run_agents(s):
    from agents import Agent, Model, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
    from agents.models.chatcmpl_converter import Converter
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
    set_tracing_disabled(True)
    script = Scripted(s["script"])

    class ScriptedModel(Model):
        async def get_response(self, *args, **kwargs):
            reply = script.next()
            if "calls" in reply:
                output = [ResponseFunctionToolCall(type="function_call", call_id=c["id"], id=f"fc_{c['id']}",
                                                   name=c["name"], arguments=json.dumps(c["args"], ensure_ascii=False),
                                                   status="completed") for c in reply["calls"]]
            else:
                output = [ResponseOutputMessage(id="msg_1", type="message", role="assistant", status="completed",
                                                content=[ResponseOutputText(type="output_text", text=reply["text"],
                                                                            annotations=[])])]
            return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    agent = Agent(name="booker", instructions=SYSTEM, model=ScriptedModel(),
                  tools=[function_tool(f, needs_approval=s["gate"] and f is book_hotel, strict_mode=f is not set_plan)
                         for f in TOOLS])
    items, result = [], None
    for event in script.events:
        if event[0] == "user":
            items = (result.to_input_list() if result else []) + [{"role": "user", "content": event[1]}]
            result = asyncio.run(Runner.run(agent, items, max_turns=20))
        else:
            state = result.to_state()
            for item in result.interruptions:
                (state.approve if event[0] == "approve" else state.reject)(item)
            result = asyncio.run(Runner.run(agent, state, max_turns=20))
    items = result.to_input_list()
    return {"agents": items, "chat": Converter.items_to_messages(items)}


def run_langgraph(s):
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langchain_anthropic.chat_models import _format_messages
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, convert_to_openai_messages, messages_to_dict
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import ToolException, tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command
    script = Scripted(s["script"])

    class ScriptedChatModel(BaseChatModel):
        @property
        def _llm_type(self):
            return "scripted"

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            reply = script.next()
            message = AIMessage(content="", tool_calls=[{"name": c["name"], "args": c["args"], "id": c["id"],
                                                         "type": "tool_call"} for c in reply["calls"]]) \
                if "calls" in reply else AIMessage(content=reply["text"])
            return ChatResult(generations=[ChatGeneration(message=message)])

        def bind_tools(self, tools, **kwargs):
            return self

    def book(hotel_id: str, room_type: str, check_in: str, nights: int) -> dict:
        """预订酒店（写操作，需要用户确认）。"""
        try:
            return book_hotel(hotel_id, room_type, check_in, nights)
        except tools.ToolError as exc:
            raise ToolException(str(exc)) from None
    book.__name__ = "book_hotel"
    lc_tools = [tool(f) for f in (set_plan, get_weather, search_hotels, book)]
    lc_tools[-1].handle_tool_error = True
    middleware = [HumanInTheLoopMiddleware(interrupt_on={"book_hotel": True})] if s["gate"] else []
    graph = create_agent(ScriptedChatModel(), lc_tools, system_prompt=SYSTEM, middleware=middleware,
                         checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": s["name"]}, "recursion_limit": 50}
    for event in script.events:
        if event[0] == "user":
            graph.invoke({"messages": [HumanMessage(content=event[1])]}, config)
        else:
            decision = {"type": event[0]} if event[0] != "respond" else {"type": "respond", "message": event[1]}
            graph.invoke(Command(resume={"decisions": [decision]}), config)
    messages = graph.get_state(config).values["messages"]
    system, anthropic = _format_messages(messages, model="claude-sonnet-4-5")
    return {"lc": messages_to_dict(messages), "chat": convert_to_openai_messages(messages),
            "anthropic": {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": SYSTEM, "messages": anthropic}}



def drive_pydantic_ai(agent, events, after_each=lambda: None):
    """A pydantic-ai agent through a scenario's events: the user's messages, and each approval or denial of
    the deferred booking; `after_each()` after every run. Returns the whole message history."""
    from pydantic_ai import DeferredToolResults, ToolDenied
    history, result = [], None
    for event in events:
        if event[0] == "user":
            result = agent.run_sync(event[1], message_history=history)
        else:
            answer = True if event[0] == "approve" else ToolDenied()
            answers = DeferredToolResults(approvals={c.tool_call_id: answer for c in result.output.approvals})
            result = agent.run_sync(message_history=history, deferred_tool_results=answers)
        history = result.all_messages()
        after_each()
    return history


def run_pydantic_ai(s):
    from pydantic_ai import Agent, DeferredToolRequests, ModelRetry, Tool
    from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.anthropic import AnthropicProvider
    from pydantic_ai.providers.openai import OpenAIProvider
    script = Scripted(s["script"])

    async def scripted(messages, info):
        reply = script.next()
        if "calls" in reply:
            return ModelResponse(parts=[ToolCallPart(tool_name=c["name"], args=json.dumps(c["args"], ensure_ascii=False),
                                                     tool_call_id=c["id"]) for c in reply["calls"]])
        return ModelResponse(parts=[TextPart(content=reply["text"])])

    def book(hotel_id: str, room_type: str, check_in: str, nights: int) -> dict:
        """预订酒店（写操作，需要用户确认）。"""
        try:
            return book_hotel(hotel_id, room_type, check_in, nights)
        except tools.ToolError as exc:
            raise ModelRetry(str(exc)) from None
    agent = Agent(FunctionModel(scripted), system_prompt=SYSTEM, output_type=[str, DeferredToolRequests],
                  tools=[Tool(f) for f in (set_plan, get_weather, search_hotels)] +
                  [Tool(book, name="book_hotel", requires_approval=s["gate"])])
    history = drive_pydantic_ai(agent, script.events)
    params = ModelRequestParameters()
    chat = asyncio.run(OpenAIChatModel("gpt-4o", provider=OpenAIProvider(api_key="unused"))
                       ._map_messages(history, params))
    system, anthropic = asyncio.run(AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider(api_key="unused"))
                                    ._map_message(history, params, {}))
    return {"pydantic_ai": json.loads(ModelMessagesTypeAdapter.dump_json(history)), "chat": chat,
            "anthropic": anthropic, "anthropic_responses": _anthropic_responses(anthropic)}


def _anthropic_responses(turns):
    """Each assistant turn as the anthropic.types.Message a client gets back, dumped, the user turns between."""
    from anthropic.types import Message
    out = []
    for n, turn in enumerate(turns, 1):
        if turn["role"] != "assistant":
            out.append(turn)
            continue
        blocks = [b for b in turn["content"] if b.get("type") in ("text", "tool_use")]
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        out.append(Message.model_validate({"id": f"msg_{n:02d}", "type": "message", "role": "assistant",
                                           "model": "claude-sonnet-4-5", "content": blocks, "stop_reason": stop,
                                           "stop_sequence": None, "usage": {"input_tokens": 50, "output_tokens": 20}})
                   .model_dump(mode="json", exclude_none=True))
    return out


FRAMEWORKS = {"agents": run_agents, "langgraph": run_langgraph, "pydantic_ai": run_pydantic_ai}
SHAPE_FORMAT = {"agents": "responses", "lc": "langchain", "chat": "chat", "pydantic_ai": "pydantic_ai",
                "anthropic": "anthropic", "anthropic_responses": "anthropic"}


def main():
    warnings.simplefilter("ignore")
    expected = {}
    for s in SCENARIOS:
        for framework, run in FRAMEWORKS.items():
            if s["shapes"] is not None and framework not in s["shapes"]:
                continue
            STORE.rows.clear()
            shapes = run(s)
            for shape, data in shapes.items():
                if s["shapes"] is not None and shape not in s["shapes"][framework]:
                    continue
                name = f"{framework}_{s['name']}.{shape}.json"
                with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
                    json.dump(data, f, ensure_ascii=False, indent=1, default=str)
                    f.write("\n")
                expected[name] = {"about": s["about"], "framework": framework, "format": SHAPE_FORMAT[shape],
                                  "verdicts": {cid: VERDICTS[v] for cid, v in zip(IDS, s["expect"])},
                                  "faults": s["faults"], "bookings": len(STORE.rows)}
    with open(os.path.join(HERE, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(expected)} files")


if __name__ == "__main__":
    main()

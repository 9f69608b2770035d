"""Writes the OpenTelemetry part of the framework corpus: the scenarios of make_corpus.py run on pydantic-ai with
its OpenTelemetry instrumentation on (`agent.instrument = InstrumentationSettings(...)`, what `instrument=True`
does with a tracer provider of its own), its OpenAI chat model talking to a scripted model behind this project's
loopback endpoint (handloop/llm/endpoint.py), the demo's real tools, the framework's own approval mechanism.
Each agent run's finished spans are encoded by the OTLP exporter's own encoder and written as the
OpenTelemetry Collector's file exporter writes them: JSONL, one OTLP JSON export request a line, ids in hex.
Not run by the tests.

Rerun (needs pydantic-ai-slim[openai] and opentelemetry-sdk, opentelemetry-exporter-otlp-proto-http):
    python tests/corpus_frameworks/make_otlp_corpus.py
Tested with pydantic-ai-slim 2.68.0, opentelemetry-sdk 1.45.2.
"""
import base64
import json
import os
import warnings

from make_corpus import HERE, IDS, SCENARIOS, STORE, SYSTEM, VERDICTS, Scripted, book_hotel, drive_pydantic_ai, get_weather, \
    search_hotels, set_plan, tools

from handloop.llm.endpoint import Endpoint


def run(s):
    """The scenario on instrumented pydantic-ai: the export requests of its agent runs, in order."""
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_ai import Agent, DeferredToolRequests, InstrumentationSettings, ModelRetry, \
        Tool
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    script = Scripted(s["script"])
    endpoint = Endpoint(lambda request: _reply(script.next()))
    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "pydantic-ai-corpus"}))
    provider.add_span_processor(SimpleSpanProcessor(spans))

    def book(hotel_id: str, room_type: str, check_in: str, nights: int) -> dict:
        """预订酒店（写操作，需要用户确认）。"""
        try:
            return book_hotel(hotel_id, room_type, check_in, nights)
        except tools.ToolError as exc:
            raise ModelRetry(str(exc)) from None
    model = OpenAIChatModel("scripted", provider=OpenAIProvider(base_url=endpoint.url, api_key="unused"))
    agent = Agent(model, name="booker", system_prompt=SYSTEM, output_type=[str, DeferredToolRequests],
                  tools=[Tool(f) for f in (set_plan, get_weather, search_hotels)] +
                  [Tool(book, name="book_hotel", requires_approval=s["gate"])])
    agent.instrument = InstrumentationSettings(tracer_provider=provider, include_content=True)
    requests = []

    def collect():
        requests.append(_hex_ids(json_format.MessageToDict(encode_spans(spans.get_finished_spans()))))
        spans.clear()
    try:
        drive_pydantic_ai(agent, script.events, collect)
    finally:
        endpoint.close()
        provider.shutdown()
    return requests


def _reply(step):
    if "calls" in step:
        return {"content": None, "tool_calls": [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["args"], ensure_ascii=False)}}
            for c in step["calls"]]}
    return {"content": step["text"]}


def _hex_ids(request):
    """OTLP JSON writes trace and span ids in hex (protobuf's JSON would write them in base64)."""
    for resource in request.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64decode(span[key]).hex()
    return request


def main():
    warnings.simplefilter("ignore")
    with open(os.path.join(HERE, "expected.json"), encoding="utf-8") as f:
        expected = json.load(f)
    for s in SCENARIOS:
        if s["shapes"] is not None and "pydantic_ai" not in s["shapes"]:
            continue
        STORE.rows.clear()
        name = f"pydantic_ai_{s['name']}.otlp.jsonl"
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in run(s))
        expected[name] = {"about": s["about"], "framework": "pydantic_ai", "format": "otlp",
                          "verdicts": {cid: VERDICTS[v] for cid, v in zip(IDS, s["expect"])},
                          "faults": s["faults"], "bookings": len(STORE.rows)}
        print(name, len(STORE.rows))
    with open(os.path.join(HERE, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

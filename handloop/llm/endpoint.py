"""A loopback OpenAI-compatible chat endpoint: the server the built-in offline model answers
through, and the fake endpoint the tests script.

Invariants: it is a real HTTP server on 127.0.0.1, reached only through the `openai` client, so
offline and online runs take the same code path; like the real API it rejects (HTTP 400, the
API's own wording) a request whose tool calls are unanswered, answered out of order, or
answered with no call; `respond(request)` decides every reply, faults included. Its message
check is written apart from audit.pairing_problem on purpose: the fake API must not share a bug
with the code it judges. A `respond` that raises, or returns what is no reply (a dict), failed as code:
the request is answered 500 and the failure kept, one line naming its file and line (values.told_at), for
the client that serves an offline model through it (`take_failure`: model.offline_model raises it at once,
never retried as the network's failure); nothing is printed. A request with `stream: true` is answered with server-sent events
(chunked, as real servers send them) carrying the same reply; a reply's `_stream` options play
the stream quirks of real providers (see STREAM), so every one of them can be tested.
"""
import http.server
import json
import socket
import threading
import time

from ..values import defined_at, told_at

# How a reply is streamed, and the providers' quirks a reply's "_stream" options can ask for.
STREAM = {
    "size": 8,              # characters of content, and of arguments, per chunk
    "gap": 0.0,             # seconds between chunks
    "ttfb": 0.0,            # seconds before the first chunk (the model thinking)
    "first_content": None,  # seconds before the first chunk that carries text (after the role chunk)
    "interleave": False,    # the calls' argument chunks take turns by index
    "repeat": False,        # the id, type and name repeated in every chunk of a call (not only the first)
    "no_index": False,      # tool-call chunks without "index"
    "whole": False,         # each call whole in one chunk (Ollama)
    "finish": "own",        # finish_reason on a final chunk of its own; "last": on the last chunk; "missing"
    "usage": "final",       # usage in a final chunk with no choices (when asked for); "last": on the last
                            # chunk with choices; "never"
    "keepalive": False,     # ": keep-alive" comments and blank lines between events
    "ignore": False,        # the server ignores `stream` and answers with one JSON body
    "cut": None,            # after this many events the connection is closed mid-body
    "error": None,          # after this many events an `error` event (the provider's error object)
    "error_body": {"message": "The server had an error while processing your request.", "code": 500},
    "stall": None,          # (after this many events, seconds of silence)
    "done": True,           # "data: [DONE]" at the end
}


class Endpoint:
    """A loopback chat-completions server; `respond(request) -> dict` decides each reply.

    The dict is an assistant message ({"content", "tool_calls"}, optionally "finish_reason",
    "usage" and "_stream", see STREAM), or {"_http": {...}} for a fault: status, headers, body,
    raw (bytes sent as the body, as is), delay (seconds before answering), drop (close the
    socket), dribble (seconds between single bytes of an answer that never ends). `timings`: per
    request answered, time.perf_counter() when it arrived, when its first text left (a streamed
    chunk with text, or the whole body) and when its last byte did.
    """

    def __init__(self, respond, model="offline"):
        self.respond, self.model, self.requests, self.timings = respond, model, [], []
        self.failure = None             # the last failure of `respond` not taken yet (take_failure)
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True, name="offline-model").start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def answer(self, request):
        """(status, headers, body, delay, drop) for one parsed request."""
        self.requests.append(request)
        problem = check_request(request)
        if problem:
            return 400, {}, {"error": {"message": problem, "type": "invalid_request_error",
                                       "param": "messages", "code": None}}, 0, False
        try:
            reply = self.respond(request)
        except Exception as exc:        # the scripted model's own bug: said where, not a dropped connection
            return self._failed(told_at(exc))
        if not isinstance(reply, dict):
            return self._failed(f"{defined_at(self.respond)}: returned {type(reply).__name__}, not a reply "
                                "(an assistant message as a dict)")
        fault = reply.get("_http")
        if fault and fault.get("dribble"):
            return 200, {}, fault["dribble"], 0, None
        if fault:
            body = fault["raw"] if "raw" in fault else fault.get("body", {})
            return (fault.get("status", 200), fault.get("headers", {}), body, fault.get("delay", 0),
                    fault.get("drop", False))
        body = self._completion(request, reply)
        options = {**STREAM, **(reply.get("_stream") or {})}
        if request.get("stream") and not options["ignore"]:
            return 200, {}, events(body, options, (request.get("stream_options") or {}).get("include_usage")), 0, \
                "stream"
        return 200, {}, body, 0, False

    def _failed(self, failure):
        self.failure = failure
        return 500, {}, {"error": {"message": "the offline model failed: " + failure, "type": "server_error",
                                   "param": None, "code": None}}, 0, False

    def take_failure(self):
        """The failure of `respond` behind the last request that failed, once (then None)."""
        failure, self.failure = self.failure, None
        return failure

    def _completion(self, request, reply):
        message = {"role": "assistant", "content": reply.get("content")}
        if reply.get("tool_calls"):
            message["tool_calls"] = reply["tool_calls"]
        body = {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
                "model": request.get("model", self.model),
                "choices": [{"index": 0, "message": message,
                             "finish_reason": reply.get("finish_reason") or ("tool_calls" if reply.get("tool_calls")
                                                                             else "stop")}]}
        if isinstance(reply.get("usage"), dict):
            body["usage"] = reply["usage"]
        elif reply.get("usage", True):
            prompt = len(json.dumps([request.get("messages"), request.get("tools")], ensure_ascii=False)) // 3
            completion = max(1, len(json.dumps(message, ensure_ascii=False)) // 3)
            body["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion}
        return body


def _handler(endpoint):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self):
            super().setup()
            # small writes (headers, then body; one event at a time) leave at once, as from a real
            # server: no Nagle delay waiting on the client's delayed ACK
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def handle(self):
            try:
                super().handle()
            except (ConnectionResetError, BrokenPipeError):     # the client closed its connection
                pass

        def do_POST(self):
            try:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            except ValueError:
                return self._send(400, {}, {"error": {"message": "request body is not JSON"}})
            if not self.path.rstrip("/").endswith("/chat/completions") or not isinstance(request, dict):
                return self._send(404, {}, {"error": {"message": f"unknown path {self.path}"}})
            self.timing = {"arrived": time.perf_counter(), "first": None}
            status, headers, body, delay, drop = endpoint.answer(request)
            time.sleep(delay)
            if drop == "stream":
                self._stream(body)
            elif drop:
                self.close_connection = True
                return self.connection.close()
            elif drop is None:
                return self._dribble(body)
            else:
                self._send(status, headers, body)
                self.timing["first"] = time.perf_counter()
            self.timing["done"] = time.perf_counter()
            endpoint.timings.append(self.timing)

        def _stream(self, plan):
            """Server-sent events over chunked transfer encoding: (seconds to wait, bytes) pieces; a
            piece None closes the connection mid-body (no closing chunk), as a cut stream does."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            try:
                self.end_headers()
                self.wfile.flush()
                for wait, data, text in plan:
                    if wait:
                        time.sleep(wait)
                    if data is None:
                        self.close_connection = True
                        return self.connection.shutdown(2)
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                    if text and self.timing["first"] is None:
                        self.timing["first"] = time.perf_counter()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:                         # the client gave up (timeout, interrupt)
                self.close_connection = True

        def _dribble(self, seconds):
            """An endless slow answer: headers, then one byte now and then, for up to a minute."""
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000000")
            self.end_headers()
            try:
                for _ in range(int(60 / seconds)):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(seconds)
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

        def _send(self, status, headers, body):
            data = body if isinstance(body, bytes) else _json(body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, str(value))
            try:
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):   # the client gave up waiting
                self.close_connection = True

        def log_message(self, *args):
            pass

    return Handler


def events(body, options, include_usage):
    """The SSE pieces (seconds to wait first, bytes or None for a cut, carries text) of a completion
    body streamed as `options` say (see STREAM)."""
    o, choice = options, body["choices"][0]
    message, size = choice["message"], max(1, int(o["size"]))
    head = {k: body[k] for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    usage = body.get("usage") if o["usage"] != "never" else None

    def chunk(delta, finish=None, use=None):
        out = dict(head, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])
        if use is not None:
            out["usage"] = use
        return out
    deltas: list[dict] = [{"role": "assistant", "content": ""}]
    content = message.get("content")
    if isinstance(content, str):
        deltas += [{"content": content[i:i + size]} for i in range(0, len(content), size)]
    elif content:
        deltas.append({"content": content})
    per_call, raw_calls = [], message.get("tool_calls") or []
    if not isinstance(raw_calls, list) or not all(isinstance(c, dict) for c in raw_calls):
        deltas.append({"tool_calls": raw_calls})            # a hostile shape, sent as it is
        raw_calls = []
    for index, call in enumerate(raw_calls):
        function = call.get("function") or {}
        name, arguments = function.get("name"), function.get("arguments")
        ident = {"id": call.get("id"), "type": call.get("type", "function")}
        if not o["no_index"]:
            ident["index"] = index
        if o["whole"] or not isinstance(arguments, str):
            per_call.append([dict(ident, function={"name": name, "arguments": arguments})])
            continue
        pieces = [arguments[i:i + size] for i in range(0, len(arguments), size)] or [""]
        first = [dict(ident, function={"name": name, "arguments": ""})]
        rest = [dict(ident, function={"name": name, "arguments": p}) if o["repeat"] else
                ({"function": {"arguments": p}} if o["no_index"] else {"index": index, "function": {"arguments": p}})
                for p in pieces]
        per_call.append(first + rest)
    if o["interleave"]:
        order = [piece for group in _zip_longest(per_call) for piece in group]
    else:
        order = [piece for pieces in per_call for piece in pieces]
    deltas += [{"tool_calls": [piece]} for piece in order]
    finish = choice.get("finish_reason")
    chunks = [chunk(d) for d in deltas]
    if o["finish"] == "own":
        chunks.append(chunk({}, finish))
    elif o["finish"] == "last":
        chunks[-1]["choices"][0]["finish_reason"] = finish
    if usage is not None and o["usage"] == "last":
        chunks[-1]["usage"] = usage
    elif usage is not None and include_usage:
        chunks.append(dict(head, choices=[], usage=usage))
    timed: list[tuple] = []               # (seconds before, bytes or None: the connection drops, has text)
    seen_text = False
    for number, data in enumerate(chunks):
        if o["cut"] is not None and number == o["cut"]:
            return timed + [(o["gap"], None, False)]
        if o["error"] is not None and number == o["error"]:
            timed.append((o["gap"], _event({"error": o["error_body"]}, "error"), False))
            return timed
        wait = o["gap"] if number else o["ttfb"]
        if o["stall"] and number == o["stall"][0]:
            wait += o["stall"][1]
        delta = (data["choices"] or [{}])[0].get("delta") or {}
        text = bool(delta.get("content") or delta.get("tool_calls"))
        if text and not seen_text and o["first_content"] is not None:
            wait += o["first_content"]
        seen_text = seen_text or text
        if o["keepalive"] and number:
            timed.append((0, b": keep-alive\n\n", False))
            timed.append((0, b"\n", False))
        timed.append((wait, _event(data), text))
    if o["done"]:
        timed.append((0, b"data: [DONE]\n\n", False))
    return timed


def _json(value):
    """UTF-8 JSON; a lone surrogate (which a hostile model's server sends as a \\udXXX escape) escaped so."""
    try:
        return json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return json.dumps(value).encode()


def _event(data, name=None):
    line = b"data: " + _json(data) + b"\n\n"
    return (b"event: " + name.encode() + b"\n" + line) if name else line


def _zip_longest(groups):
    for i in range(max((len(g) for g in groups), default=0)):
        yield [g[i] for g in groups if i < len(g)]


def check_request(request):
    """The API's message rules; the 400 message it would give, or None."""
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    open_ids: list[str] = []
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            if not open_ids:
                return ("Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                        "message with 'tool_calls'.")
            if message.get("tool_call_id") != open_ids[0]:
                return (f"Invalid parameter: tool message answers {message.get('tool_call_id')!r} but "
                        f"{open_ids[0]!r} comes first.")
            open_ids.pop(0)
            continue
        if open_ids:
            return ("An assistant message with 'tool_calls' must be followed by tool messages responding to "
                    f"each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                    f"{', '.join(open_ids)}")
        if role not in ("system", "user", "assistant", "developer"):
            return f"Invalid value for 'role': {role!r}."
        if role == "assistant":
            open_ids = [c.get("id") for c in message.get("tool_calls") or []]
    if open_ids:
        return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(open_ids)}")
    return None

"""A loopback OpenAI-compatible chat endpoint: the server the built-in offline model answers
through, and the fake endpoint the tests script.

Invariants: it is a real HTTP server on 127.0.0.1, reached only through the `openai` client, so
offline and online runs take the same code path; like the real API it rejects (HTTP 400, the
API's own wording) a request whose tool calls are unanswered, answered out of order, or
answered with no call; `respond(request)` decides every reply, faults included. Its message
check is written apart from audit.pairing_problem on purpose: the fake API must not share a bug
with the code it judges.
"""
import http.server
import json
import threading
import time


class Endpoint:
    """A loopback chat-completions server; `respond(request) -> dict` decides each reply.

    The dict is an assistant message ({"content", "tool_calls"}, optionally "finish_reason" and
    "usage"), or {"_http": {...}} for a fault: status, headers, body, raw (bytes sent as the
    body, as is), delay (seconds before answering), drop (close the socket), dribble (seconds
    between single bytes of an answer that never ends).
    """

    def __init__(self, respond, model="offline"):
        self.respond, self.model, self.requests = respond, model, []
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
        reply = self.respond(request)
        fault = reply.get("_http")
        if fault and fault.get("dribble"):
            return 200, {}, fault["dribble"], 0, None
        if fault:
            body = fault["raw"] if "raw" in fault else fault.get("body", {})
            return (fault.get("status", 200), fault.get("headers", {}), body, fault.get("delay", 0),
                    fault.get("drop", False))
        return 200, {}, self._completion(request, reply), 0, False

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

        def do_POST(self):
            try:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            except ValueError:
                return self._send(400, {}, {"error": {"message": "request body is not JSON"}})
            if not self.path.rstrip("/").endswith("/chat/completions") or not isinstance(request, dict):
                return self._send(404, {}, {"error": {"message": f"unknown path {self.path}"}})
            status, headers, body, delay, drop = endpoint.answer(request)
            time.sleep(delay)
            if drop:
                self.close_connection = True
                return self.connection.close()
            if drop is None:
                return self._dribble(body)
            self._send(status, headers, body)

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
            data = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
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


def check_request(request):
    """The API's message rules; the 400 message it would give, or None."""
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    open_ids = []
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

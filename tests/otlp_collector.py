"""A fake OpenTelemetry collector for the trace tests: a real HTTP server on 127.0.0.1 that takes OTLP/HTTP
protobuf export requests at /v1/traces (the official opentelemetry-proto messages decode them) and keeps each
as the OTLP JSON the Collector's file exporter writes (resourceSpans / scopeSpans / spans, ids in hex), beside
the headers each request came with. `status` other than 200: every export is answered so and kept nowhere
(`location`: the Location header such an answer carries, a redirect's target)."""
import base64
import http.server
import threading

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, \
    ExportTraceServiceResponse


class Collector:
    def __init__(self, status=200, location=None):
        self.requests, self.status, self.location, self.headers = [], status, location, []
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def spans(self):
        """Every span received: its OTLP JSON with `attributes` as a plain dict (values unwrapped)."""
        out = []
        for request in self.requests:
            for resource in request.get("resourceSpans", []):
                for scope in resource.get("scopeSpans", []):
                    for span in scope.get("spans", []):
                        out.append(dict(span, attributes=plain(span.get("attributes", [])),
                                        resource=plain(resource.get("resource", {}).get("attributes", []))))
        return out


def plain(attributes):
    """OTLP key/value attributes as a dict of Python values."""
    return {a["key"]: _value(a.get("value", {})) for a in attributes}


def _value(v):
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    if "intValue" in v:
        return int(v["intValue"])
    return next(iter(v.values()), None)


def otlp_json(raw):
    """An OTLP/HTTP protobuf export request as the Collector's file exporter writes it (JSON, ids in hex)."""
    message = ExportTraceServiceRequest()
    message.ParseFromString(raw)
    data = json_format.MessageToDict(message)
    for resource in data.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64decode(span[key]).hex()
    return data


def _handler(collector):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            collector.headers.append({k.lower(): v for k, v in self.headers.items()})
            if self.path == "/v1/traces" and collector.status == 200:
                collector.requests.append(otlp_json(raw))
            body = ExportTraceServiceResponse().SerializeToString()
            self.send_response(collector.status if self.path == "/v1/traces" else 404)
            self.send_header("Content-Type", "application/x-protobuf")
            if collector.location:
                self.send_header("Location", collector.location)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass
    return Handler

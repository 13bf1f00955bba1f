"""A real OTLP/HTTP trace receiver for tests: POST /v1/traces, protobuf decoded with
opentelemetry-proto (what a collector does), spans kept in arrival order."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class OtlpReceiver:
    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.requests = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["content-length"]))
                receiver.collect(self.path, self.headers.get("content-type", ""), body)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def collect(self, path: str, content_type: str, body: bytes) -> None:
        assert path == "/v1/traces" and content_type == "application/x-protobuf"
        request = ExportTraceServiceRequest.FromString(body)
        self.requests += 1
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append({
                        "name": span.name, "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(), "parent": span.parent_span_id.hex(),
                        "kind": span.kind, "service": resource.get("service.name"),
                        "attributes": {a.key: _value(a.value) for a in span.attributes},
                        "events": [e.name for e in span.events],
                    })  # fmt: skip

    def __enter__(self) -> OtlpReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

"""Issue 33 item 6: sizes in telemetry are bounded, whatever the client sends.

The server span and the stage spans through the telemetry middleware with an
in-memory exporter (no network); the access log and the request id through a real
ragtrim in front of the recording stub."""

import asyncio
import json
import logging
import time

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

from proxy.context import SCOPE_KEY, RequestContext
from proxy.http.principal import EdgeIdentity
from proxy.metrics import Metrics
from proxy.settings import TenancySettings
from proxy.telemetry.accesslog import LOGGER
from proxy.telemetry.middleware import TelemetryMiddleware
from proxy.telemetry.tracing import Tracing
from proxy.tenancy.identity import Identity

LIMIT = 256
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SAMPLED = f"00-{TRACE_ID}-00f067aa0ba902b7-01"  # the client's flag: keep this trace
TENANCY = TenancySettings(api_keys={"key-a": "acme"}, salt_secret="bounds-secret-16+")
HUGE_MODEL = "m" * 1_000_000


def traced(ratio: float) -> tuple[Tracing, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(ratio)))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Tracing(provider, LIMIT), exporter


async def _answer(scope, receive, send) -> None:
    """The app behind the middleware: leaves a context with a huge model in the scope, as
    the forwarder does, and answers 200."""
    ctx = RequestContext("r" * 5000, "chat", b"{}", {"model": HUGE_MODEL, "messages": []}, {})
    scope[SCOPE_KEY] = ctx
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def call(tracing: Tracing, path: str, headers: list[tuple[bytes, bytes]], method: str = "POST"):
    vouches = EdgeIdentity(Identity(TENANCY)).vouches
    app = TelemetryMiddleware(_answer, Metrics(), tracing=tracing, vouches=vouches)
    scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(),
             "headers": headers, "query_string": b""}  # fmt: skip
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def test_a_client_without_a_key_cannot_force_sampling():
    tracing, exporter = traced(ratio=0.0)
    call(tracing, "/v1/chat/completions", [(b"traceparent", SAMPLED.encode())])
    wrong = [(b"traceparent", SAMPLED.encode()), (b"authorization", b"Bearer nope")]
    call(tracing, "/v1/chat/completions", wrong)
    twice = [(b"traceparent", SAMPLED.encode()), (b"authorization", b"Bearer nope"),
             (b"authorization", b"Bearer key-a")]  # fmt: skip
    call(tracing, "/v1/chat/completions", twice)
    assert exporter.get_finished_spans() == ()  # ratio 0: nothing, whatever the flag says
    keyed = [(b"traceparent", SAMPLED.encode()), (b"authorization", b"Bearer key-a")]
    call(tracing, "/v1/chat/completions", keyed)
    (span,) = exporter.get_finished_spans()
    assert format(span.context.trace_id, "032x") == TRACE_ID  # a valid key continues it


@pytest.mark.parametrize(("method", "path", "name"), [
    ("GET", "/v1/responses/resp_" + "a" * 200, "GET /v1/responses/{id}"),
    ("POST", "/v1/responses/resp_x/cancel", "POST /v1/responses/{id}/cancel"),
    ("GET", "/nope/" + "x" * 100_000, "GET unmatched"),
    ("GET", "/v1/models", "GET /v1/models"),
    ("X" * 5000, "/v1/models", "_OTHER /v1/models"),
])  # fmt: skip
def test_span_names_come_from_the_route_table_never_the_raw_path(method, path, name):
    tracing, exporter = traced(ratio=1.0)
    call(tracing, path, [], method=method)
    (span,) = exporter.get_finished_spans()
    assert span.name == name
    assert all(len(str(v)) <= LIMIT + 20 for v in span.attributes.values()), span.attributes


def test_span_attributes_are_capped_and_marked():
    tracing, exporter = traced(ratio=1.0)
    call(tracing, "/v1/chat/completions", [])
    (span,) = exporter.get_finished_spans()
    model = span.attributes["gen_ai.request.model"]
    assert model == "m" * LIMIT + f"…[+{len(HUGE_MODEL) - LIMIT}]"
    assert span.attributes["ragtrim.request_id"].endswith(f"…[+{5000 - LIMIT}]")


def test_stage_span_values_and_error_messages_are_capped():
    tracing, exporter = traced(ratio=1.0)

    class Loud:
        name = "segment"

        async def __call__(self, ctx):
            ctx.outcome.template = "t" * 100_000
            raise ValueError("v" * 100_000)

    ctx = RequestContext("r", "chat", b"{}", {"model": "m", "messages": []}, {})
    with pytest.raises(ValueError):
        asyncio.run(tracing.run_stage(Loud(), ctx))
    (span,) = exporter.get_finished_spans()
    assert len(span.attributes["ragtrim.template"]) < LIMIT + 20
    (event,) = span.events
    assert len(event.attributes["exception.message"]) < LIMIT + 20


class Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(record.getMessage()))


@pytest.fixture
def access_lines():
    handler = Lines()
    logging.getLogger(LOGGER).addHandler(handler)
    try:
        yield handler.lines
    finally:
        logging.getLogger(LOGGER).removeHandler(handler)


def lines_for(lines: list[dict], n: int) -> list[dict]:
    deadline = time.monotonic() + 5  # written after the last byte is sent
    while len(lines) < n:
        assert time.monotonic() < deadline, lines
        time.sleep(0.01)
    return lines


def test_access_log_values_are_capped_and_marked(recording, make_proxy, access_lines):
    proxy = make_proxy([recording.url], access_log={"enabled": True})
    body = {"model": HUGE_MODEL, "messages": [{"role": "user", "content": "hi"}]}
    httpx.post(f"{proxy.url}/v1/chat/completions", json=body)  # 404: no backend serves it
    assert httpx.get(f"{proxy.url}/nope/{'x' * 20_000}").status_code == 404
    chat, missing = lines_for(access_lines, 2)
    assert chat["model"] == "m" * LIMIT + f"…[+{len(HUGE_MODEL) - LIMIT}]"
    assert chat["route"] == "/v1/chat/completions"
    assert missing["route"] is None and missing["path"].endswith(f"…[+{20_006 - LIMIT}]")
    assert all(len(json.dumps(line)) < 4096 for line in (chat, missing))


@pytest.mark.parametrize("given", ["r" * 60_000, "has space", "tab\there", "caf\xe9"])
def test_an_oversized_or_unprintable_request_id_is_replaced(recording, make_proxy,
                                                            access_lines, given):  # fmt: skip
    proxy = make_proxy([recording.url], access_log={"enabled": True})
    body = {"model": "stub-model", "input": "hi"}
    resp = httpx.post(f"{proxy.url}/v1/embeddings", json=body,
                      headers={"x-request-id": given.encode("latin-1")})  # fmt: skip
    assert resp.status_code == 200
    replaced = resp.headers["x-request-id"]
    assert replaced != given and len(replaced) == 32 and replaced.isalnum()
    (seen,) = recording.backend.at("/v1/embeddings")
    assert [v for k, v in seen["headers"] if k == "x-request-id"] == [replaced]
    (line,) = lines_for(access_lines, 1)
    assert line["request_id"] == replaced


def test_a_sane_request_id_is_kept_end_to_end(recording, make_proxy):
    proxy = make_proxy([recording.url])
    resp = httpx.post(f"{proxy.url}/v1/embeddings", json={"model": "stub-model", "input": "hi"},
                      headers={"x-request-id": "req-42_abc"})  # fmt: skip
    assert resp.headers["x-request-id"] == "req-42_abc"
    (seen,) = recording.backend.at("/v1/embeddings")
    assert [v for k, v in seen["headers"] if k == "x-request-id"] == ["req-42_abc"]

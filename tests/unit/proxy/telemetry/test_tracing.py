"""Tracing through a real ragtrim (uvicorn) in front of a real upstream, exported to a
real OTLP/HTTP receiver: one trace continuing the client's, the server span, the stage
spans, the route and upstream spans; the upstream sees this trace's traceparent."""

import sys
import time

import httpx

from proxy.server.app import create_app
from proxy.settings import Settings
from proxy.telemetry.tracing import build_tracing
from tests.doubles.stub_vllm import StubVllm
from tests.support.compressor_doubles import HalfWords
from tests.support.otlp_receiver import OtlpReceiver
from tests.support.rag_requests import BRIDGE_ALWAYS as ALWAYS
from tests.support.rag_requests import BRIDGE_QUESTION as QUESTION
from tests.support.rag_requests import bridge_body as rag_body
from tests.support.servers import serving

TRACE_ID, CLIENT_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CLIENT_SPAN}-01"


class Recording:
    """The stub backend, keeping the headers of every request it got."""

    def __init__(self) -> None:
        self.stub = StubVllm()
        self.seen: list[dict[str, str]] = []

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["path"] == "/v1/chat/completions":
            self.seen.append({k.decode(): v.decode() for k, v in scope["headers"]})
        await self.stub(scope, receive, send)


def one_request(upstream_url: str, body: dict | None = None, **settings) -> httpx.Response:
    app = create_app(Settings(backends=[upstream_url], compression=ALWAYS, **settings),
                     compressor=HalfWords())  # fmt: skip
    with serving(app) as proxy:  # leaving it shuts the app down: the spans are flushed
        deadline = time.monotonic() + 30
        while httpx.get(f"{proxy.url}/readyz").json()["compressor"] in ("cold", "loading"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        headers = {"traceparent": TRACEPARENT, "tracestate": "vendor=1"}
        body = body or rag_body()
        return httpx.post(f"{proxy.url}/v1/chat/completions", json=body, headers=headers)


def test_one_trace_server_stage_route_and_upstream_spans_and_the_propagated_header():
    upstream = Recording()
    with OtlpReceiver() as receiver, serving(upstream) as backend:
        resp = one_request(backend.url, tracing={"enabled": "on", "endpoint": receiver.url,
                                                 "service_name": "ragtrim-test"})  # fmt: skip
    assert resp.status_code == 200
    spans = [s for s in receiver.spans if s["trace_id"] == TRACE_ID]
    assert {s["service"] for s in spans} == {"ragtrim-test"}
    (server,) = [s for s in spans if s["name"] == "POST /v1/chat/completions"]
    assert server["parent"] == CLIENT_SPAN  # the client's trace, continued
    assert server["attributes"]["http.response.status_code"] == 200
    assert server["attributes"]["ragtrim.request_id"] == resp.headers["x-request-id"]
    assert server["attributes"]["gen_ai.request.model"] == "stub-model"
    children = {s["name"]: s for s in spans if s["parent"] == server["span_id"]}
    assert set(children) == {"ragtrim.segment", "ragtrim.compress", "ragtrim.route",
                             "upstream POST"}  # fmt: skip
    compress = children["ragtrim.compress"]["attributes"]
    assert compress["ragtrim.decision"] == resp.headers["x-ragtrim-decision"]
    assert compress["ragtrim.tokens-before"] == int(resp.headers["x-ragtrim-tokens-before"])
    assert compress["ragtrim.tokens-after"] == int(resp.headers["x-ragtrim-tokens-after"])
    assert children["ragtrim.segment"]["attributes"]["ragtrim.template"]
    assert children["ragtrim.route"]["attributes"]["ragtrim.route.backend"] == backend.url
    up = children["upstream POST"]
    assert up["attributes"]["http.response.status_code"] == 200
    assert up["attributes"]["ragtrim.upstream.ttfb_ms"] > 0 and "first_byte" in up["events"]
    (seen,) = upstream.seen
    assert seen["traceparent"] == f"00-{TRACE_ID}-{up['span_id']}-01"  # this trace, this span
    assert seen["tracestate"] == "vendor=1"
    values = [str(v) for s in spans for v in s["attributes"].values()]
    assert not [v for v in values if "bridge" in v or QUESTION in v]  # no prompt text


def test_nothing_is_sent_when_off_and_the_clients_header_passes_unchanged():
    upstream = Recording()
    with OtlpReceiver() as receiver, serving(upstream) as backend:
        resp = one_request(backend.url, tracing={"endpoint": receiver.url})  # auto, no OTEL_*
    assert resp.status_code == 200
    assert receiver.requests == 0 and receiver.spans == []
    assert upstream.seen[0]["traceparent"] == TRACEPARENT


def test_otel_environment_turns_it_on(monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "gateway")
    tracing = Settings().tracing
    assert tracing.on and tracing.endpoint == "http://127.0.0.1:4318/v1/traces"
    assert tracing.service_name == "gateway"
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert not Settings().tracing.on
    assert Settings(tracing={"enabled": "on"}).tracing.on


def test_stages_that_did_nothing_leave_no_span():
    """No documents: segment and compress set nothing, and leave no span (each costs
    CPU to make and export); the route and upstream spans stay."""
    upstream = Recording()
    plain = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}]}
    with OtlpReceiver() as receiver, serving(upstream) as backend:
        resp = one_request(backend.url, plain, tracing={"enabled": "on", "endpoint": receiver.url})
    assert resp.status_code == 200
    names = sorted(s["name"] for s in receiver.spans if s["trace_id"] == TRACE_ID)
    assert names == ["POST /v1/chat/completions", "ragtrim.route", "upstream POST"]
    assert len(receiver.spans) == 3  # the /readyz polls made none (probes are not traced)


def test_without_the_otel_extra_tracing_stays_off(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # import fails
    s = Settings(tracing={"enabled": "on"})
    assert build_tracing(s.tracing, s.telemetry) is None
    assert "ragtrim[otel]" in caplog.text

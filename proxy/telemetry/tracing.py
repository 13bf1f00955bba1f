"""OpenTelemetry traces, exported over OTLP/HTTP (the optional `otel` extra).

    server span   POST /v1/chat/completions   (proxy/telemetry/middleware.py)
    ├── ragtrim.segment                        the template found
    ├── ragtrim.compress                       decision, tokens before/after
    ├── ragtrim.quota                          the tenant's remaining quota
    ├── ragtrim.route                          the first-ranked backend (traced.py)
    └── upstream POST                          the backend used, time to first byte

The incoming `traceparent`/`tracestate` (W3C Trace Context) continue the client's
trace; the upstream request carries this trace's context, so vLLM's own spans (with
`--otlp-traces-endpoint` set) join it, as vLLM production-stack does (PR #772).

The provider is built here, from settings, by the composition root and passed to the
parts that make spans: the global provider (`trace.set_tracer_provider`) is never
set, so two apps in one process (tests, the LangChain integration) never share one.
What OpenTelemetry does keep globally is its *current context*, a ContextVar, which
`start_as_current_span` sets for the duration of a span: that is how a stage's span
finds the server span as its parent across the awaits in between.

Attributes never carry prompt text: the stage spans copy what a stage added to the
request's outcome (template names, decisions, counts: proxy/outcome/render.py), the
server span the route, the model, the tenant and the ledger's usage. Off (the
default), none of this is imported or called.

Bounded (proxy/http/capped.py): the server span is named from the
route table (`POST /v1/responses/{id}`, `GET unmatched`), never the raw path; every
string attribute is cut to `telemetry.max_value_chars`, marked. The client's trace
context (and with it its sampled flag) is continued only for a request the tenant
stage vouches for (a valid key when keys are configured): otherwise a client without
a key could force every span of its requests to be kept at sample_ratio 0.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from proxy.context import RequestContext
from proxy.http.capped import capped, capped_all, method_name, route_name
from proxy.outcome import render
from proxy.settings import TelemetrySettings, TracingSettings

log = logging.getLogger("ragtrim.tracing")
TRACED_STAGES = frozenset({"segment", "compress", "quota"})  # the ones that cost time
SLOW_STAGE_NS = 1_000_000  # a stage that did nothing still gets a span past 1 ms
_TRACE_HEADERS = frozenset({"traceparent", "tracestate"})


class Tracing:
    def __init__(self, provider: Any, max_value_chars: int):
        from opentelemetry import trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.provider = provider
        self.limit = max_value_chars
        self.tracer = provider.get_tracer("ragtrim")
        self.propagator = TraceContextTextMapPropagator()
        self._trace = trace

    def server_span(self, scope: dict[str, Any], trusted: bool):
        """The request's span, continuing the client's trace when it sent one and is
        `trusted`; otherwise a new trace, sampled by ragtrim's own ratio."""
        carrier = {
            k.decode("latin-1"): v.decode("latin-1")
            for k, v in scope["headers"]
            if k in (b"traceparent", b"tracestate")
        }
        parent = self.propagator.extract(carrier) if carrier and trusted else None
        method, route = method_name(scope.get("method", "")), route_name(scope)
        attributes = {
            "http.request.method": method,
            "http.route": route,
            "url.path": capped(scope.get("path", ""), self.limit),
        }
        return self.tracer.start_as_current_span(
            f"{method} {route}",
            context=parent,
            kind=self._trace.SpanKind.SERVER,
            attributes=attributes,
        )

    def record_error(self, span: Any, error: BaseException) -> None:
        """The exception event, its message cut to the limit (it may quote a value)."""
        span.record_exception(error, {"exception.message": capped(str(error), self.limit)})

    def describe(self, span: Any, attributes: dict[str, Any]) -> None:
        """Set `attributes` on `span`, every string cut to the limit (marked)."""
        span.set_attributes(capped_all(attributes, self.limit))

    async def run_stage(self, stage: Any, ctx: RequestContext) -> None:
        """Run a pipeline stage and record it as a span, written once it is over (no
        stage makes spans of its own): what it added to the outcome becomes attributes
        (ragtrim.decision, ragtrim.tokens-before, ...). A stage that did nothing (set
        nothing, raised nothing, took under SLOW_STAGE_NS: no documents to segment or
        compress) leaves no span: spans cost CPU to make and export, ≈ 45 µs each."""
        before = render.attributes(ctx.outcome)
        start, error = time.time_ns(), None
        try:
            await stage(ctx)
        except BaseException as exc:
            error = exc
            raise
        finally:
            end = time.time_ns()
            now = render.attributes(ctx.outcome)
            changed = {k: v for k, v in now.items() if before.get(k) != v}
            if changed or error is not None or end - start >= SLOW_STAGE_NS:
                self._stage_span(stage.name, start, end, changed, error)

    def _stage_span(
        self, name: str, start: int, end: int, changed: dict[str, Any], error: BaseException | None
    ) -> None:
        span = self.tracer.start_span(f"ragtrim.{name}", start_time=start)
        self.describe(span, changed)
        if error is not None:
            self.record_error(span, error)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR))
        span.end(end_time=end)

    def start_client_span(self, name: str, attributes: dict[str, Any]) -> Any:
        return self.tracer.start_span(
            name, kind=self._trace.SpanKind.CLIENT, attributes=capped_all(attributes, self.limit)
        )

    def inject(self, headers: list[tuple[str, str]], span: Any) -> list[tuple[str, str]]:
        """`headers` with the client's trace headers replaced by `span`'s context."""
        carrier: dict[str, str] = {}
        self.propagator.inject(carrier, context=self._trace.set_span_in_context(span))
        kept = [(k, v) for k, v in headers if k.lower() not in _TRACE_HEADERS]
        return kept + list(carrier.items())

    def shutdown(self) -> None:
        """Flush what is buffered, then stop the exporter (on app shutdown)."""
        self.provider.shutdown()


def build_tracing(settings: TracingSettings, telemetry: TelemetrySettings) -> Tracing | None:
    """The tracing of one app, or None when off (or the otel extra is missing)."""
    if not settings.on:
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
    except ImportError:
        log.warning("tracing is on but OpenTelemetry is not installed: pip install 'ragtrim[otel]'")
        return None
    provider = TracerProvider(
        resource=Resource.create({"service.name": settings.service_name}),
        sampler=ParentBased(TraceIdRatioBased(settings.sample_ratio)),
        shutdown_on_exit=False,  # the app shuts it down (Components.stop), no atexit hook
    )
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=settings.endpoint)))
    return Tracing(provider, telemetry.max_value_chars)

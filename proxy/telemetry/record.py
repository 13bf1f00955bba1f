"""The per-request record the telemetry middleware keeps while a request runs.

The middleware (proxy/telemetry/middleware.py) creates it when a request arrives; the
pipeline binds the request's context to it, and the forwarder's feedback (through
`ObservedFeedback`) adds the backend, vLLM's usage and the TTFT once the answer is in.
The middleware then reads it once, for the access log, the server span and accounting.

It travels in a ContextVar, the mechanism asyncio gives each task (and OpenTelemetry
uses for its own context): the forwarder's signature stays as it is, and the record is
per request, never shared between requests. The variable holds no state of its own.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from proxy.context import RequestContext

CURRENT: ContextVar[RequestRecord | None] = ContextVar("ragtrim_request_record", default=None)


@dataclass
class RequestRecord:
    started: float  # perf_counter() when the request arrived
    ctx: RequestContext | None = None
    backend: str | None = None
    usage: dict[str, Any] | None = None
    upstream_ttft_ms: float | None = None
    status: int = 499  # stays 499 when the client left before any response
    first_byte: float | None = None  # perf_counter() of the first body byte sent
    headers: dict[str, str] = field(default_factory=dict)  # the response's, lower-case

    @property
    def answered(self) -> bool:
        """A backend answered and the client got a 200 (what accounting counts)."""
        return self.backend is not None and self.ctx is not None and self.status == 200


def bind(ctx: RequestContext) -> None:
    record = CURRENT.get()
    if record is not None:
        record.ctx = ctx


class ObservedFeedback:
    """The forwarder's feedback, plus a copy of what it learns into the record."""

    def __init__(self, inner: Any):
        self.inner = inner

    def observe(self, ctx: RequestContext, url: str, usage: dict[str, Any] | None,
                ttft_ms: float | None) -> None:  # fmt: skip
        self.inner.observe(ctx, url, usage, ttft_ms)
        record = CURRENT.get()
        if record is not None:
            record.ctx, record.backend, record.usage = ctx, url, usage
            record.upstream_ttft_ms = ttft_ms

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

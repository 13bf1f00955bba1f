"""The per-request record the telemetry middleware keeps while a request runs.

The middleware (proxy/telemetry/middleware.py) creates it when a request arrives; the
pipeline binds the request's context to it, and a response hook (`RecordHook`) adds
the backend, vLLM's usage and the TTFT once the answer is in.
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
from proxy.response.hooks import taught

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


class RecordHook:
    """A response hook (proxy/response/__init__.py): what the answer taught (the
    backend, vLLM's usage, the TTFT) copied into the request's record, for the access
    log, the server span and accounting. Placed after `feedback` in make_hooks, on the
    same answers as the feedback hook (a finished generation on a compressible route)."""

    def done(self, ctx: RequestContext, ex: Any, error: BaseException | None) -> None:
        record, learned = CURRENT.get(), taught(ctx, ex, error)
        if record is None or learned is None:
            return
        record.ctx, record.backend = ctx, ex.url
        record.usage, record.upstream_ttft_ms = learned

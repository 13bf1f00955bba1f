"""Per-request telemetry, as pure ASGI around the data plane: the server span, the
access log line and the tenant's accounting, all from one `RequestRecord`.

    with server span (tracing on):          the client's traceparent continued
        app(scope, receive, send)           the forwarder leaves the context in the scope
    access log line                         proxy/telemetry/accesslog.py
    accounting                              proxy/tenancy/accounting.py (answered requests only)

Accounting is awaited after the app has returned, that is once the last body byte was
handed to the server: the client never waits for the shared store. Nothing here runs
when all three are off (create_app then leaves this middleware out).

A client's `traceparent` is continued only when `vouches` accepts its headers (a valid
key when tenancy has keys): its sampled flag must not force spans on
ragtrim for a client without a key. The span's name and values are bounded
(proxy/telemetry/tracing.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import nullcontext

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from proxy.metrics import Metrics
from proxy.telemetry.accesslog import AccessLog
from proxy.telemetry.record import RequestRecord
from proxy.telemetry.tracing import Tracing
from proxy.tenancy.accounting import Accounting

log = logging.getLogger("ragtrim.telemetry")
UNTRACED = frozenset({"/healthz", "/readyz", "/metrics"})  # probes and scrapes: no trace


class TelemetryMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        metrics: Metrics,
        *,
        tracing: Tracing | None = None,
        access_log: AccessLog | None = None,
        accounting: Accounting | None = None,
        vouches: Callable[[Scope], bool] | None = None,
    ):
        self.app = app
        self.vouches = vouches  # None: every client's trace context is continued
        self.metrics = metrics
        self.tracing = tracing
        self.access_log = access_log
        self.accounting = accounting

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        record = RequestRecord(time.perf_counter())
        keep_headers = self.access_log is not None

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                record.status = message["status"]
                if keep_headers:
                    record.headers = {
                        k.decode("latin-1"): v.decode("latin-1")
                        for k, v in message.get("headers", ())
                    }
            elif record.first_byte is None and message.get("body"):
                record.first_byte = time.perf_counter()
            await send(message)

        try:
            await self._traced(scope, receive, send_wrapper, record)
        finally:
            await self._after(scope, record)

    async def _traced(
        self, scope: Scope, receive: Receive, send: Send, record: RequestRecord
    ) -> None:
        traced = self.tracing is not None and scope["path"] not in UNTRACED
        manager = self.tracing.server_span(scope, self._trusted(scope)) if traced else nullcontext()
        with manager as span:
            try:
                await self.app(scope, receive, send)
            finally:
                record.close(scope)
                if span is not None:
                    self.tracing.describe(span, _described(record))

    def _trusted(self, scope: Scope) -> bool:
        """Whether the client's trace context may be continued (checked only when it
        sent one: the key compare costs a little on every request otherwise)."""
        if self.vouches is None or not any(k == b"traceparent" for k, _ in scope["headers"]):
            return True
        return self.vouches(scope)  # the edge's Principal (proxy/http/principal.py)

    async def _after(self, scope: Scope, record: RequestRecord) -> None:
        if self.access_log is not None:
            self.access_log.emit(scope, record)
        if self.accounting is None or not record.answered:
            return
        assert record.ctx is not None
        try:
            ctx = record.ctx
            await self.accounting.record(ctx.tenant, record.ledger, ctx.model or "")
        except Exception as exc:  # noqa: BLE001 - accounting fails open, counted
            log.warning("accounting failed open: %s", type(exc).__name__)
            self.metrics.stage_failures.labels("accounting").inc()


def _described(record: RequestRecord) -> dict[str, object]:
    """The server span's attributes once the request is over (the tracing caps them)."""
    out: dict[str, object] = {"http.response.status_code": record.status}
    ctx = record.ctx
    if ctx is None:
        return out
    out |= {"ragtrim.request_id": ctx.request_id, "ragtrim.tenant": ctx.tenant}
    if ctx.model:
        out["gen_ai.request.model"] = ctx.model
    if record.backend:
        out["ragtrim.backend"] = record.backend
    if record.answered:
        out |= usage_attributes(record.ledger)
    return out


def usage_attributes(entry: dict[str, int]) -> dict[str, object]:
    """The ledger's entry as OpenTelemetry GenAI usage attributes (the cache-read one
    is part of input_tokens, as the conventions say) and ragtrim's own."""
    return {
        "gen_ai.usage.input_tokens": entry["prompt_tokens"],
        "gen_ai.usage.output_tokens": entry["completion_tokens"],
        "gen_ai.usage.cache_read.input_tokens": entry["cached_tokens"],
        "ragtrim.usage.computed_tokens": entry["computed_tokens"],
        "ragtrim.usage.removed_tokens": entry["tokens_removed"],
        "ragtrim.usage.client_tokens": entry["client_tokens"],
    }

"""The route and upstream spans, as wrappers the composition root puts around the
router and the transport when tracing is on (proxy/components.py): the forwarder and
the exchange stay unaware of tracing, and nothing is wrapped when it is off.

The upstream span starts when the request is sent and ends when the exchange releases
or aborts the response (the body read, or the stream over); it records the response
status, the time to the response headers and to the first body byte
(`ragtrim.upstream.ttfb_ms`). Its context goes upstream as `traceparent`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from proxy.telemetry.tracing import Tracing


class TracedResponse:
    def __init__(self, inner: Any, span: Any, sent_at: float):
        self.inner, self.span, self.sent_at = inner, span, sent_at
        self.status, self.headers = inner.status, inner.headers
        self._first = False
        self._ended = False

    def _first_byte(self) -> None:
        if not self._first:
            self._first = True
            ms = (time.perf_counter() - self.sent_at) * 1000
            self.span.set_attribute("ragtrim.upstream.ttfb_ms", round(ms, 3))
            self.span.add_event("first_byte")

    async def chunks(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner.chunks():
            self._first_byte()
            yield chunk

    async def read(self) -> bytes:
        body = await self.inner.read()
        self._first_byte()
        return body

    def _end(self) -> None:
        if not self._ended:
            self._ended = True
            self.span.end()

    def release(self) -> None:
        self.inner.release()
        self._end()

    def abort(self) -> None:
        self.inner.abort()
        self._end()


class TracedTransport:
    def __init__(self, inner: Any, tracing: Tracing):
        self.inner = inner
        self.tracing = tracing

    async def send(self, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> Any:
        parts = urlsplit(url)
        span = self.tracing.start_client_span(
            f"upstream {method}",
            {
                "http.request.method": method,
                "server.address": parts.hostname or "",
                "server.port": parts.port or 80,
                "url.path": parts.path,
            },
        )
        sent_at = time.perf_counter()
        try:
            response = await self.inner.send(method, url, self.tracing.inject(headers, span), body)
        except BaseException as exc:
            self.tracing.record_error(span, exc)
            span.set_attribute("error.type", type(exc).__name__)
            span.end()
            raise
        span.set_attribute("http.response.status_code", response.status)
        span.set_attribute(
            "ragtrim.upstream.headers_ms", round((time.perf_counter() - sent_at) * 1000, 3)
        )
        return TracedResponse(response, span, sent_at)

    async def aclose(self) -> None:
        await self.inner.aclose()


class TracedRouter:
    def __init__(self, inner: Any, tracing: Tracing):
        self.inner = inner
        self.tracing = tracing

    def rank(self, ctx: Any, endpoints: Sequence[Any]) -> list[Any]:
        """A span around the ranking; not made current (nothing inside makes spans)."""
        span = self.tracing.tracer.start_span("ragtrim.route")
        try:
            ranked = self.inner.rank(ctx, endpoints)
            span.set_attribute("ragtrim.route.candidates", len(endpoints))
            if ranked:
                span.set_attribute("ragtrim.route.backend", ranked[0].url)
            return ranked
        finally:
            span.end()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

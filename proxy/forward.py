"""Forwarding one OpenAI request: read, parse, run the pipeline, pick backends,
open upstream (failover before the first byte), relay the answer."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from proxy.context import RequestContext
from proxy.errors import PayloadTooLarge, UpstreamError
from proxy.metrics import Metrics
from proxy.pipeline import Pipeline
from proxy.protocol import parse_body
from proxy.relay import ClientDisconnected, RelayResponse, race_disconnect
from proxy.routing.endpoint import EndpointPool
from proxy.routing.router import Router, healthy_serving_model
from proxy.upstream import Opened, Upstream, forwardable, response_headers

UPSTREAM_PATHS = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"request body exceeds {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"request body exceeds {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


@dataclass
class Forwarder:
    pool: EndpointPool
    router: Router
    upstream: Upstream
    pipeline: Pipeline
    metrics: Metrics
    max_body_bytes: int

    async def handle(self, request: Request, route: str) -> Response | RelayResponse:
        raw = await read_body(request, self.max_body_bytes)
        body = parse_body(raw, route)
        request_id = request.headers.get("x-request-id") or uuid.uuid4().hex
        ctx = RequestContext(request_id, route, raw, body, dict(request.headers))
        await self.pipeline.run(ctx)
        ranked = self.router.rank(ctx, healthy_serving_model(self.pool, ctx.model))
        headers = forwardable(request.headers)
        opened = await self._open(request, ctx, ranked, headers)
        return await self._respond(request, ctx, opened)

    async def _open(self, request, ctx, ranked, headers) -> Opened:
        try:
            opened = await race_disconnect(
                request.receive,
                self.upstream.open_first(
                    ranked, "POST", UPSTREAM_PATHS[ctx.route], ctx.upstream_body(), headers
                ),
            )
        except ClientDisconnected:
            self.metrics.client_disconnects.labels("before_first_byte").inc()
            raise
        except UpstreamError as exc:
            self.metrics.upstream_errors.labels(ranked[-1].url, exc.kind).inc()
            raise
        if opened.endpoint is not ranked[0]:
            self.metrics.failovers.inc()
        opened.endpoint.in_flight += 1
        return opened

    def _headers(self, ctx: RequestContext, opened: Opened) -> list[tuple[str, str]]:
        out = response_headers(opened.response.headers)
        out.append(("x-request-id", ctx.request_id))
        out.append(("x-ragtrim-backend", opened.endpoint.url))
        out.extend(ctx.response_headers.items())
        return out

    async def _respond(self, request: Request, ctx: RequestContext, opened: Opened):
        response = opened.response
        sse = response.headers.get("content-type", "").startswith("text/event-stream")
        if sse:
            return RelayResponse(
                response.status_code,
                self._headers(ctx, opened),
                self._timed_chunks(opened),
                lambda error: self._close(opened, error),
                sse=True,
            )
        try:
            content = await race_disconnect(request.receive, self._read_all(opened))
        except ClientDisconnected:
            self.metrics.client_disconnects.labels("before_first_byte").inc()
            raise
        finally:
            await self._close(opened, None)
        return Response(content, response.status_code, headers=dict(self._headers(ctx, opened)))

    async def _read_all(self, opened: Opened) -> bytes:
        return b"".join([chunk async for chunk in self._timed_chunks(opened)])

    async def _timed_chunks(self, opened: Opened):
        first = True
        async for chunk in self.upstream.chunks(opened):
            if first:
                first = False
                self.metrics.upstream_ttft.labels(opened.endpoint.url).observe(
                    time.perf_counter() - opened.sent_at
                )
            yield chunk

    async def _close(self, opened: Opened, error: BaseException | None) -> None:
        opened.endpoint.in_flight -= 1
        if isinstance(error, ClientDisconnected):
            self.metrics.client_disconnects.labels("mid_stream").inc()
        elif isinstance(error, UpstreamError):
            self.metrics.upstream_errors.labels(opened.endpoint.url, error.kind).inc()
        await opened.response.aclose()

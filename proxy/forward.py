"""Forwarding one OpenAI request: read, parse, run the pipeline, rank backends,
open upstream (failover before the first byte), relay the answer, feed back usage."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from proxy.context import RequestContext
from proxy.errors import PayloadTooLarge, UpstreamError
from proxy.feedback import Feedback
from proxy.metrics import Metrics
from proxy.pipeline import Pipeline
from proxy.protocol import parse_body
from proxy.relay import ClientDisconnected, RelayResponse, race_disconnect
from proxy.routing.endpoint import EndpointPool
from proxy.routing.router import Router, healthy_serving_model
from proxy.upstream import Opened, Upstream, forwardable, response_headers
from proxy.usage import UsageTap, cached_tokens, usage_from_json

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


def ask_for_usage(ctx: RequestContext) -> bool:
    """Make a streamed request report usage; True when the client had not asked."""
    options = ctx.body.get("stream_options") or {}
    if not ctx.stream or options.get("include_usage"):
        return False
    ctx.set_body_field("stream_options", {**options, "include_usage": True})
    return True


@dataclass
class Forwarder:
    pool: EndpointPool
    router: Router
    upstream: Upstream
    pipeline: Pipeline
    metrics: Metrics
    feedback: Feedback
    max_body_bytes: int

    async def handle(self, request: Request, route: str) -> Response | RelayResponse:
        raw = await read_body(request, self.max_body_bytes)
        body = parse_body(raw, route)
        request_id = request.headers.get("x-request-id") or uuid.uuid4().hex
        ctx = RequestContext(request_id, route, raw, body, dict(request.headers))
        await self.pipeline.run(ctx)
        ranked = self.router.rank(ctx, healthy_serving_model(self.pool, ctx.model))
        strip_usage = ask_for_usage(ctx)
        opened = await self._open(request, ctx, ranked, forwardable(request.headers))
        if response_is_sse(opened):
            return self._stream(ctx, opened, UsageTap(strip_usage))
        return await self._whole(request, ctx, opened)

    async def _open(self, request, ctx, ranked, headers) -> Opened:
        path, body = UPSTREAM_PATHS[ctx.route], ctx.upstream_body()
        try:
            opened = await race_disconnect(
                request.receive, self.upstream.open_first(ranked, "POST", path, body, headers)
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

    def _stream(self, ctx: RequestContext, opened: Opened, tap: UsageTap) -> RelayResponse:
        async def on_close(error: BaseException | None) -> None:
            await self._close(opened, error)
            ttft = tap.first_chunk_at
            ttft_ms = (ttft - opened.sent_at) * 1000 if ttft and error is None else None
            if ttft_ms is not None:
                self.metrics.upstream_ttft.labels(opened.endpoint.url).observe(ttft_ms / 1000)
            self.feedback.observe(ctx, opened.endpoint.url, tap.usage, ttft_ms)

        status = opened.response.status_code
        return RelayResponse(status, self._headers(ctx, opened), self.upstream.chunks(opened),
                             on_close, sse=True, chunk_filter=tap)  # fmt: skip

    async def _whole(self, request: Request, ctx: RequestContext, opened: Opened) -> Response:
        try:
            content = await race_disconnect(request.receive, self._read_all(opened))
        except ClientDisconnected:
            self.metrics.client_disconnects.labels("before_first_byte").inc()
            raise
        finally:
            await self._close(opened, None)
        headers = self._headers(ctx, opened)
        if opened.response.status_code == 200:
            usage = usage_from_json(content)
            if usage is not None:
                headers.append(("x-ragtrim-cached-tokens", str(cached_tokens(usage))))
            self.feedback.observe(ctx, opened.endpoint.url, usage, None)
        return Response(content, opened.response.status_code, headers=dict(headers))

    async def _read_all(self, opened: Opened) -> bytes:
        return b"".join([chunk async for chunk in self.upstream.chunks(opened)])

    async def _close(self, opened: Opened, error: BaseException | None) -> None:
        opened.endpoint.in_flight -= 1
        if isinstance(error, ClientDisconnected):
            self.metrics.client_disconnects.labels("mid_stream").inc()
        elif isinstance(error, UpstreamError):
            self.metrics.upstream_errors.labels(opened.endpoint.url, error.kind).inc()
        await opened.response.aclose()


def response_is_sse(opened: Opened) -> bool:
    return opened.response.headers.get("content-type", "").startswith("text/event-stream")

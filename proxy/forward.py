"""Forwarding one request, as a straight line: read → parse → stages → rank →
exchange → respond → feed back. Pure ASGI: no framework Request object on the hot path.

The pass-through routes (the table in proxy/http/routes.py) take the same path with
route "other": no parsing, no stages. The upstream path is the table's, never the
client's bytes. The key is checked on the head, before the body is read and before
admission: an unauthenticated or stalled client holds no admission slot (issue 23).
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.types import Receive, Scope, Send

from proxy.admission import Admission
from proxy.context import RequestContext
from proxy.errors import InvalidRequest, PayloadTooLarge, ProxyError, ShuttingDown, UpstreamError
from proxy.feedback import Feedback
from proxy.metrics import Metrics
from proxy.pipeline import Pipeline, describe_error
from proxy.protocol import parse_body
from proxy.relay import ClientDisconnected, Reply, race_disconnect, relay_stream
from proxy.routing.endpoint import EndpointPool
from proxy.routing.router import Router
from proxy.settings import TimeoutSettings, UpstreamSettings
from proxy.upstream.exchange import Exchange
from proxy.upstream.headers import RawHeaders, upstream_request_headers
from proxy.upstream.transport import Transport
from proxy.usage import UsageTap, cached_tokens, sane_usage, usage_from_chunks

log = logging.getLogger("ragtrim.forward")
Result = tuple[UpstreamError | None, dict[str, Any] | None]


async def read_body(receive: Receive, declared: str | None, limit: int) -> bytes:
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"request body exceeds {limit} bytes")
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnected()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"request body exceeds {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body"):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


@dataclass
class Forwarder:
    pool: EndpointPool
    router: Router
    transport: Transport
    timeouts: TimeoutSettings
    pipeline: Pipeline
    metrics: Metrics
    feedback: Feedback
    admission: Admission
    authenticate: Callable[[dict[str, str]], str]  # the tenant stage's, for pass-through
    max_body_bytes: int
    log_prompts: bool
    upstream: UpstreamSettings  # response caps
    show_backend: bool  # x-ragtrim-backend on responses

    async def __call__(self, scope: Scope, receive: Receive, send: Send, route: str,
                       path: str) -> None:  # fmt: skip
        """`route` and `path` come from the route table (proxy/http/routes.py)."""
        reply = Reply(send)
        try:
            headers = head_headers(scope)
            tenant = self.authenticate(headers)  # on the head: 401 before the body is read
            raw = await read_body(receive, headers.get("content-length"), self.max_body_bytes)
            self.admission.enter()  # the body is in: a stalled client never holds a slot
            try:
                ctx = await self._prepare(route, raw, headers, tenant)
                await self._forward(ctx, scope, receive, reply, path)
            finally:
                self.admission.leave()
        except ClientDisconnected:
            pass  # counted where it was noticed; nobody is listening any more
        except ProxyError as exc:
            await reply.error(exc)
        except Exception as exc:  # a bug must still leave in the envelope, never as plain text
            detail = describe_error(exc, self.log_prompts)  # messages may quote prompts
            log.error("unexpected error forwarding %s: %s", scope.get("path"), detail,
                      exc_info=self.log_prompts)  # fmt: skip
            await reply.error(ProxyError("internal error in ragtrim"))

    async def _prepare(self, route: str, raw: bytes, headers: dict[str, str],
                       tenant: str) -> RequestContext:  # fmt: skip
        request_id = headers.get("x-request-id") or uuid.uuid4().hex
        if route == "other":  # relayed unchanged (the key was checked on the head)
            ctx = RequestContext(request_id, route, raw, {}, headers)
            ctx.tenant = tenant
            return ctx
        ctx = RequestContext(request_id, route, raw, parse_body(raw, route), headers)
        await self.pipeline.run(ctx)
        return ctx

    async def _forward(self, ctx: RequestContext, scope: Scope, receive: Receive,
                       reply: Reply, path: str) -> None:  # fmt: skip
        other = ctx.route == "other"
        ranked = self.admission.with_room(self.router.rank(ctx, self.pool.endpoints))
        tap = None if other else UsageTap(ctx.usage_added, self.upstream.max_sse_event_bytes)
        path = _with_query(path, scope.get("query_string") or b"") if other else path
        headers = upstream_request_headers(scope["headers"], scope.get("client"))
        ex = Exchange(self.transport, self.timeouts, self.metrics, scope["method"], path,
                      ctx.upstream_body(), headers)  # fmt: skip
        error: BaseException | None = None
        try:
            work = self._exchange(ctx, ex, ranked, reply, tap)
            error, usage = await race_disconnect(receive, work)
        except ClientDisconnected as exc:
            error = exc
            phase = "mid_stream" if reply.started else "before_first_byte"
            self.metrics.client_disconnects.labels(phase).inc()
            raise
        except asyncio.CancelledError as exc:  # the server stopping at its drain deadline
            error = exc
            if not reply.started:
                raise
            await reply.error(ShuttingDown("ragtrim is shutting down; stream cut"))
            asyncio.current_task().uncancel()  # ended cleanly: nothing left to cancel
            return
        except BaseException as exc:
            error = exc
            raise
        finally:
            await ex.close(error)
        if error is None and not other:
            self._observe(ctx, ex, usage)

    async def _exchange(self, ctx: RequestContext, ex: Exchange, ranked, reply: Reply,
                        tap: UsageTap | None) -> Result:  # fmt: skip
        await ex.open(ranked)
        assert ex.response is not None and ex.endpoint is not None
        ex.accept(None if tap is None else "sse" if ctx.stream else "json")  # else a 502
        headers = self._headers(ctx, ex)
        if ex.is_sse:
            await reply.start(ex.response.status, headers)
            error = await relay_stream(reply, ex.chunks(), tap, sse=True)
            if tap is not None and tap.bad:
                self.metrics.upstream_bad_usage.labels(ex.endpoint.url).inc(tap.bad)
            return error, tap.usage if tap is not None else None
        parts = await ex.read(self.upstream.max_response_bytes)
        usage = None
        if tap is not None and ex.response.status == 200:
            raw, _ = usage_from_chunks(parts)
            usage = sane_usage(raw)
            if usage is None and raw is not None:  # ignored, counted: never a 500
                self.metrics.upstream_bad_usage.labels(ex.endpoint.url).inc()
        if usage is not None:
            headers.append((b"x-ragtrim-cached-tokens", str(cached_tokens(usage)).encode()))
        await reply.parts(ex.response.status, headers, parts)
        return None, usage

    def _headers(self, ctx: RequestContext, ex: Exchange) -> RawHeaders:
        assert ex.response is not None and ex.endpoint is not None
        out = list(ex.response.headers)
        out.append((b"x-request-id", ctx.request_id.encode("latin-1")))
        if self.show_backend:  # tenancy.backend_header: off by default with tenants
            out.append((b"x-ragtrim-backend", ex.endpoint.url.encode("latin-1")))
        for name, value in ctx.response_headers.items():
            out.append((name.encode("latin-1"), value.encode("latin-1")))
        return out

    def _observe(self, ctx: RequestContext, ex: Exchange, usage: dict[str, Any] | None) -> None:
        assert ex.endpoint is not None
        url = ex.endpoint.url
        ttft_ms = ex.ttft_ms() if ctx.stream else None
        if ttft_ms is not None:
            self.metrics.upstream_ttft.labels(url).observe(ttft_ms / 1000)
            tpot = ex.tpot_s(int((usage or {}).get("completion_tokens") or 0))
            if tpot is not None:
                self.metrics.upstream_tpot.labels(url).observe(tpot)
        self.feedback.observe(ctx, url, usage, ttft_ms)


def head_headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}


_QUERY = re.compile(rb"[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*")


def _with_query(path: str, query: bytes) -> str:
    """The table's path plus the client's query, which may hold only the characters
    RFC 3986 §3.4 allows in a query (no `#`, no spaces, no control bytes)."""
    if not query:
        return path
    if not _QUERY.fullmatch(query):
        raise InvalidRequest("the query string holds characters a URL query may not")
    return path + "?" + query.decode("ascii")

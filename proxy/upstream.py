"""The upstream side: one shared httpx client, opening a request with failover,
and reading the body with idle and total deadlines.

Failover follows the router's ranking and happens only before the first byte
reaches the client: on connection errors, first-byte timeouts and 502/503/504.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx

from proxy.errors import UpstreamError, UpstreamTimeout, map_upstream_errors
from proxy.routing.endpoint import Endpoint
from proxy.settings import TimeoutSettings

HOP_BY_HOP = frozenset(
    {
        "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
        "trailer", "transfer-encoding", "upgrade", "host", "content-length",
    }
)  # fmt: skip
RETRY_STATUSES = frozenset({502, 503, 504})


# uvicorn writes its own; forwarding the backend's would duplicate them.
SERVER_SET = frozenset({"date", "server"})


def forwardable(headers: httpx.Headers | dict[str, str]) -> list[tuple[str, str]]:
    """Request headers worth forwarding upstream (hop-by-hop ones dropped)."""
    return [(k, v) for k, v in headers.items() if k.lower() not in HOP_BY_HOP]


def response_headers(headers: httpx.Headers) -> list[tuple[str, str]]:
    """Upstream response headers for the client."""
    return [(k, v) for k, v in forwardable(headers) if k.lower() not in SERVER_SET]


@dataclass
class Opened:
    """An upstream response whose headers have arrived; the body is still unread."""

    endpoint: Endpoint
    response: httpx.Response
    deadline: float
    sent_at: float


def make_transport(transport: httpx.AsyncBaseTransport | None = None):
    """One connection pool per app, shared by the relay and the health checks."""
    if transport is not None:
        return transport
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=512)
    return httpx.AsyncHTTPTransport(limits=limits, retries=0)


def make_client(timeouts: TimeoutSettings, transport: httpx.AsyncBaseTransport):
    """For health checks and warm-up; it never stores cookies (a proxy must not)."""
    timeout = httpx.Timeout(
        connect=timeouts.connect, read=None, write=timeouts.connect, pool=timeouts.connect
    )
    jar = CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))
    return httpx.AsyncClient(transport=transport, timeout=timeout, cookies=jar)


class Upstream:
    """The relay talks to the transport directly: no cookie jar (cookies must not leak
    between clients), no redirects, no auth layer — and less work per request."""

    def __init__(self, transport: httpx.AsyncBaseTransport, timeouts: TimeoutSettings):
        self.transport = transport
        self.timeouts = timeouts
        c = timeouts.connect
        self._timeout_ext = {"connect": c, "read": None, "write": c, "pool": c}

    async def open(
        self, ep: Endpoint, method: str, path: str, body: bytes, headers: list[tuple[str, str]]
    ) -> Opened:
        start = time.perf_counter()
        request = httpx.Request(
            method, ep.url + path, content=body, headers=headers,
            extensions={"timeout": self._timeout_ext},
        )  # fmt: skip
        with map_upstream_errors(ep.url, "before first byte"):
            async with asyncio.timeout(self.timeouts.first_byte):
                response = await self.transport.handle_async_request(request)
        return Opened(ep, response, start + self.timeouts.total, start)

    async def open_first(
        self,
        ranked: Sequence[Endpoint],
        method: str,
        path: str,
        body: bytes,
        headers: list[tuple[str, str]],
    ) -> Opened:
        """Try endpoints in rank order until one answers with a non-retryable status."""
        last: UpstreamError | None = None
        for i, ep in enumerate(ranked):
            try:
                opened = await self.open(ep, method, path, body, headers)
            except UpstreamError as exc:
                ep.healthy = ep.healthy and not _is_connect_failure(exc)
                last = exc
                continue
            if opened.response.status_code in RETRY_STATUSES and i + 1 < len(ranked):
                await opened.response.aclose()
                continue
            return opened
        assert last is not None
        raise last

    async def chunks(self, opened: Opened) -> AsyncIterator[bytes]:
        """Raw body chunks as they arrive, under the idle and total deadlines."""
        iterator = opened.response.aiter_raw().__aiter__()
        idle = self.timeouts.idle
        while True:
            remaining = opened.deadline - time.perf_counter()
            if remaining <= 0:
                raise UpstreamTimeout(f"backend {opened.endpoint.url} timed out (total)")
            with map_upstream_errors(opened.endpoint.url, "mid-stream"):
                try:
                    async with asyncio.timeout(min(idle, remaining)):
                        chunk = await iterator.__anext__()
                except StopAsyncIteration:
                    return
            yield chunk


def _is_connect_failure(exc: UpstreamError) -> bool:
    return isinstance(exc.__cause__, httpx.ConnectError)

"""One request's exchange with the backends, from the first send to the last byte.
proxy/response/path.py drives it; the response hooks read it (backend, status, chunk
times, usage), as mitmproxy's addons read a flow.

    ex = Exchange(transport, timeouts, metrics, method, path, body, headers)
    try:
        await ex.open(ranked)          # failover walk; in-flight slot taken before sending
        async for chunk in ex.chunks():  # or: await ex.read()
            ...
    finally:
        await ex.close(error)          # the one place everything is released

- The endpoint's in-flight count rises *before* the request is sent (a non-streamed
  request's headers arrive only after the whole generation: counting from then on
  would hide it from the load scorer and the bounded-load picker).
- Failover walks the ranked replicas only before the first byte reaches the client:
  on connection failures and 502/503/504 answers. A replica that refuses connections
  is marked unhealthy at once (the health checks bring it back). A first-byte
  timeout is a 504 at once, never retried elsewhere: the request may well be running
  on that replica (vLLM sends no headers before a non-streamed answer is complete),
  and retrying would multiply the work across replicas. Closing the connection
  makes vLLM abort it.
- Deadlines: `first_byte` until the response headers, `idle` between two chunks,
  `total` for the whole exchange. A non-streamed generation (`whole_answer`) waits
  for its headers up to `total`: vLLM sends them only once the whole answer is
  ready, and a long generation on a slow backend is not a hung one.
- Timestamps of the first and last body chunk give TTFT and TPOT (the response hooks,
  proxy/response/hooks.py, read them; nothing else records a first chunk).
- `accept` refuses answers ragtrim does not relay (answer.py: 5xx, 3xx, unknown
  statuses, a content type that does not match the request) as a 502, counted and
  logged; `read` holds a non-streamed body as its chunks, up to a cap.
- A shortage of ragtrim's own descriptors (EMFILE...) is a LocalResourceError: no
  failover, no ejection, counted apart (resources.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol

from proxy.errors import (
    LocalResourceError,
    ProxyError,
    UpstreamBadResponse,
    UpstreamError,
    UpstreamTimeout,
    UpstreamTooLarge,
)
from proxy.metrics import Metrics
from proxy.settings import TimeoutSettings
from proxy.upstream.answer import Expect, refusal
from proxy.upstream.headers import header_value
from proxy.upstream.transport import Transport, UpstreamResponse, upstream_errors

log = logging.getLogger("ragtrim.upstream")
RETRY_STATUSES = frozenset({502, 503, 504})


class Exchange:
    def __init__(
        self,
        transport: Transport,
        timeouts: TimeoutSettings,
        metrics: Metrics,
        method: str,
        path: str,
        body: bytes,
        headers: list[tuple[str, str]],
        whole_answer: bool = False,
    ):
        self.transport, self.timeouts, self.metrics = transport, timeouts, metrics
        self.head_timeout = timeouts.total_s if whole_answer else timeouts.first_byte_s
        self.method, self.path, self.body, self.headers = method, path, body, headers
        self.endpoint: Backend | None = None
        self.response: UpstreamResponse | None = None
        self._slot: Backend | None = None  # whose in-flight count this exchange holds
        self.sent_at = self.first_chunk_at = self.last_chunk_at = 0.0
        self._complete = False
        self.tap: ChunkFilter | None = None  # an SSE answer's filter (a response hook's)
        self.usage: dict[str, Any] | None = None  # vLLM's usage, when sane (a hook's)

    @property
    def url(self) -> str:
        assert self.endpoint is not None
        return self.endpoint.url

    @property
    def counted(self) -> bool:
        """Whether per-backend series may be recorded: not for a backend that left the
        pool meanwhile (its series were removed with it; recording would revive them)."""
        return self.endpoint is not None and not self.endpoint.left

    @property
    def status(self) -> int:
        assert self.response is not None
        return self.response.status

    @property
    def is_sse(self) -> bool:
        assert self.response is not None
        return header_value(self.response.headers, b"content-type").startswith(b"text/event-stream")

    async def open(self, ranked: Sequence[Backend]) -> None:
        """Send to the ranked endpoints in order until one answers for good."""
        last: UpstreamError | None = None
        for i, ep in enumerate(ranked):
            self._take(ep)
            try:
                response = await self._send(ep)
            except LocalResourceError:
                self.metrics.local_resource_errors.labels("upstream_connect").inc()
                raise
            except UpstreamError as exc:
                self._count_error(exc)
                self._give_back()
                if isinstance(exc, UpstreamTimeout):
                    raise
                if getattr(exc, "connect_failed", False):
                    ep.refuses()
                last = exc
                continue
            if response.status in RETRY_STATUSES and i + 1 < len(ranked):
                response.abort()
                self._give_back()
                continue
            self.response = response
            if response.status < 500:
                ep.passed()
            if i:
                self.metrics.failovers.inc()
            return
        assert last is not None, "open() needs at least one endpoint"
        raise last

    async def _send(self, ep: Backend) -> UpstreamResponse:
        self.sent_at = time.perf_counter()
        with upstream_errors(ep.url, "before first byte"):
            async with asyncio.timeout(self.head_timeout):
                return await self.transport.send(
                    self.method, ep.url + self.path, self.headers, self.body
                )

    async def chunks(self) -> AsyncIterator[bytes]:
        """Body chunks as they arrive, under the idle and total deadlines."""
        assert self.response is not None and self.endpoint is not None
        url, idle = self.endpoint.url, self.timeouts.idle_s
        deadline = self.sent_at + self.timeouts.total_s
        iterator = self.response.chunks().__aiter__()
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise UpstreamTimeout(f"backend {url} timed out (total)")
            with upstream_errors(url, "mid-stream"):
                try:
                    async with asyncio.timeout(min(idle, remaining)):
                        chunk = await iterator.__anext__()
                except StopAsyncIteration:
                    self._complete = True
                    return
            self.last_chunk_at = time.perf_counter()
            if not self.first_chunk_at:
                self.first_chunk_at = self.last_chunk_at
            yield chunk

    async def read(self, limit: int) -> list[bytes]:
        """The whole body as its chunks (never joined: one copy in memory), under the
        idle and total deadlines; more than `limit` bytes is a 502."""
        assert self.endpoint is not None
        parts, size = [], 0
        async for chunk in self.chunks():
            size += len(chunk)
            if size > limit:
                raise UpstreamTooLarge(f"backend sent a body over {limit} bytes")
            parts.append(chunk)
        return parts

    def accept(self, expect: Expect) -> None:
        """Raise a 502 for an answer ragtrim does not relay (answer.py); counted and
        logged with the backend's status and content type, its body never read."""
        assert self.response is not None and self.endpoint is not None
        ctype = header_value(self.response.headers, b"content-type")
        verdict = refusal(self.response.status, ctype, expect)
        if verdict is None:
            return
        reason, message = verdict
        if self.counted:
            self.metrics.upstream_bad_responses.labels(self.endpoint.url, reason).inc()
        log.warning(
            "backend %s answered HTTP %s (%s, expected %s): a 502 to the client",
            self.endpoint.url,
            self.response.status,
            ctype[:64],
            expect,
        )
        raise UpstreamBadResponse(message)

    def ttft_ms(self) -> float | None:
        return (self.first_chunk_at - self.sent_at) * 1000 if self.first_chunk_at else None

    def tpot_s(self, completion_tokens: int) -> float | None:
        """Seconds per output token after the first (streams only)."""
        if completion_tokens < 2 or self.last_chunk_at <= self.first_chunk_at:
            return None
        return (self.last_chunk_at - self.first_chunk_at) / (completion_tokens - 1)

    async def close(self, error: BaseException | None) -> None:
        """Release the connection (back to the pool only after a complete read) and the
        in-flight slot; count the failure, if any."""
        if self.response is not None:
            if self._complete and error is None:
                self.response.release()
            else:
                self.response.abort()
        if isinstance(error, UpstreamError) and self.response is not None:
            self._count_error(error)  # failures before the answer were counted in open()
        self._give_back()

    def _take(self, ep: Backend) -> None:
        self.endpoint = self._slot = ep
        ep.take()

    def _give_back(self) -> None:
        if self._slot is not None:
            self._slot.give_back()
            self._slot = None

    def _count_error(self, exc: ProxyError) -> None:
        if self.counted and isinstance(exc, UpstreamError):
            self.metrics.upstream_errors.labels(self.endpoint.url, exc.kind).inc()


class Backend(Protocol):
    """What an exchange needs of a backend: its address, whether it left the pool, its
    in-flight slot and its health verdicts (proxy/backends/endpoint.py `Endpoint` is the
    one implementation; upstream/ stays below backends/, which calls it for scrapes)."""

    url: str
    left: bool

    def take(self) -> None: ...

    def give_back(self) -> None: ...

    def refuses(self) -> None: ...

    def passed(self) -> None: ...


class ChunkFilter(Protocol):
    """Sees every chunk on its way out; may hold back a partial event until flush()."""

    def __call__(self, chunk: bytes) -> bytes: ...

    def flush(self) -> bytes: ...

"""Sending the upstream answer to the client, untouched, and noticing when the
client goes away.

- `race_disconnect` runs work while watching for `http.disconnect`: a client that
  leaves before the first upstream byte cancels the work, which closes the upstream
  connection, which makes vLLM abort the request.
- `RelayResponse` streams upstream chunks as they arrive (no buffering, no
  re-serialising) under the same watch; an upstream failure mid-stream ends an SSE
  stream with an error event instead of a silent truncation.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol, TypeVar

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from proxy.errors import ProxyError, UpstreamError

T = TypeVar("T")


class ChunkFilter(Protocol):
    """Sees every chunk on its way out; may hold back a partial event until flush()."""

    def __call__(self, chunk: bytes) -> bytes: ...

    def flush(self) -> bytes: ...


class ClientDisconnected(Exception):
    """The client closed the connection; nothing more can be sent."""


async def _until_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def race_disconnect(receive: Receive, work: Awaitable[T]) -> T:
    """Await `work` in this task unless the client disconnects first: a watcher task
    then cancels this task, and the cancellation closes whatever `work` had open
    (an upstream connection: vLLM sees the abort)."""
    current = asyncio.current_task()
    left = False

    async def watch() -> None:
        nonlocal left
        await _until_disconnect(receive)
        left = True
        current.cancel()

    watcher = asyncio.ensure_future(watch())
    try:
        return await work
    except asyncio.CancelledError:
        if not left:
            raise
        current.uncancel()
        raise ClientDisconnected() from None
    finally:
        watcher.cancel()


class RelayResponse(Response):
    """ASGI response streaming `chunks`; `on_close` always runs exactly once."""

    def __init__(
        self,
        status: int,
        headers: list[tuple[str, str]],
        chunks: AsyncIterator[bytes],
        on_close: Callable[[BaseException | None], Awaitable[None]],
        *,
        sse: bool,
        chunk_filter: ChunkFilter | None = None,
    ):
        self.status_code = status
        self.background = None
        self.raw_headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        self.chunks = chunks
        self.on_close = on_close
        self.sse = sse
        self.chunk_filter = chunk_filter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        error: BaseException | None = None
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": self.raw_headers,
                }
            )
            await race_disconnect(receive, self._pump(send))
        except BaseException as exc:  # noqa: BLE001 - recorded, then re-raised below
            error = exc
            if not isinstance(exc, ClientDisconnected | OSError | UpstreamError):
                raise
        finally:
            await self.on_close(error)

    async def _pump(self, send: Send) -> None:
        try:
            async for chunk in self.chunks:
                if self.chunk_filter is not None:
                    chunk = self.chunk_filter(chunk)
                if chunk:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except UpstreamError as exc:
            if self.sse:
                await send(
                    {"type": "http.response.body", "body": exc.sse_event(), "more_body": True}
                )
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            raise
        tail = self.chunk_filter.flush() if self.chunk_filter is not None else b""
        await send({"type": "http.response.body", "body": tail, "more_body": False})


async def send_error(send: Send, exc: ProxyError, extra: dict[str, Any] | None = None) -> None:
    headers = [(b"content-type", b"application/json")]
    for k, v in (extra or {}).items():
        headers.append((k.encode(), str(v).encode()))
    await send({"type": "http.response.start", "status": exc.status, "headers": headers})
    await send({"type": "http.response.body", "body": exc.body()})

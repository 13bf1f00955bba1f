"""Sending the answer to the client, untouched, and noticing when the client goes away.

- `race_disconnect` runs work while watching for `http.disconnect`: a client that
  leaves cancels the work (before the first byte or mid-stream), which closes the
  upstream connection, which makes vLLM abort the request. One watcher per request.
- `Reply` writes ASGI messages and remembers whether the response has started (after
  that, an error can only end the stream, never become a status code).
- `relay_stream` forwards chunks as they arrive (no buffering, no re-serialising); an
  upstream failure mid-stream is raised, and `Reply.error` ends the started SSE stream
  with an error event instead of a silent truncation.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

from starlette.types import Receive, Send

from proxy.errors import ProxyError
from proxy.upstream.exchange import ChunkFilter
from proxy.upstream.headers import RawHeaders

T = TypeVar("T")
_JSON = (b"content-type", b"application/json")


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
    assert current is not None
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


class Reply:
    def __init__(self, send: Send):
        self.send = send
        self.started = False

    async def start(self, status: int, headers: RawHeaders) -> None:
        self.started = True
        await self.send({"type": "http.response.start", "status": status, "headers": headers})

    async def body(self, chunk: bytes, more: bool) -> None:
        await self.send({"type": "http.response.body", "body": chunk, "more_body": more})

    async def whole(self, status: int, headers: RawHeaders, body: bytes) -> None:
        headers.append((b"content-length", str(len(body)).encode()))
        await self.start(status, headers)
        await self.body(body, False)

    async def parts(self, status: int, headers: RawHeaders, parts: list[bytes]) -> None:
        """A whole body sent as the chunks it was read in: never joined into a second
        copy (a non-streamed answer can be up to max_response_bytes)."""
        headers.append((b"content-length", str(sum(map(len, parts))).encode()))
        await self.start(status, headers)
        for chunk in parts[:-1]:
            await self.body(chunk, True)
        await self.body(parts[-1] if parts else b"", False)

    async def error(self, exc: ProxyError, headers: RawHeaders | None = None) -> None:
        """The error in the OpenAI envelope: as the response when none has started,
        else as a final SSE event (the OpenAI SDK raises on `error`)."""
        if self.started:
            await self.body(exc.sse_event(), False)
            return
        await self.whole(exc.status, [_JSON, *exc.headers(), *(headers or [])], exc.body())


async def relay_stream(
    reply: Reply, chunks: AsyncIterator[bytes], chunk_filter: ChunkFilter | None
) -> None:
    """Relay every chunk as it arrives. A failure mid-stream is raised, like any
    other: whoever answers it ends the stream with an error event (`Reply.error`)."""
    async for chunk in chunks:
        if chunk_filter is not None:
            chunk = chunk_filter(chunk)
        if chunk:
            await reply.body(chunk, True)
    await reply.body(chunk_filter.flush() if chunk_filter is not None else b"", False)

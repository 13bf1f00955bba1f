"""Small ASGI upstreams with one behaviour each, served by tests/support/servers.py
(unit tests only; the general-purpose fake is tests/doubles/stub_vllm.py)."""

from __future__ import annotations

import asyncio
import json
import threading
import time

MODELS = json.dumps({"object": "list", "data": [{"id": "stub-model"}]}).encode()
ANSWER = json.dumps({"choices": [{"message": {"content": "ok"}}], "usage": {}}).encode()


async def _drain(receive) -> None:
    while (await receive()).get("more_body"):
        pass


async def _json(send, status: int, body: bytes, headers=()) -> None:
    head = [(b"content-type", b"application/json"), *headers]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


class Backend:
    """Answers /v1/models at once and completions with `complete`; subclasses vary one."""

    health_delay = 0.0

    def __init__(self) -> None:
        self.completions = 0

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        await _drain(receive)
        if scope["method"] == "GET":
            await asyncio.sleep(self.health_delay)
            await _json(send, 200, MODELS)
            return
        self.completions += 1
        await self.complete(send)

    async def complete(self, send) -> None:
        await _json(send, 200, ANSWER)


class SlowHealth(Backend):
    """Answers health checks at once until `slow()`; then slower than any check's
    timeout, while completions still succeed (a busy vLLM)."""

    def slow(self) -> None:
        self.health_delay = 3.0


class RateLimited(Backend):
    async def complete(self, send) -> None:
        error = {"error": {"message": "slow down", "type": "rate_limit_error"}}
        await _json(send, 429, json.dumps(error).encode(), [(b"retry-after", b"7")])


class GatedStream(Backend):
    """SSE: sends its second event only once `release` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    async def complete(self, send) -> None:
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"data: one\n\n", "more_body": True})
        while not self.release.is_set():
            await asyncio.sleep(0.01)
        await send({"type": "http.response.body", "body": b"data: two\n\n"})


class BigStream(Backend):
    """SSE of `chunks` events of `size` bytes each, as fast as the socket takes them
    (the first request gets one event: a warm-up)."""

    def __init__(self, chunks: int, size: int) -> None:
        super().__init__()
        self.chunks, self.size = chunks, size
        self.sent = 0

    async def complete(self, send) -> None:
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        event = b"data: " + b"x" * self.size + b"\n\n"
        for _ in range(self.chunks if self.completions > 1 else 1):
            await send({"type": "http.response.body", "body": event, "more_body": True})
            self.sent += 1
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})


class WaitsForDisconnect(Backend):
    """Never answers a completion; records when the proxy closes the connection."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.closed = threading.Event(), threading.Event()
        self.closed_at = 0.0

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "POST":
            await _drain(receive)
            self.started.set()
            while (await receive())["type"] != "http.disconnect":
                pass
            self.closed_at = time.monotonic()
            self.closed.set()
            return
        await super().__call__(scope, receive, send)

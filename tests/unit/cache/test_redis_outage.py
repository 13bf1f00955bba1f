"""RedisStore through a hung, dead and restarted redis-server: every call bounded by
its timeout, then served by the in-process fallback, until the probe sees Redis back."""

import asyncio
import time

import pytest

from cache.store import RedisStore
from tests.support.redis_server import RedisServer
from tests.support.servers import free_port
from tests.support.waiting import until

pytestmark = pytest.mark.integration  # a real Redis server


async def timed(coro) -> tuple[object, float]:
    start = time.perf_counter()
    value = await coro
    return value, (time.perf_counter() - start) * 1000


def test_hung_then_dead_then_restarted():
    server = RedisServer(free_port()).start()
    errors: list[str] = []

    async def scenario():
        store = RedisStore(server.url, timeout=0.1, retry_after=0.2,
                           on_error=lambda op, exc: errors.append(op))  # fmt: skip
        try:
            await store.set("a", b"1")
            assert await store.get("a") == b"1" and not errors

            server.pause()
            value, first_ms = await timed(store.get("a"))
            assert value is None and first_ms < 100 + 60  # the timeout bounds the wait
            await store.set("b", b"2")  # goes to the fallback at once
            value, then_ms = await timed(store.get("b"))
            assert value == b"2" and then_ms < 5
            assert errors == ["get"] and store.outage.down

            server.kill()
            await store.hincr("h", {"n": 2})
            assert await store.hgetall("h") == {"n": "2.0"}  # fallback's hash
            assert errors == ["get"]  # while down, no call waits for Redis

            server.start()  # same port, empty
            await until(lambda: not store.outage.down, 5.0, "the probe seeing Redis back")
            await store.set("c", b"3")
            assert await store.get("c") == b"3" and await store.get("b") is None  # Redis's
            assert errors == ["get"] and store.outage.outages == 1
        finally:
            await store.aclose()

    try:
        asyncio.run(scenario())
    finally:
        server.kill()


def test_refused_connection_fails_fast():
    errors: list[str] = []

    async def scenario():
        store = RedisStore(f"redis://127.0.0.1:{free_port()}/0", timeout=0.5,
                           on_error=lambda op, exc: errors.append(op))  # fmt: skip
        _, ms = await timed(store.get("k"))
        await store.aclose()
        return ms

    assert asyncio.run(scenario()) < 100 and errors == ["get"]

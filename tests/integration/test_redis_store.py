"""RedisStore against the real Redis on 127.0.0.1:6379, and its fail-open outage path
(in-process fallback: tests/unit/cache/test_redis_outage.py)."""

import asyncio
import uuid

import pytest

from cache.memo import ChunkMemo, MemoEntry
from cache.store import RedisStore
from tests.support.servers import free_port

pytestmark = pytest.mark.integration
REDIS = "redis://127.0.0.1:6379/0"


def test_roundtrip_shared_between_two_clients():
    async def scenario():
        prefix = f"ragtrim-test-{uuid.uuid4().hex}:"
        a, b = RedisStore(REDIS, prefix=prefix), RedisStore(REDIS, prefix=prefix)
        try:
            memo = ChunkMemo(a)
            await memo.put(memo.keys("fp", ["doc"], None, ""), [MemoEntry("d", 3, 1)])
            assert await ChunkMemo(b).lookup("fp", ["doc", "x"], None) == [
                MemoEntry("d", 3, 1), None,
            ]  # fmt: skip
            await a.zincr("hot", "k", 2)
            await a.hincr("h", {"n": 1.5})
            assert await b.ztop("hot", 5) == ["k"]
            assert await b.hgetall("h") == {"n": "1.5"}
        finally:
            await a.client.delete(*[f"{prefix}{k}" for k in ("hot", "h")])
            await a.aclose()
            await b.aclose()

    asyncio.run(scenario())


def test_outage_reads_as_miss_and_is_counted():
    errors = []

    async def scenario():
        store = RedisStore(
            f"redis://127.0.0.1:{free_port()}/0", on_error=lambda op, exc: errors.append(op)
        )
        await store.set("k", b"v")  # fails, counted; from now on the fallback answers
        assert await store.get_many(["k", "x"]) == [b"v", None]
        assert await store.ztop("hot", 3) == []
        await store.aclose()

    asyncio.run(scenario())
    assert errors == ["set"]  # while down, nothing waits for Redis (tests/unit/cache)

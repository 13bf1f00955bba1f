"""Bounded memory in the stores (issue 23): the in-process store is capped in bytes,
every Redis key ragtrim writes expires, and the hot set is trimmed."""

import asyncio

import pytest

from cache.memo import ChunkMemo, MemoEntry
from cache.prefixes import HOT, PrefixRegistry
from cache.store import MemoryStore, RedisStore
from tests.support.redis_server import RedisServer
from tests.support.servers import free_port

MB = 1 << 20


def test_unique_megabyte_values_stay_under_the_byte_cap():
    """400 unique 1 MB replay bodies grew RSS by 380 MB under a 100,000-item cap."""

    async def main():
        store = MemoryStore(max_bytes=16 * MB)
        for i in range(400):
            await store.set(f"prefix:replay:{i}", bytes(MB), ttl=3600)
        assert store.lru.total <= 16 * MB
        assert sum(len(v) for v, _ in store._data.values()) <= 16 * MB
        assert await store.get("prefix:replay:0") is None  # least recently used went first
        assert await store.get("prefix:replay:399") == bytes(MB)

    asyncio.run(main())


def test_hashes_and_sorted_sets_count_against_the_cap():
    async def main():
        store = MemoryStore(max_bytes=256 * 1024)
        registry = PrefixRegistry(store, hot_keep=10)
        for i in range(5000):
            await registry.record(f"{i:064x}", model="m", replica="http://r:8000",
                                  prompt_tokens=10, cached_tokens=0)  # fmt: skip
        assert store.lru.total <= 256 * 1024
        assert len(store._hashes) < 5000 and len(store._zsets.get(HOT, {})) <= 20

    asyncio.run(main())


def test_the_hot_set_keeps_its_most_requested_members():
    async def main():
        store = MemoryStore()
        for i in range(100):
            for _ in range(i):
                await store.zincr(HOT, f"k{i}", keep=5)
        assert len(store._zsets[HOT]) <= 10
        assert await store.ztop(HOT, 5) == ["k99", "k98", "k97", "k96", "k95"]

    asyncio.run(main())


def test_a_value_over_the_cap_is_not_kept():
    async def main():
        store = MemoryStore(max_bytes=1024)
        await store.set("small", b"x")
        await store.set("huge", bytes(4096))
        assert await store.get("huge") is None and store.lru.total <= 1024

    asyncio.run(main())


@pytest.mark.integration
def test_every_redis_key_ragtrim_writes_has_a_ttl():
    server = RedisServer(free_port()).start()
    try:
        asyncio.run(_write_and_check(server.url))
    finally:
        server.kill()


async def _write_and_check(url: str) -> None:
    store = RedisStore(url, timeout=1.0)
    registry = PrefixRegistry(store, ttl=600, hot_keep=3)
    try:
        for i in range(10):
            await registry.record(f"key{i}", model="m", replica="r", prompt_tokens=1,
                                  cached_tokens=0)  # fmt: skip
            await registry.remember_replay(f"key{i}", {"model": "m"})
        memo = ChunkMemo(store, ttl=600)
        await memo.put(memo.keys("fp", ["doc"], None), [MemoEntry("d", 1, 1)])
        keys = [k async for k in store.client.scan_iter("ragtrim:*")]
        assert len(keys) == 10 + 10 + 1 + 1  # hashes, replays, memo, hot set
        ttls = [await store.client.pttl(k) for k in keys]
        assert all(ttl > 0 for ttl in ttls), dict(zip(keys, ttls, strict=True))  # -1: none
        assert await store.client.zcard("ragtrim:" + HOT) <= 6
    finally:
        await store.aclose()

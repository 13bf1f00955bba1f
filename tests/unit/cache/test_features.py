"""FeatureCache: byte-capped LRU in front of the shared store, tenant-scoped keys."""

import asyncio

from cache.features import FeatureCache, feature_key
from cache.lru import ValueLRU
from cache.store import MemoryStore


def test_lru_evicts_by_bytes_least_recent_first():
    lru = ValueLRU(10)
    lru.put("a", b"xxxx")
    lru.put("b", b"yyyy")
    assert lru.get("a") == b"xxxx"  # a is now the most recent
    lru.put("c", b"zzzz")  # 12 bytes > 10: b goes
    assert lru.get("b") is None and lru.get("a") and lru.get("c") and lru.bytes == 8
    lru.put("big", b"0" * 11)  # over the whole cap: never kept
    assert lru.get("big") is None and lru.bytes == 8
    lru.put("a", b"x")  # replacing counts the difference
    assert lru.bytes == 5


def test_tiers_counts_and_tenants():
    events = []

    async def scenario():
        store = MemoryStore()
        one = FeatureCache(store, on_lookup=lambda r, n: events.append((r, n)))
        two = FeatureCache(store)  # another worker or replica: same store, own LRU
        await one.put_many("fp", {"doc": b"features"}, tenant="A")
        assert await one.get_many("fp", ["doc", "other"], "A") == [b"features", None]
        assert await two.get_many("fp", ["doc"], "A") == [b"features"]  # from the store
        assert len(two.local) == 1  # and now local
        assert await two.get_many("fp", ["doc"], "B") == [None]  # never another tenant's
        assert await two.get_many("fp2", ["doc"], "A") == [None]  # nor another fingerprint

    asyncio.run(scenario())
    assert events == [("local", 1), ("miss", 1)]
    assert feature_key("fp", "d", "A") != feature_key("fp", "d", "B") != feature_key("fp", "d")
    assert "secret" not in feature_key("fp", "secret") and "A" not in feature_key("f", "d", "A")

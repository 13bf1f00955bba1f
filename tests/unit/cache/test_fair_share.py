"""Per-tenant fair shares of the in-process caches (issue 33, item 7): one tenant's
flood of unique documents evicts its own entries, never another tenant's warm ones."""

import asyncio

from cache.features import FeatureCache
from cache.keys import memo_key, owner_of, tenant_tag
from cache.lru import ByteLRU
from cache.memo import ChunkMemo, MemoEntry
from cache.store import MemoryStore

KB = 1024


def test_the_owner_of_a_key_is_its_tenant_tag():
    assert owner_of(memo_key("fp", "doc", None, "alpha")) == tenant_tag("alpha")
    assert owner_of(memo_key("fp", "doc", None)) == ""  # no tenancy: no tag
    assert owner_of("prefix:replay:abc") == "" and owner_of("quota:x:y") == ""


def test_the_heaviest_owner_is_evicted_first():
    lru = ByteLRU(100, owner=lambda k: k[0])
    lru.set("b1", 20)
    lru.set("b2", 20)
    for i in range(50):  # a flood: always the most recent, yet it evicts only itself
        assert all(k.startswith("a") for k in lru.set(f"a{i}", 10))
    assert lru.size("b1") == 20 and lru.size("b2") == 20
    assert lru.owned("a") == 60 and lru.total == 100
    assert lru.size("a49") == 10 and lru.size("a0") == 0  # its own oldest went


def test_alone_an_owner_may_use_the_whole_cap():
    lru = ByteLRU(100, owner=lambda k: k[0])
    for i in range(10):
        lru.set(f"a{i}", 10)
    assert lru.total == 100 and lru.size("a0") == 10


def test_the_item_cap_is_shared_by_count():
    lru = ByteLRU(1 << 30, owner=lambda k: k[0], max_items=10)
    lru.set("b1", 1000)  # a big warm entry of b's
    for i in range(100):  # a's flood of tiny items
        lru.set(f"a{i}", 1)
    assert lru.size("b1") == 1000 and len(lru) == 10


def test_a_flood_in_the_memory_store_leaves_another_tenants_memo_warm():
    """Before issue 33: one LRU order; the flood of alpha's unique documents (always the
    most recent) evicted every one of beta's entries."""

    async def main():
        store = MemoryStore(max_bytes=256 * KB)
        memo = ChunkMemo(store, ttl=3600)
        warm = [f"beta document {i} " * 20 for i in range(20)]
        entries = [MemoEntry(d[:50], 100, 50) for d in warm]
        await memo.put(memo.keys("fp", warm, None, "beta"), entries)
        for i in range(2000):  # ~1.2 MB of alpha's unique documents
            doc = f"alpha flood {i} " * 30
            await memo.put(memo.keys("fp", [doc], None, "alpha"), [MemoEntry(doc, 100, 50)])
        assert await memo.lookup("fp", warm, None, tenant="beta") == entries
        assert store.lru.total <= 256 * KB

    asyncio.run(main())


def test_a_flood_in_the_feature_cache_leaves_another_tenants_features_warm():
    async def main():
        cache = FeatureCache(None, max_bytes=64 * KB)
        warm = {f"beta doc {i}": bytes(500) for i in range(20)}
        await cache.put_many("fp", warm, tenant="beta")
        for i in range(500):
            await cache.put_many("fp", {f"alpha doc {i}": bytes(500)}, tenant="alpha")
        found = await cache.get_many("fp", list(warm), tenant="beta")
        assert all(v is not None for v in found)
        assert cache.local.bytes <= 64 * KB

    asyncio.run(main())

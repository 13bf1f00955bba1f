import asyncio

from cache.keys import content_key, memo_key
from cache.memo import ChunkMemo, MemoEntry
from cache.prefixes import PrefixRegistry
from cache.store import MemoryStore


def run(coro):
    return asyncio.run(coro)


def test_content_key_is_unambiguous_and_stable():
    assert content_key("ab", "c") != content_key("a", "bc")
    assert content_key("x") == content_key("x")
    assert memo_key("fp", "doc", None) != memo_key("fp", "doc", "q")


def test_memory_store_lru_and_ttl():
    async def scenario():
        store = MemoryStore(max_items=2)
        await store.set("a", b"1")
        await store.set("b", b"2")
        await store.get("a")  # a is now most recent
        await store.set("c", b"3")
        assert await store.get_many(["a", "b", "c"]) == [b"1", None, b"3"]
        await store.set("t", b"x", ttl=0.01)
        await asyncio.sleep(0.02)
        assert await store.get("t") is None

    run(scenario())


def test_memo_roundtrip_and_question_scoping():
    async def scenario():
        memo = ChunkMemo(MemoryStore())
        entry = MemoEntry("short", 10, 4)
        await memo.put(memo.keys("fp", ["long doc"], None, ""), [entry])
        assert await memo.lookup("fp", ["long doc", "other"], None) == [entry, None]
        assert await memo.lookup("fp2", ["long doc"], None) == [None]
        assert await memo.lookup("fp", ["long doc"], "q?") == [None]

    run(scenario())


def test_prefix_registry_hot_list():
    async def scenario():
        reg = PrefixRegistry(MemoryStore())
        for key, n in (("k1", 3), ("k2", 5), ("k3", 1)):
            for _ in range(n):
                await reg.record(key, model="m", replica="r", prompt_tokens=10, cached_tokens=5)
        await reg.remember_replay("k1", {"model": "m"})
        await reg.remember_replay("k2", {"model": "m2"})
        assert [k for k, _ in await reg.hot(3)] == ["k2", "k1"]
        stats = await reg.stats("k2")
        assert float(stats["requests"]) == 5 and float(stats["cached_tokens"]) == 25
        assert float(stats["replica:r"]) == 5

    run(scenario())

"""Store writes off the request path (cache/writes.py) and the memo's read-back of its
own writes while they are in flight (cache/memo.py `put_later`)."""

import asyncio

from cache.memo import ChunkMemo, MemoEntry
from cache.store import MemoryStore


class HeldStore(MemoryStore):
    """A MemoryStore whose writes wait for the test (or fail, when told)."""

    def __init__(self):
        super().__init__()
        self.release = asyncio.Event()
        self.fail = False

    async def set_many(self, items, ttl=None):
        await self.release.wait()
        if self.fail:
            raise ConnectionError("the store went away")
        await super().set_many(items, ttl)


def test_an_entry_put_later_is_read_back_before_and_after_it_lands():
    async def scenario():
        store = HeldStore()
        memo, entry = ChunkMemo(store), MemoEntry("kept", 10, 4)
        memo.put_later(["k"], [entry])
        assert await memo.get(["k", "other"]) == [entry, None]  # in flight: from the process
        assert await store.get_many(["k"]) == [None] and len(memo.writes) == 1
        store.release.set()
        await memo.writes.drain()
        assert len(memo.writes) == 0 and not memo._landing
        assert await ChunkMemo(store).get(["k"]) == [entry]  # landed: any process reads it

    asyncio.run(scenario())


def test_a_failed_write_is_dropped_and_reads_as_a_miss_after():
    async def scenario():
        store = HeldStore()
        store.fail = True
        memo = ChunkMemo(store)
        memo.put_later(["k"], [MemoEntry("kept", 10, 4)])
        store.release.set()
        await memo.writes.drain()  # raises nothing
        assert await memo.get(["k"]) == [None]

    asyncio.run(scenario())

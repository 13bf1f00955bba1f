"""The simulated replica's prefix cache emits what vLLM's BlockPool emits, and ragtrim's
index, fed those events, holds exactly the blocks the replica holds."""

from __future__ import annotations

import msgspec

from proxy.routing.kv.chain import chain, request_extras
from proxy.routing.kv.events import decode_batch
from proxy.routing.kv.index import KvIndex
from tests.doubles.kv_publisher import AllBlocksCleared, BlockRemoved, BlockStored, EventBatch
from tests.doubles.kv_replica import FLEET_PRESETS, EventedPrefixCache, KvScheduler

TOKENS = list(range(1000, 1000 + 16 * 5 + 3))  # 5 full blocks and a partial one


def applied(index: KvIndex, events: list) -> None:
    """Through the wire format, as the subscriber receives them."""
    payload = msgspec.msgpack.encode(EventBatch(1.0, events, 0))
    index.apply("r", decode_batch(payload).events)


def test_stored_blocks_carry_tokens_parent_and_salt():
    cache = EventedPrefixCache(16, 100)
    assert cache.admit(TOKENS, "tenant-a") == 0
    (first,) = cache.take_events()
    assert isinstance(first, BlockStored) and first.parent_block_hash is None
    assert first.token_ids == TOKENS[:80] and first.block_size == 16 and first.medium == "GPU"
    assert first.extra_keys == [("tenant-a",), None, None, None, None]
    longer = TOKENS + list(range(40))
    assert cache.admit(longer, "tenant-a") == 80
    (second,) = cache.take_events()
    assert second.parent_block_hash == first.block_hashes[-1]
    assert second.token_ids == longer[80:112] and second.extra_keys == [None, None]


def test_ragtrims_index_follows_the_cache_salt_included():
    cache, index = EventedPrefixCache(16, 100), KvIndex()
    cache.admit(TOKENS, "tenant-a")
    applied(index, cache.take_events())
    state = index.backend("r")
    assert state.leading(chain(TOKENS, 16, request_extras("tenant-a"))) == 5
    assert state.leading(chain(TOKENS, 16)) == 0


def test_eviction_emits_block_removed():
    cache, index = EventedPrefixCache(16, 6), KvIndex()
    cache.admit(TOKENS)
    applied(index, cache.take_events())
    other = list(range(5000, 5000 + 16 * 3))
    cache.admit(other)
    events = cache.take_events()
    removed = [e for e in events if isinstance(e, BlockRemoved)]
    assert len(removed) == 2 and all(len(e.block_hashes) == 1 for e in removed)
    assert isinstance(events[-1], BlockStored)  # vLLM evicts while allocating, then caches
    applied(index, events)
    state = index.backend("r")
    assert state.leading(chain(TOKENS, 16)) == 0  # its first two blocks are gone
    assert state.leading(chain(other, 16)) == 3


def test_hits_emit_nothing_and_reset_clears():
    scheduler = KvScheduler(FLEET_PRESETS["8b-h100"].law, 100)
    scheduler.cache.admit(TOKENS)
    scheduler.cache.take_events()
    scheduler.cache.admit(TOKENS)
    assert scheduler.cache.take_events() == []

    class Sink:
        batches: list = []

        def publish(self, events, ts=None):
            self.batches.append(events)

    scheduler.publisher = Sink()
    scheduler.reset()
    assert Sink.batches == [[AllBlocksCleared()]]


def test_presets_state_their_capacity():
    for preset in FLEET_PRESETS.values():
        assert 15_000 < preset.capacity_blocks < 35_000 and preset.gpus in (1, 2, 4)

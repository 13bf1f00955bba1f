"""The KV index: chained keys from events, removals, clears, orphans, the LRU cap."""

from __future__ import annotations

import tracemalloc

import pytest

from proxy.routing.kv.chain import block_hash, chain, request_extras
from proxy.routing.kv.events import AllBlocksCleared, BlockRemoved, BlockStored
from proxy.routing.kv.index import BYTES_PER_BLOCK, KvIndex

URL = "http://a:8000"
B = 4


def stored(hashes, tokens, parent=None, extras=None) -> BlockStored:
    return BlockStored(list(hashes), parent, list(tokens), B, "GPU", None, extras, 0)


def test_chain_matches_what_events_build():
    tokens = list(range(10))
    index = KvIndex()
    index.apply(URL, [stored([b"x1", b"x2"], tokens[:8])])
    ours = chain(tokens, B)
    assert len(ours) == 2  # the partial block has no hash
    assert index.backend(URL).leading(ours) == 2


def test_a_later_event_chains_from_its_parent():
    tokens = list(range(12))
    index = KvIndex()
    index.apply(URL, [stored([b"x1"], tokens[:4])])
    index.apply(URL, [stored([b"x2", b"x3"], tokens[4:12], parent=b"x1")])
    assert index.backend(URL).leading(chain(tokens, B)) == 3


def test_unknown_parent_is_an_orphan_and_not_indexed():
    orphans = []
    index = KvIndex(on_orphan=orphans.append)
    index.apply(URL, [stored([b"x2"], range(4, 8), parent=b"missing")])
    assert len(index.backend(URL)) == 0 and orphans == [1]


def test_salt_separates_tenants():
    tokens = list(range(8))
    index = KvIndex()
    index.apply(URL, [stored([b"x1", b"x2"], tokens, extras=[["salt-a"], None])])
    state = index.backend(URL)
    assert state.leading(chain(tokens, B, request_extras("salt-a"))) == 2
    assert state.leading(chain(tokens, B, request_extras("salt-b"))) == 0
    assert state.leading(chain(tokens, B)) == 0


def test_removal_stops_the_leading_run_and_clear_empties():
    tokens = list(range(12))
    index = KvIndex()
    index.apply(URL, [stored([b"x1", b"x2", b"x3"], tokens)])
    index.apply(URL, [BlockRemoved([b"x2"], "GPU")])
    state = index.backend(URL)
    assert state.leading(chain(tokens, B)) == 1
    index.apply(URL, [AllBlocksCleared()])
    assert len(state) == 0 and state.leading(chain(tokens, B)) == 0


def test_removal_on_another_medium_keeps_the_block():
    tokens = list(range(4))
    index = KvIndex()
    index.apply(URL, [stored([b"x1"], tokens), BlockStored([b"x1"], None, tokens, B, "CPU")])
    index.apply(URL, [BlockRemoved([b"x1"], "CPU")])
    assert index.backend(URL).leading(chain(tokens, B)) == 1


def test_lru_cap_evicts_the_oldest_and_counts():
    evicted = []
    index = KvIndex(max_blocks=2, on_evict=evicted.append)
    index.apply(URL, [stored([b"x1"], range(4))])
    index.apply(URL, [stored([b"y1"], range(100, 104))])
    index.apply(URL, [stored([b"x1"], range(4))])  # re-stored: most recent again
    index.apply(URL, [stored([b"z1"], range(200, 204))])
    state = index.backend(URL)
    assert len(state) == 2 and evicted == [1]
    assert state.leading(chain(list(range(4)), B)) == 1
    assert state.leading(chain(list(range(100, 104)), B)) == 0


def test_forget_and_reset():
    index = KvIndex()
    index.apply(URL, [stored([b"x1"], range(4))])
    index.reset(URL)
    assert len(index.backend(URL)) == 0
    index.forget(URL)
    assert index.backend(URL) is None


def test_other_groups_are_ignored():
    index = KvIndex()
    index.apply(URL, [BlockStored([b"x1"], None, list(range(4)), B, "GPU", group_idx=1)])
    assert len(index.backend(URL)) == 0


def test_bytes_per_block_is_an_upper_bound():
    n = 20_000
    index = KvIndex(max_blocks=n)
    events = [
        stored([bytes(32 - 8) + i.to_bytes(8, "big")], range(i * B, (i + 1) * B)) for i in range(n)
    ]  # fmt: skip (each its own first block: no parent)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    index.apply(URL, events)
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del events
    assert len(index.backend(URL)) == n
    assert used / n <= BYTES_PER_BLOCK, used / n


def test_block_hash_is_stable_across_processes():
    # a fixed value: a change of the hash is a change of every index's keys
    assert block_hash(None, [1, 2, 3, 4]) == block_hash(None, (1, 2, 3, 4))
    assert block_hash(None, [1, 2, 3, 4], ["s"]) != block_hash(None, [1, 2, 3, 4])
    assert block_hash(None, [1, 2, 3, 4], []) == block_hash(None, [1, 2, 3, 4], None)


def test_cap_must_be_positive():
    with pytest.raises(ValueError):
        KvIndex(max_blocks=0)


def test_a_cleared_cache_has_room_again():
    index = KvIndex(clock=lambda: 100.0)
    index.reset(URL).synced = True
    index.apply(URL, [BlockRemoved(["gone"], "GPU")])
    assert index.roomy([URL], 60.0) == set()
    index.apply(URL, [AllBlocksCleared()])
    assert index.roomy([URL], 60.0) == {URL}


def test_leading_counts_from_the_first_block_to_the_first_miss():
    tokens = list(range(16))
    index = KvIndex()
    index.apply(URL, [stored([b"x1", b"x2", b"x3", b"x4"], tokens)])
    state, ours = index.backend(URL), chain(tokens, B)
    assert state.leading(ours) == 4 and state.leading(ours[:2]) == 2 and state.leading([]) == 0
    assert state.leading([*ours[:3], 12345, ours[3]]) == 3
    assert state.leading([12345, *ours]) == 0

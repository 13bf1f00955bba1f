"""The index figures an operator sizes ragtrim by, at a fleet's scale (issue 30, part 5).

Fed by the simulated replicas' own events (kv_replica.EventedPrefixCache, through the
wire format and ragtrim's decoder), `replicas` backends each filled to the preset's
capacity: the index's bytes a block (tracemalloc), the kv scorer's lookup per request
(the request's chain hashes, then its leading blocks on every backend: the work
KvCacheScorer.shares does under the index lock; a 6k-token prompt one replica holds),
and the consumer's CPU per 1,000 events and per 1,000 blocks (decode + apply, thread
CPU time, without the ZMQ receive; a BlockStored carries a request's new blocks, 375
for a fresh 6k-token prompt, a BlockRemoved one).
"""

from __future__ import annotations

import random
import statistics
import time
import tracemalloc

import msgspec

from proxy.routing.kv.chain import chain
from proxy.routing.kv.events import decode_batch
from proxy.routing.kv.index import KvIndex
from tests.doubles.kv_publisher import EventBatch
from tests.doubles.kv_replica import EventedPrefixCache

BLOCK = 16


def _payloads(capacity: int, context_tokens: int, seed: int) -> tuple[list[bytes], list]:
    """One replica's event batches until its cache is full (then evicting a little)."""
    rng, cache = random.Random(seed), EventedPrefixCache(BLOCK, capacity)
    payloads, prompts = [], []
    while len(cache._blocks) < capacity or len(prompts) < 4:
        tokens = [rng.randrange(1, 49_000) for _ in range(context_tokens)]
        prompts.append(tokens)
        cache.admit(tokens)
        payloads.append(msgspec.msgpack.encode(EventBatch(time.time(), cache.take_events(), 0)))
    return payloads, prompts


def _apply(index: KvIndex, feeds: list[list[bytes]]) -> tuple[int, int]:
    """(events, blocks) applied: every replica's batches, decoded by ragtrim."""
    events = blocks = 0
    for r, payloads in enumerate(feeds):
        for payload in payloads:
            batch = decode_batch(payload)
            index.apply(f"http://r{r}", batch.events)
            events += len(batch.events)
            blocks += sum(len(getattr(e, "block_hashes", ())) for e in batch.events)
    return events, blocks


def measure(replicas: int, capacity: int, context_tokens: int = 6000) -> dict:
    made = [_payloads(capacity, context_tokens, r) for r in range(replicas)]
    feeds, prompts = [p for p, _ in made], made[-1][1]
    tracemalloc.start()  # memory in one pass; CPU in another (tracemalloc slows it)
    before = tracemalloc.get_traced_memory()[0]
    held = KvIndex(max_blocks=capacity * 2)
    _apply(held, feeds)
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    index, start = KvIndex(max_blocks=capacity * 2), time.thread_time()
    events, blocks = _apply(index, feeds)
    cpu_ms = (time.thread_time() - start) * 1000
    urls = [f"http://r{r}" for r in range(replicas)]
    lookups = []
    for tokens in prompts[-4:] * 25:
        start = time.perf_counter()
        hashes = chain(tokens, BLOCK)
        with index.lock:
            for url in urls:
                index.backend(url).leading(hashes)
        lookups.append((time.perf_counter() - start) * 1e6)
    return {
        "kv_index_blocks": index.blocks(), "replicas": replicas, "blocks_per_replica": capacity,
        "kv_index_bytes_per_block": round(used / max(1, held.blocks()), 1),
        "kv_lookup_us_per_request_p50": round(statistics.median(lookups), 1),
        "kv_lookup_request_tokens": context_tokens,
        "kv_consumer_cpu_ms_per_1k_events": round(cpu_ms / events * 1000, 2),
        "kv_consumer_cpu_ms_per_1k_blocks": round(cpu_ms / blocks * 1000, 2),
        "events": events, "event_blocks": blocks,
    }  # fmt: skip

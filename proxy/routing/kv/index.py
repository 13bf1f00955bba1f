"""What each backend holds in its prefix cache, from its KV events, bounded in memory.

Per backend: vLLM's block hash (random per process, scoped to the medium) -> ragtrim's
chain hash (proxy/routing/kv/chain.py), in LRU order, and a count per chain hash (one
chain hash may be held under two vLLM hashes, e.g. on two media). `BlockStored` chains
from its parent: the parent's vLLM hash is looked up here, so a block whose parent is
unknown (evicted from this index, or a missed event) cannot be keyed and is skipped
(counted as an orphan). `BlockRemoved` drops the mapping; `AllBlocksCleared`, a
restarted process or a backend leaving drops all of that backend's blocks.

Memory: at most `max_blocks` blocks per backend; past it the least recently stored one
goes first (a re-stored block, vLLM's emit_cached_block_events on a cache hit, moves
to the back). `BYTES_PER_BLOCK` is measured on CPython 3.11 (tests/unit/proxy/routing/
kv/test_index.py checks it with tracemalloc): an OrderedDict entry with a bytes key of
32 bytes (vLLM's sha256 block hash) and an int value, plus a dict entry with a count.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import takewhile
from typing import Any

from proxy.routing.kv.chain import block_hash
from proxy.routing.kv.events import AllBlocksCleared, BlockRemoved, BlockStored, Event

BYTES_PER_BLOCK = 400  # an upper bound: 196 measured (bench.lib.prefix_kv.index_bytes_per_block)
SLICE_BLOCKS = 2_000  # blocks applied per hold of the lock (a few ms of hashing)


@dataclass
class BackendBlocks:
    """One backend's blocks. `block_size` is learned from its events."""

    block_size: int = 0
    by_vllm: OrderedDict[tuple[Any, Any], int] = field(default_factory=OrderedDict)
    held: dict[int, int] = field(default_factory=dict)
    synced: bool = False  # events are flowing in order (no unresolved gap)
    last_event: float = 0.0  # monotonic time of the last batch applied
    evicted_at: float | None = None  # monotonic time of the last BlockRemoved (None: never)

    def __len__(self) -> int:
        return len(self.by_vllm)

    def add(self, key: tuple[Any, Any], ours: int) -> None:
        if key in self.by_vllm:
            self.by_vllm.move_to_end(key)
            return
        self.by_vllm[key] = ours
        self.held[ours] = self.held.get(ours, 0) + 1

    def drop(self, key: tuple[Any, Any]) -> bool:
        ours = self.by_vllm.pop(key, None)
        if ours is None:
            return False
        left = self.held[ours] - 1
        if left:
            self.held[ours] = left
        else:
            del self.held[ours]
        return True

    def evict_oldest(self) -> None:
        self.drop(next(iter(self.by_vllm)))

    def leading(self, hashes: Sequence[int]) -> int:
        """How many of `hashes`, from the first, this backend holds."""
        if not hashes or hashes[0] not in self.held:
            return 0  # most backends, for most requests
        return len(list(takewhile(self.held.__contains__, hashes)))  # a C loop


class KvIndex:
    """Backends' blocks by URL. The subscribers' threads change it holding `lock`
    (proxy/routing/kv/subscriber.py), a batch in `slices` of at most SLICE_BLOCKS blocks,
    the lock let go between them. The event loop reads it without the lock: each read
    is one dict lookup, atomic under the GIL, so the loop never waits on an apply. A
    reader may see a batch in part: a prefix of its events, in order, as if the rest had
    not arrived yet."""

    def __init__(
        self,
        max_blocks: int = 262_144,
        *,
        on_orphan: Callable[[int], None] | None = None,
        on_evict: Callable[[int], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        if max_blocks <= 0:
            raise ValueError("max_blocks must be > 0")
        self.max_blocks = max_blocks
        self.backends: dict[str, BackendBlocks] = {}
        self.on_orphan, self.on_evict, self.clock = on_orphan, on_evict, clock
        self.lock = threading.Lock()

    def backend(self, url: str) -> BackendBlocks | None:
        return self.backends.get(url)

    def blocks(self) -> int:
        # list(): one C call, so a subscriber's thread adding a backend cannot interleave
        return sum(len(b) for b in list(self.backends.values()))

    def roomy(self, urls: Iterable[str], window: float) -> set[str]:
        """Those of `urls` in sync that evicted nothing for `window` seconds: their
        caches have room, so blocks stored there now evict nothing."""
        now = self.clock()
        states = [(url, self.backends.get(url)) for url in urls]  # no lock: see the class
        return {
            url
            for url, st in states
            if st is not None
            and st.synced
            and (st.evicted_at is None or now - st.evicted_at > window)
        }

    def reset(self, url: str) -> BackendBlocks:
        """Forget `url`'s blocks (a restart, a clear, a resubscription); keep it known."""
        fresh = BackendBlocks()
        self.backends[url] = fresh
        return fresh

    def forget(self, url: str) -> None:
        """`url` left discovery: drop it and its blocks."""
        self.backends.pop(url, None)

    def apply(self, url: str, events: Sequence[Event]) -> None:
        state = self.backends.get(url)
        if state is None:  # not `or`: an empty BackendBlocks is falsy
            state = self.reset(url)
        for event in events:
            if isinstance(event, BlockStored):
                self._stored(state, event)
            elif isinstance(event, BlockRemoved):
                state.evicted_at = self.clock()
                for h in event.block_hashes:
                    state.drop((event.medium, h))
            elif isinstance(event, AllBlocksCleared):
                state.by_vllm.clear()
                state.held.clear()
                state.evicted_at = None  # an empty cache has room again
        state.last_event = self.clock()

    def _stored(self, state: BackendBlocks, event: BlockStored) -> None:
        if event.group_idx not in (None, 0) or event.block_size <= 0:
            return  # another KV-cache group (hybrid models): not the prefix we route on
        parent: int | None = None
        if event.parent_block_hash is not None:
            parent = state.by_vllm.get((event.medium, event.parent_block_hash))
            if parent is None:
                if self.on_orphan is not None:
                    self.on_orphan(len(event.block_hashes))
                return
        size, extras = event.block_size, event.extra_keys or []
        state.block_size = size
        for i, vllm_hash in enumerate(event.block_hashes):
            tokens = event.token_ids[i * size : (i + 1) * size]
            if len(tokens) < size:
                break
            parent = block_hash(parent, tokens, extras[i] if i < len(extras) else None)
            state.add((event.medium, vllm_hash), parent)
        self._bound(state)

    def _bound(self, state: BackendBlocks) -> None:
        over = len(state) - self.max_blocks
        for _ in range(max(over, 0)):
            state.evict_oldest()
        if over > 0 and self.on_evict is not None:
            self.on_evict(over)


def slices(events: Sequence[Event], blocks: int = SLICE_BLOCKS) -> Iterator[list[Event]]:
    """`events` in order, in lists of at most `blocks` blocks (an event bigger than that
    cut into events of its own), so that applying the lists one after the other gives
    what applying `events` whole gives."""
    part: list[Event] = []
    room = blocks
    for event in events:
        for piece in _pieces(event, blocks):
            n = _size(piece)
            if n > room and part:
                yield part
                part, room = [], blocks
            part.append(piece)
            room -= n
    if part:
        yield part


def _size(event: Event) -> int:
    return len(event.block_hashes) if isinstance(event, BlockStored | BlockRemoved) else 1


def _pieces(event: Event, blocks: int) -> Iterator[Event]:
    """`event`, or its blocks `blocks` at a time, each stored piece chained to the last
    block of the one before (the index keys a stored block by its parent's hash)."""
    if _size(event) <= blocks:
        yield event
        return
    assert isinstance(event, BlockStored | BlockRemoved)
    for at in range(0, len(event.block_hashes), blocks):
        hashes = event.block_hashes[at : at + blocks]
        if isinstance(event, BlockRemoved):
            yield replace(event, block_hashes=hashes)
            continue
        size, extras = event.block_size, event.extra_keys
        parent = event.block_hashes[at - 1] if at else event.parent_block_hash
        yield replace(
            event,
            block_hashes=hashes,
            parent_block_hash=parent,
            token_ids=event.token_ids[at * size : (at + blocks) * size],
            extra_keys=extras[at : at + blocks] if extras else extras,
        )

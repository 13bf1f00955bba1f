"""How many requests a prefix serves, learned from the chains ragtrim routes.

The `cost` picker (proxy/routing/kv/cost.py) prices the blocks a replica lacks as the
prefill they take. On a replica with room (no eviction within ROOM_WINDOW_S) that
prefill is paid once and every later request sharing the prefix is served from there:
copying one application's system prompt to an idle replica is an investment that
spreads the application's conversations, copying one conversation's history to
another replica only moves the conversation. Priced alike, a system prompt first
stored on one replica kept every new conversation there while others sat idle
(bench.fleet's one-application regime: 3 of 8 replicas never served, max/mean load
2.4). When one replica holds each, the two look alike; the chains they sit on do not:

- every turn of a conversation extends its history the same way, so each history
  block has one child;
- the requests that share a system prompt (or a tenant's documents) diverge right
  after it, so its last block has as many children as conversations (the branch of
  SGLang's radix tree, which llm-d's precise scorer indexes too).

So a block's reuse is the largest fan-out at or below it in the request's chain: a
branch point below block i means that many distinct requests went through block i.

A second home pays only while the prefix's traffic is more than its holders' fair
share: one application's system prompt carries every request and 3 of 8 replicas hold
it, so a copy spreads the load; one of 40 tenants' contexts carries 1/40 of the
requests and one replica holding it is already more than enough (copying 6k-token
contexts on every short queue cut the simulated shared-context fleet's hit ratio to
0.949 from 0.995, p90 TTFT 46.4 ms against 36.1, 8 replicas). So a block i is priced

    block_size / reuse(i)    where traffic(i) × candidates > holders(i)
    block_size               elsewhere

`traffic(i)`, the share of the requests routed since block i was first seen that
went through it, is counted here too.

Only every STRIDE-th block of a chain is tracked (each chain hash commits to all the
tokens before it, so the sampled hashes are a chain too): a segment of STRIDE blocks
gets its last block's reuse, and the blocks after the last whole segment are priced
in full. A branch is seen once requests run a whole segment past it (one
application's turns of ~400 tokens do; a 30-token question after a tenant's context
does not, and is not worth a copy either). Tracking every block added 0.67 ms to the
kv_cache score of a 6k-token request against 16 replicas (0.97 ms without it);
every 8th adds 0.16 ms.

Fan-outs are counted up to MAX_FANOUT (a prefix shared that widely is priced at
1/MAX_FANOUT of its prefill) and kept for the `max_blocks` most recently routed
blocks (an LRU). State is per ragtrim process, like the in-flight counts: a worker
learns from the requests it routes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from itertools import zip_longest

MAX_FANOUT = 32
STRIDE = 8  # blocks a segment: 128 tokens at vLLM's default block size


def sampled(hashes: Sequence[int]) -> Sequence[int]:
    """The last block hash of each whole segment."""
    return hashes[STRIDE - 1 :: STRIDE]


class Reuse:
    """Per block hash, for the most recently routed `max_blocks`: its distinct
    children, the request count when it was first seen, and the requests through it."""

    def __init__(self, max_blocks: int = 65_536):
        if max_blocks <= 0:
            raise ValueError("max_blocks must be > 0")
        self.max_blocks = max_blocks
        self.blocks: OrderedDict[int, list] = OrderedDict()  # [children, first, through]
        self.requests = 0

    def profile(self, hashes: Sequence[int]) -> tuple[list[int], list[float]]:
        """Each block's reuse (>= 1: the largest fan-out at or below it) and traffic (the
        share of requests since it was first seen that went through it), one lookup a
        block (every request pays it)."""
        entries = list(map(self.blocks.get, hashes))
        out, widest = [1] * len(entries), 1
        for i in range(len(entries) - 1, -1, -1):
            widest = max(widest, _fanout(entries[i]))
            out[i] = widest
        return out, [_share(entry, self.requests) for entry in entries]

    def learn(self, hashes: Sequence[int]) -> None:
        """Count one request through the chain (after pricing it)."""
        blocks, now = self.blocks, self.requests
        for block, child in zip_longest(hashes, hashes[1:]):  # the last has no child
            entry = blocks.get(block)
            if entry is None:
                entry = blocks[block] = [None, now, 0]  # new: already the most recent
            else:
                blocks.move_to_end(block)
            entry[2] += 1
            if child is not None:
                _add_child(entry, child)
        self.requests += 1
        while len(self.blocks) > self.max_blocks:
            self.blocks.popitem(last=False)


def _fanout(entry: list | None) -> int:
    if entry is None or entry[0] is None:
        return 0
    return len(entry[0]) if isinstance(entry[0], set) else 1


def _share(entry: list | None, requests: int) -> float:
    return 0.0 if entry is None else entry[2] / max(1, requests - entry[1])


def _add_child(entry: list, child: int) -> None:
    kids = entry[0]
    if kids is None or kids == child:
        entry[0] = child
    elif isinstance(kids, set):
        if len(kids) < MAX_FANOUT:
            kids.add(child)
    else:
        entry[0] = {kids, child}


class Prices:
    """One request's chain priced for the candidates that lack part of it: a block of
    segment j at `units[j]` tokens, a block after the last whole segment in full."""

    def __init__(self, units: Sequence[float], blocks: int, block_size: int):
        self.units, self.blocks, self.size = units, blocks, block_size
        self.suffix = [0.0] * (len(units) + 1)  # suffix[j]: segments j.. and the tail
        self.suffix[-1] = (blocks - len(units) * STRIDE) * block_size
        for j in range(len(units) - 1, -1, -1):
            self.suffix[j] = self.suffix[j + 1] + units[j] * STRIDE

    def missing(self, leading: int) -> float:
        """The prefill tokens of the blocks from `leading` (those held) on."""
        j = -(-leading // STRIDE)  # the first segment with none of its blocks held
        if j > len(self.units):
            return max(0, self.blocks - leading) * self.size
        started = (j * STRIDE - leading) * self.units[j - 1] if leading % STRIDE else 0.0
        return self.suffix[j] + started


def prices(
    reuse: Reuse, hashes: Sequence[int], leading: Sequence[int], block_size: int, candidates: int
) -> Prices:
    """The chain `hashes` priced: a segment is worth a second home while its traffic
    share × `candidates` exceeds the candidates holding it whole (`leading`: the
    blocks each candidate at this block size holds)."""
    marks = sampled(hashes)
    holders = [0] * (len(marks) + 1)  # holders[j]: candidates holding j segments or more
    for n in leading:
        holders[min(len(marks), n // STRIDE)] += 1
    for j in range(len(marks) - 1, -1, -1):
        holders[j] += holders[j + 1]
    shared, traffic = reuse.profile(marks)
    units = [
        block_size / shared[j] if traffic[j] * candidates > holders[j + 1] else block_size
        for j in range(len(marks))
    ]
    return Prices(units, len(hashes), block_size)

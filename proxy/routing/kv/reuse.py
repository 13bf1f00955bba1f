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

    priced(blocks i..B-1) = Σ block_size / reuse(j), j ≥ i

Fan-outs are counted up to MAX_FANOUT (a prefix shared that widely is priced at
1/MAX_FANOUT of its prefill) and kept for the `max_blocks` most recently routed
blocks (an LRU; ~100 B a block with one child). State is per ragtrim process, like
the in-flight counts: a worker learns from the requests it routes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

MAX_FANOUT = 32


class Reuse:
    """Distinct children per block hash, for the most recently routed `max_blocks`."""

    def __init__(self, max_blocks: int = 65_536):
        if max_blocks <= 0:
            raise ValueError("max_blocks must be > 0")
        self.max_blocks = max_blocks
        self.children: OrderedDict[int, int | set[int]] = OrderedDict()

    def fanout(self, block: int) -> int:
        kids = self.children.get(block)
        if kids is None:
            return 0
        return len(kids) if isinstance(kids, set) else 1

    def reuse(self, hashes: Sequence[int]) -> list[int]:
        """Each block's reuse (>= 1): the largest fan-out at or below it."""
        out, widest = [0] * len(hashes), 1
        for i in range(len(hashes) - 1, -1, -1):
            widest = max(widest, self.fanout(hashes[i]))
            out[i] = widest
        return out

    def learn(self, hashes: Sequence[int]) -> None:
        """Record the chain's parent -> child edges (after pricing this request)."""
        for parent, child in zip(hashes, hashes[1:], strict=False):
            self._edge(parent, child)
        if hashes:
            self.children.setdefault(hashes[-1], set())  # a leaf so far: no child yet
            self.children.move_to_end(hashes[-1])
        while len(self.children) > self.max_blocks:
            self.children.popitem(last=False)

    def _edge(self, parent: int, child: int) -> None:
        kids = self.children.get(parent)
        if kids is None or kids == child:
            self.children[parent] = child
        elif isinstance(kids, set):
            if len(kids) < MAX_FANOUT:
                kids.add(child)
        else:
            self.children[parent] = {kids, child}
        self.children.move_to_end(parent)


def priced_suffixes(reuse: Sequence[int], block_size: int) -> list[float]:
    """suffix[i]: the prefill tokens of blocks i.. priced by reuse (suffix[len] = 0)."""
    out = [0.0] * (len(reuse) + 1)
    for i in range(len(reuse) - 1, -1, -1):
        out[i] = out[i + 1] + block_size / reuse[i]
    return out

"""The bounded-load picker with KV events: its floor scales with what a spill loses.

proxy/routing/bounded.py keeps a request on its first choice while that replica has
fewer than `min_in_flight` in flight, because a spill prefills the whole prefix again
elsewhere. With KV events ragtrim knows how much a spill loses, request by request:
the share of the request's blocks the first choice holds beyond what the best other
candidate holds (the `stake`, 0..1, from the kv_cache scorer). So

    floor = free + (held - free) × stake

`held` is routing.picker.min_in_flight (8, rendezvous' floor): a request whose blocks
sit only on its replica (a conversation's next turn, an application's prefix under
cache pressure) stays as under rendezvous. `free` is picker.spill_floor (3): a
request held as well elsewhere (a new conversation on a system prompt every replica
holds) loses nothing by spilling, so it spreads early.

Unless the next-best candidate (where a spill goes) has room: in sync and no eviction (BlockRemoved)
for ROOM_WINDOW_S. Then storing the spilled blocks there evicts nobody's, the spill
costs one prefill and buys the prefix a second home, so the floor is `free`. That is
one application's case (one system prompt, first stored on one replica), never cache
pressure's (every replica evicts).

A request the scorer could not score (no token ids, stale or cold: it fell back to
rendezvous affinity) gets `held`, rendezvous' floor, as it gets its scores.

Why, with the benchmarks: docs/decisions/0024-kv-event-routing.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from proxy.backends.endpoint import Endpoint
from proxy.routing.bounded import BoundedLoad
from proxy.routing.router import Cycle, StateKey

# A replica that evicted nothing for a minute has room: vLLM drops a cached block when
# it reuses it for a new one (vllm/v1/core/block_pool.py _maybe_evict_cached_block);
# a replica under cache pressure does that with every new prefix.
ROOM_WINDOW_S = 60.0


@dataclass(frozen=True)
class Held:
    """One request's leading-block share per in-sync candidate, those with room, the
    tokens each holds of it (leading blocks × block size), its length in tokens, and
    the tokens each lacks priced by their reuse (proxy/routing/kv/reuse.py)."""

    shares: dict[Endpoint, float]
    roomy: frozenset[Endpoint] = frozenset()
    tokens: dict[Endpoint, int] = field(default_factory=dict)
    total: int = 0
    priced: dict[Endpoint, float] = field(default_factory=dict)


HELD: StateKey[Held] = StateKey("kv_cache.held")  # written by the kv_cache scorer


def stake(shares: dict[Endpoint, float] | None, ranked: Sequence[Endpoint]) -> float | None:
    """The first choice's share beyond the best other's; None when it has no share."""
    if not shares or not ranked or ranked[0] not in shares:
        return None
    others = [shares.get(ep, 0.0) for ep in ranked[1:]]
    return max(0.0, shares[ranked[0]] - max(others, default=0.0))


class KvBoundedLoad:
    name = "bounded"

    def __init__(
        self,
        *,
        epsilon: float,
        held: int,
        free: int,
        on_spill: Callable[[Endpoint], None] | None = None,
    ):
        """`epsilon`, `held` (picker.min_in_flight) and `free` (picker.spill_floor)
        come from RoutingSettings, their one home."""
        if free < 0 or held < 0:
            raise ValueError("floors must be >= 0")
        self.epsilon = epsilon
        self.held, self.free = held, min(free, held)  # a floor set below 3 lowers both
        self.on_spill = on_spill

    def floor(self, share: float | None) -> int:
        if share is None:
            return self.held
        return round(self.free + (self.held - self.free) * share)

    def floor_for(self, held: Held | None, ranked: Sequence[Endpoint]) -> int:
        if held is not None and len(ranked) > 1 and ranked[1] in held.roomy:
            return self.free  # the spill would evict nothing there
        return self.floor(stake(held.shares if held else None, ranked))

    def order(self, cycle: Cycle) -> list[Endpoint]:
        floor = self.floor_for(cycle.read(HELD), cycle.by_total())
        picker = BoundedLoad(epsilon=self.epsilon, min_in_flight=floor, on_spill=self.on_spill)
        return picker.order(cycle)

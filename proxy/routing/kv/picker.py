"""The bounded-load picker with KV events: its floor scales with what a spill loses.

proxy/routing/bounded.py keeps a request on its first choice while that replica has
fewer than `min_in_flight` in flight, because a spill prefills the whole prefix again
elsewhere. With KV events ragtrim knows how much a spill loses, request by request:
the share of the request's blocks the first choice holds beyond what the best other
candidate holds (the `stake`, 0..1, from the kv_cache scorer). So

    floor = free + (held - free) × stake

`held` is routing.bounded_min_in_flight (8, rendezvous' floor): a request whose blocks
sit only on its replica (a conversation's next turn, an application's prefix under
cache pressure) stays as under rendezvous. `free` is kv_events.spill_floor (3): a
request held as well elsewhere (a new conversation on a system prompt every replica
holds) loses nothing by spilling, so it spreads early. Issue 20's first benchmark
had the fixed floor 3 for every request: under cache pressure kv spilled held
prefixes and hit 0.870 against rendezvous' 0.974 (bench/results/prefix_routing.json).

A request the scorer could not score (no token ids, stale or cold: it fell back to
rendezvous affinity) gets `held`, rendezvous' floor, as it gets its scores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from proxy.context import RequestContext
from proxy.routing.bounded import BoundedLoad
from proxy.routing.endpoint import Endpoint


class Stakes:
    """The kv_cache scorer's shares of the request being ranked, for the picker.

    Router.rank runs the scorers, then the picker, for one request without yielding
    the loop, so one slot suffices; it is keyed by the request context itself, so a
    picker never reads another request's shares, and read once."""

    def __init__(self) -> None:
        self._slot: tuple[RequestContext, dict[Endpoint, float] | None] | None = None

    def put(self, ctx: RequestContext, shares: dict[Endpoint, float] | None) -> None:
        self._slot = (ctx, shares)

    def take(self, ctx: RequestContext) -> dict[Endpoint, float] | None:
        slot, self._slot = self._slot, None
        return slot[1] if slot is not None and slot[0] is ctx else None


def stake(shares: dict[Endpoint, float] | None, ranked: Sequence[Endpoint]) -> float | None:
    """The first choice's share beyond the best other's; None when it has no share."""
    if not shares or not ranked or ranked[0] not in shares:
        return None
    others = [shares.get(ep, 0.0) for ep in ranked[1:]]
    return max(0.0, shares[ranked[0]] - max(others, default=0.0))


class KvBoundedLoad:
    name = "bounded"

    def __init__(self, stakes: Stakes, epsilon: float = 0.25, held: int = 8, free: int = 3,
                 on_spill: Callable[[Endpoint], None] | None = None):  # fmt: skip
        if free < 0 or held < 0:
            raise ValueError("floors must be >= 0")
        self.stakes, self.epsilon = stakes, epsilon
        self.held, self.free = held, min(free, held)  # a floor set below 3 lowers both
        self.on_spill = on_spill

    def floor(self, share: float | None) -> int:
        if share is None:
            return self.held
        return round(self.free + (self.held - self.free) * share)

    def order(
        self, ctx: RequestContext, totals: dict[Endpoint, float], endpoints: Sequence[Endpoint]
    ) -> list[Endpoint]:
        shares = self.stakes.take(ctx)
        ranked = sorted(endpoints, key=lambda ep: (-totals.get(ep, 0.0), ep.url))
        picker = BoundedLoad(self.epsilon, self.floor(stake(shares, ranked)), self.on_spill)
        return picker.order(ctx, totals, ranked)

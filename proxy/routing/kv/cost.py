"""The `cost` picker: each candidate's expected time to the first token, in prefill tokens.

"Most blocks wins" (the kv_cache score alone, with a load floor) sends every new
conversation of one application to the replica that first stored its system prompt:
that replica holds one block more than any other, and the bounded-load floor is not
reached at a handful of requests in flight (bench.prefix_routing's one-application
regime: all 144 requests on one replica, max/mean load 2.0). What a request waits
for on a replica is its queue plus the prefill of what that replica does not hold:

    cost(ep) = queue_tokens × in_flight(ep) + missing(ep) × 2      ep evicting
    cost(ep) = queue_tokens × in_flight(ep) + priced(ep)           ep with room

- `missing`: the request's tokens minus those whose blocks ep holds (leading blocks ×
  block size, the kv_cache scorer's, in the ranking's `Cycle`). Blocks every replica holds (a
  shared system prompt) are in every candidate's held part, so they do not decide;
  a conversation's own history does: it is held where its earlier turns ran.
- `queue_tokens` (routing.picker.queue_tokens): one request already in flight on ep, in
  the prefill tokens it delays this one by (its own uncached prefill and decode steps
  on the same engine). `in_flight` is this ragtrim's, a local signal that needs no
  coordination, as the `load` scorer's. So a replica far more loaded loses even with
  more blocks, and new conversations (equal `missing`) spread by load.
- `evicting`: a candidate without room (an eviction, BlockRemoved, within
  ROOM_WINDOW_S): the blocks it stores for this request evict others', whose next
  request prefills them again, about as many tokens. That keeps a held prefix home
  under cache pressure unless its replica is well ahead in load.
- `priced`: on a candidate with room, the missing tokens with each block shared by n
  requests (its chain's fan-out, proxy/routing/kv/reuse.py) at 1/n: stored there once,
  it serves the prefix's later requests without evicting anything. A system prompt
  that 30 conversations share costs an idle replica 1/30 of its prefill, so new
  conversations spread over the fleet; a conversation's own history (fan-out 1) costs
  its full prefill, so the next turn stays where its history is unless that replica
  is well ahead in load. Unpriced (no chain seen), `priced` is `missing`.

Equal costs keep the scorers' order (the kv_cache score's rendezvous tie term spreads
equal new conversations over replicas), then URL. The order is the failover order. A
request the kv_cache scorer could not score (no token ids, cold, every candidate
stale: no shares) gets the bounded-load picker with rendezvous' floor, as it gets
rendezvous' scores. A candidate without a share (stale events) counts as holding
nothing. A first choice by score that the costs move back counts as a spill
(ragtrim_route_spills_total{backend}).
"""

from __future__ import annotations

from collections.abc import Callable

from proxy.backends.endpoint import Endpoint
from proxy.routing.bounded import BoundedLoad
from proxy.routing.kv.picker import HELD, Held
from proxy.routing.router import Cycle


def expected_cost(ep: Endpoint, held: Held, queue_tokens: int) -> float:
    """Prefill-token equivalents until this request's first token on `ep`, a shared
    prefix's copy onto a replica with room amortized over the requests sharing it."""
    missing = max(0, held.total - held.tokens.get(ep, 0))
    prefill = min(missing, held.priced.get(ep, missing)) if ep in held.roomy else missing * 2
    return queue_tokens * max(ep.in_flight, 0) + prefill


class KvCostPicker:
    name = "cost"

    def __init__(
        self,
        *,
        queue_tokens: int,
        fallback: BoundedLoad,
        on_spill: Callable[[Endpoint], None] | None = None,
    ):
        """`queue_tokens` comes from PickerSettings.queue_tokens; `fallback` is the
        bounded-load picker of RoutingSettings (rendezvous' floor)."""
        if queue_tokens < 0:
            raise ValueError("queue_tokens must be >= 0")
        self.queue_tokens = queue_tokens
        self.fallback, self.on_spill = fallback, on_spill

    def order(self, cycle: Cycle) -> list[Endpoint]:
        held = cycle.read(HELD)
        if held is None or not held.total:
            return self.fallback.order(cycle)
        by_score = cycle.by_total()
        costs = {ep: expected_cost(ep, held, self.queue_tokens) for ep in by_score}
        ranked = sorted(by_score, key=costs.__getitem__)  # stable: the scorers' order on ties
        if ranked and ranked[0] is not by_score[0] and self.on_spill is not None:
            self.on_spill(by_score[0])
        return ranked

"""Bounded-load picker: consistent hashing with bounded loads (Mirrokni, Thorup and
Zadimoghaddam, 2018), the fix for prefix-affinity hotspots (vllm production-stack #957).

Candidates are ordered by weighted total, highest first, ties by URL (as HighestScore).
Then the bound is applied: with `total` requests in flight over the `n` candidates,
counting this one,

    bound = max(ceil((1 + epsilon) * total / n), min_in_flight)

and an endpoint whose `in_flight + 1` would exceed the bound moves behind every
endpoint within it; the relative order inside each group is kept. At least one
endpoint is always within the bound (the least loaded one), so the first choice is
never over it, and a hot prefix spills to its next-best backend instead of piling up.
The returned order is also the failover order.

The floor, `min_in_flight`: Mirrokni's bound alone spills at tiny loads (two replicas,
three requests in flight: ceil(1.25 × 4 / 2) = 3, so a prompt whose replica has three
goes to the other one). On vLLM that trade is a loss. Continuous batching (Orca, Yu et
al., OSDI 2022; vLLM's scheduler) runs every admitted request in the same forward
passes, and a decode step is memory-bound (the weights are read once per step for the
whole batch), so a handful of concurrent requests cost each about what one alone does;
requests that share the cached prefix need only their suffix prefilled. A spilled
request instead prefills its whole prefix on a replica that does not hold it and evicts
another prefix's blocks there, so the next request of that prefix misses too. Below the
floor (routing.picker.min_in_flight, default 8, far below the hundreds of
sequences vLLM batches by default, max_num_seqs) ragtrim keeps the prefix where it is
cached; above it the bound balances as in the paper. The floor trades balance for
hits: up to 8 requests may queue on one replica while another idles, which on a
compute-bound prefill (a CPU replica, long uncached suffixes) is a real wait; lower
it there.

A spill (the first choice by score was over the bound) calls `on_spill(endpoint)`
(ragtrim_route_spills_total{backend}).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from proxy.backends.endpoint import Endpoint
from proxy.routing.router import Cycle


def load_bound(in_flight: Sequence[int], epsilon: float, min_in_flight: int = 0) -> int:
    """ceil((1 + epsilon) * mean load once the new request is added), at least the floor."""
    total = sum(max(n, 0) for n in in_flight) + 1
    return max(math.ceil((1.0 + epsilon) * total / len(in_flight)), min_in_flight)


class BoundedLoad:
    name = "bounded"

    def __init__(
        self,
        *,
        epsilon: float,
        min_in_flight: int,
        on_spill: Callable[[Endpoint], None] | None = None,
    ):
        """`epsilon` and `min_in_flight` come from RoutingSettings, their one home."""
        if epsilon < 0:
            raise ValueError("epsilon must be >= 0")
        if min_in_flight < 0:
            raise ValueError("min_in_flight must be >= 0")
        self.epsilon = epsilon
        self.min_in_flight = min_in_flight
        self.on_spill = on_spill

    def order(self, cycle: Cycle) -> list[Endpoint]:
        ranked = cycle.by_total()
        if not ranked:
            return ranked
        bound = load_bound([ep.in_flight for ep in ranked], self.epsilon, self.min_in_flight)
        within = [ep for ep in ranked if ep.in_flight + 1 <= bound]
        over = [ep for ep in ranked if ep.in_flight + 1 > bound]
        if over and over[0] is ranked[0] and self.on_spill is not None:
            self.on_spill(ranked[0])
        return within + over

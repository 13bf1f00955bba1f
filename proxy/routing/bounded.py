"""Bounded-load picker: consistent hashing with bounded loads (Mirrokni, Thorup and
Zadimoghaddam, 2018), the fix for prefix-affinity hotspots (vllm production-stack #957).

Candidates are ordered by weighted total, highest first, ties by URL (as HighestScore).
Then the bound is applied: with `total` requests in flight over the `n` candidates,
counting this one,

    bound = ceil((1 + epsilon) * total / n)

and an endpoint whose `in_flight + 1` would exceed the bound moves behind every
endpoint within it; the relative order inside each group is kept. At least one
endpoint is always within the bound (the least loaded one), so the first choice is
never over it, and a hot prefix spills to its next-best backend instead of piling up.
The returned order is also the failover order.

`ctx.decisions["bounded"]` records `{"bound": bound, "skipped": [urls moved back]}`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from proxy.context import RequestContext
from proxy.routing.endpoint import Endpoint


def load_bound(in_flight: Sequence[int], epsilon: float) -> int:
    """ceil((1 + epsilon) * mean load once the new request is added)."""
    total = sum(max(n, 0) for n in in_flight) + 1
    return math.ceil((1.0 + epsilon) * total / len(in_flight))


class BoundedLoad:
    def __init__(self, epsilon: float = 0.25):
        if epsilon < 0:
            raise ValueError("epsilon must be >= 0")
        self.epsilon = epsilon

    def order(
        self, ctx: RequestContext, totals: dict[Endpoint, float], endpoints: Sequence[Endpoint]
    ) -> list[Endpoint]:
        ranked = sorted(endpoints, key=lambda ep: (-totals.get(ep, 0.0), ep.url))
        if not ranked:
            return ranked
        bound = load_bound([ep.in_flight for ep in ranked], self.epsilon)
        within = [ep for ep in ranked if ep.in_flight + 1 <= bound]
        over = [ep for ep in ranked if ep.in_flight + 1 > bound]
        ctx.decisions["bounded"] = {"bound": bound, "skipped": [ep.url for ep in over]}
        return within + over

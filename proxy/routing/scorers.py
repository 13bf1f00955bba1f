"""Scorers: each maps candidates to [0, 1]; the router weighs and sums them."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext
from proxy.routing.router import Cycle


class RoundRobin:
    """Rotates the top choice on every request (the baseline ranking)."""

    name = "roundrobin"

    def __init__(self) -> None:
        self._counter = itertools.count()

    def score(
        self, ctx: RequestContext, endpoints: Sequence[Endpoint], cycle: Cycle | None = None
    ) -> dict[Endpoint, float]:
        n = len(endpoints)
        if n == 0:
            return {}
        ordered = sorted(endpoints, key=lambda ep: ep.url)
        start = next(self._counter) % n
        return {ep: 1.0 - ((i - start) % n) / n for i, ep in enumerate(ordered)}

"""Load: prefer the backend with the fewest requests in flight (through this replica)."""

from __future__ import annotations

from collections.abc import Sequence

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext
from proxy.routing.router import Cycle


class LeastLoaded:
    """score = 1 - in_flight / max in_flight over the candidates; all 1.0 when idle.

    `in_flight` is what this ragtrim replica has open, not the backend's global queue:
    a local, free signal that needs no coordination.
    """

    name = "load"

    def score(
        self, ctx: RequestContext, endpoints: Sequence[Endpoint], cycle: Cycle | None = None
    ) -> dict[Endpoint, float]:
        busiest = max((ep.in_flight for ep in endpoints), default=0)
        if busiest <= 0:
            return dict.fromkeys(endpoints, 1.0)
        return {ep: 1.0 - max(ep.in_flight, 0) / busiest for ep in endpoints}

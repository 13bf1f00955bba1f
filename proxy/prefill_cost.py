"""What a backend's prefill costs and how long its queue is: the laws the cost gate
(proxy/gate.py) reads, kept per backend on its record (`Endpoint.prefill`,
`Endpoint.queue`, proxy/routing/endpoint.py), so they leave with it (issue 21).
The gate's docstring says how it uses them."""

from __future__ import annotations

import statistics
import time
from collections import deque
from typing import TYPE_CHECKING

from proxy.job_cost import MIN_SAMPLE_TOKENS, fit

if TYPE_CHECKING:
    from proxy.routing.endpoint import EndpointPool

QUEUE_WINDOW = 4  # queue readings kept per backend (BackendQueue)


class PrefillLaw:
    """Marginal prefill ms per token from (tokens, ms) samples of one backend.

    Theil–Sen slope over pairs whose token counts differ by ≥ MIN_SPREAD, capped by
    the median ratio ms/tokens (the slope of a law with a non-negative base is below
    it; a negative fitted base is noise, and a smaller estimate is the safe side).
    With too little spread, the median ratio alone. Cached between samples.

    A fitted slope of 0 (at least half the pairs got no slower with more tokens: the
    samples are queue waits or cache hits, not prefill) is no measurement: `value()` is
    None, as before any sample. Read as 0 it priced every prefill token at nothing, and
    the gate, which takes the least of the backends' laws, stopped compressing for the
    whole pool on one backend's noise (bench.prefix_routing's one-application regime,
    2026-12-03: two identical replicas, laws 0.0 and 0.129 ms/token)."""

    def __init__(self, window: int = 48):
        self.samples: deque[tuple[float, float]] = deque(maxlen=window)
        self._value: float | None = None

    def add(self, ms: float, tokens: float) -> None:
        if tokens >= MIN_SAMPLE_TOKENS and ms >= 0:
            self.samples.append((float(tokens), float(ms)))
            self._value = fit(self.samples)[0] or None

    def value(self) -> float | None:
        return self._value


class BackendQueue:
    """The pool's (waiting, running) gauges, each backend's last QUEUE_WINDOW kept on its
    record (`Endpoint.queue`), so a backend that leaves the pool takes them along.

    One reading is an instant: a request that arrived mid-step shows as waiting until
    the step ends, even on an idle replica. The mean of the fresh readings estimates
    the time-average queue (what Little's law relates to the wait), so a blip counts
    for its share and a standing queue fully."""

    def __init__(self, pool: EndpointPool, fresh_s: float = 2.0):
        self.pool = pool
        self.fresh_s = fresh_s

    def observe(self, backend: str, waiting: float, running: float,
                at: float | None = None) -> None:  # fmt: skip
        """Kept on the backend's record; dropped when it is no longer in the pool."""
        ep = self.pool.get(backend)
        if ep is not None:
            at = time.monotonic() if at is None else at
            ep.queue.append((max(0.0, waiting), max(0.0, running), at))

    def waiting(self, now: float | None = None) -> float:
        """Mean requests waiting on the least-queued backend that was ever read; one
        without a fresh reading counts as none waiting."""
        now = time.monotonic() if now is None else now
        means = []
        for ep in self.pool.endpoints:
            if ep.queue:
                fresh = [w for w, _, at in ep.queue if now - at <= self.fresh_s]
                means.append(statistics.fmean(fresh) if fresh else 0.0)
        return min(means, default=0.0)


def queue_multiplier(waiting: float) -> float:
    """One removed prompt token's saving, in its own prefills: its own and one for
    each request behind it in the backend's FCFS queue."""
    return 1.0 + max(0.0, waiting)

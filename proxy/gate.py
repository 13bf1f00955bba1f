"""The cost gate: compress only when it makes the request faster ("never slower").

Inputs, all measured online:
- prefill cost per uncached prompt token, per backend: from streamed TTFTs and from
  vLLM's own prefill-time metrics (proxy/backend_metrics.py), each a (tokens, ms) sample.
  A prefill is `base + per_token × tokens`; what compression saves is the slope, so
  `PrefillLaw` fits it (Theil–Sen: median of pairwise slopes, robust to a stalled
  request) and never reports more than the median ms/token ratio (which includes the
  base). The fastest backend is used, since routing happens after compression;
- compressor cost per cold token: from observed compressions (median of the worker
  time, queue wait excluded); until the first one, the compressor's own prior
  (`prior_ms_per_1k`, a class attribute: the compressor knows its cost, the gate does
  not keep a table of names). The engine also measures the compressor at start-up
  (compressors/calibration.py), so the prior decides only while that runs or when it failed;
- the queue: the engine's expected wait for a worker (proxy/engine.py);
- the memo: documents already compressed cost a lookup, not a compression.

Decision for `auto`: compress at the requested rate when
    saved  = context_tokens × (1 − rate) × prefill_ms_per_token
    cost   = wait_ms + uncached_context_tokens × compressor_ms_per_token
    saved > cost  and  cost ≤ max_added_ms  and  context_tokens ≥ min_context_tokens.
(no wait when every document is in the memo: no worker is needed).
The cost prices the request's real mix (issue 18): of the memo misses, documents whose
features are memoized (`seen_docs`) cost the seen rate (measured on all-seen jobs;
until then the compressor's `prior_seen_ms_per_1k`), the others the cold rate; and
contention: the cost is times max(1, compressions in flight / cores) (measured: 4
concurrent compressions on 2 cores each took twice their solo time), and samples are
divided by the contention they ran under, so the rates stay solo rates.

Under a queue (`BackendQueue`): when the backend has requests waiting, a removed
prompt token saves its own prefill time and as much again for every request queued
behind it (vLLM prefills at most `max_num_batched_tokens` per step, first come first
served: each token a step spends on this prompt delays every later prompt's steps). In
a steady queue as many requests wait behind a request as it found ahead of it, so
    saved = context_tokens × (1 − rate) × prefill_ms_per_token × (1 + waiting)
with `waiting` vLLM's `vllm:num_requests_waiting` (proxy/backend_metrics.py reads it; the mean of
the last few readings, `BackendQueue`). The
smallest fresh reading over the backends is used (routing happens after compression:
the safe side), and a reading older than `queue_fresh_s` counts as no queue (the
gauges are read after responses; an idle replica sends none). So compression that
does not pay for one request on an idle GPU pays on a replica with a queue.
`always` compresses whenever a context is found; `never` never does.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the records hold this module's PrefillLaw: no import at run time
    from proxy.routing.endpoint import EndpointPool

MIN_SAMPLE_TOKENS = 64
MIN_SPREAD = 1.25  # two samples give a slope only when their token counts differ this much
QUEUE_WINDOW = 4  # queue readings kept per backend (BackendQueue)


@dataclass(frozen=True)
class Decision:
    action: str  # "compress" | "skip"
    rate: float | None
    reason: str


class RobustRate:
    """Median of the last `window` per-token costs (outliers cannot drag it)."""

    def __init__(self, window: int = 64):
        self.samples: deque[float] = deque(maxlen=window)

    def add(self, ms: float, tokens: int) -> None:
        if tokens >= MIN_SAMPLE_TOKENS and ms >= 0:
            self.samples.append(ms / tokens)

    def value(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None


class PrefillLaw:
    """Marginal prefill ms per token from (tokens, ms) samples of one backend.

    Theil–Sen slope over pairs whose token counts differ by ≥ MIN_SPREAD, capped by
    the median ratio ms/tokens (the slope of a law with a non-negative base is below
    it; a negative fitted base is noise, and a smaller estimate is the safe side).
    With too little spread, the median ratio alone. Cached between samples."""

    def __init__(self, window: int = 48):
        self.samples: deque[tuple[float, float]] = deque(maxlen=window)
        self._value: float | None = None

    def add(self, ms: float, tokens: float) -> None:
        if tokens >= MIN_SAMPLE_TOKENS and ms >= 0:
            self.samples.append((float(tokens), float(ms)))
            self._value = self._fit()

    def value(self) -> float | None:
        return self._value

    def _fit(self) -> float:
        ratio = statistics.median(ms / tokens for tokens, ms in self.samples)
        pts = sorted(self.samples)
        slopes = [
            (m2 - m1) / (t2 - t1)
            for i, (t1, m1) in enumerate(pts)
            for t2, m2 in pts[i + 1 :]
            if t2 >= MIN_SPREAD * t1
        ]
        if not slopes:
            return ratio
        return min(ratio, max(0.0, statistics.median(slopes)))


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


class CostGate:
    """`prior_ms_per_1k`: the compressor's cost per 1k cold tokens until measured
    (`compressor.prior_ms_per_1k`: the compressor knows its cost). `pool`: the backends
    whose records hold the prefill laws and queue readings (issue 21: a backend's state
    lives on its record; samples from a backend not in the pool are dropped)."""

    def __init__(self, policy: str, *, prior_ms_per_1k: float, min_context_tokens: int,
                 max_added_ms: float, prior_prefill_ms_per_token: float | None = None,
                 prior_seen_ms_per_1k: float | None = None, cores: int = 1,
                 pool: EndpointPool | None = None):  # fmt: skip
        from proxy.routing.endpoint import EndpointPool

        self.pool = EndpointPool() if pool is None else pool
        self.policy = policy
        self.min_context_tokens = min_context_tokens
        self.max_added_ms = max_added_ms
        self.prior_prefill = prior_prefill_ms_per_token
        self.compress_cost = RobustRate()
        self.compressor_prior = prior_ms_per_1k / 1000
        # issue 18: documents with memoized features cost their own (measured) rate, and
        # every cost is scaled by the compressions in flight per core (contention)
        self.seen_cost = RobustRate()
        seen_prior = prior_ms_per_1k / 10 if prior_seen_ms_per_1k is None else prior_seen_ms_per_1k
        self.seen_prior = seen_prior / 1000
        self.cores = max(1, cores)
        self.queue = BackendQueue(self.pool)

    # feedback -----------------------------------------------------------------
    def observe_prefill(self, backend: str, uncached_tokens: float, ttft_ms: float) -> None:
        ep = self.pool.get(backend)
        if ep is not None:  # a backend that left: its sample teaches nothing any more
            ep.prefill.add(ttft_ms, uncached_tokens)

    def observe_compression(self, outcome) -> None:
        """Learn the solo cost per token: the worker time divided by the contention the
        job ran under; all-unseen jobs teach the cold rate, jobs with seen documents the
        seen rate (`_observe_seen`)."""
        if outcome.misses and outcome.tokens_before:
            cold_tokens = outcome.tokens_before * outcome.misses / (outcome.hits + outcome.misses)
            work_ms = getattr(outcome, "work_ms", None)
            ms = (outcome.ms if work_ms is None else work_ms) / self.contention(
                getattr(outcome, "in_flight", 1)
            )
            seen = getattr(outcome, "seen", 0)
            if seen == 0:
                self.compress_cost.add(ms, round(cold_tokens))
            else:
                self._observe_seen(ms, cold_tokens, seen / outcome.misses)

    def _observe_seen(self, ms: float, tokens: float, share: float) -> None:
        """A job whose misses were `share` seen: what the unseen part cost at the cold
        rate is taken out, the rest is the seen part's (traffic of popular chunks is
        mostly such mixes: all-seen jobs alone would leave the prior in charge)."""
        seen_tokens = tokens * share
        unseen_ms = (tokens - seen_tokens) * self.compressor_ms_per_token()
        if seen_tokens >= MIN_SAMPLE_TOKENS:
            self.seen_cost.add(max(0.0, ms - unseen_ms), round(seen_tokens))

    def observe_queue(self, backend: str, waiting: float, running: float) -> None:
        self.queue.observe(backend, waiting, running)

    # estimates ----------------------------------------------------------------
    def prefill_ms_per_token(self) -> float | None:
        laws = (ep.prefill.value() for ep in self.pool.endpoints)
        measured = [value for value in laws if value is not None]
        return min(measured) if measured else self.prior_prefill

    def compressor_ms_per_token(self) -> float:
        measured = self.compress_cost.value()
        return self.compressor_prior if measured is None else measured

    def seen_ms_per_token(self) -> float:
        """Per token of a document whose features are memoized (never above cold)."""
        measured = self.seen_cost.value()
        seen = self.seen_prior if measured is None else measured
        return min(seen, self.compressor_ms_per_token())

    def contention(self, in_flight: float) -> float:
        """How much slower a compression runs with `in_flight` of them (itself included)
        on `cores` cores: 4 on 2 cores each took twice its solo time (issue 18)."""
        return max(1.0, in_flight / self.cores)

    def work_ms(self, context_tokens: int, cached_docs: int, seen_docs: int, total_docs: int,
                in_flight: float = 1) -> float:  # fmt: skip
        """The request's real mix: memo hits cost nothing, seen documents the seen rate,
        the rest the cold rate; all of it times the contention."""
        if not total_docs:
            return 0.0
        per_doc = context_tokens / total_docs
        unseen = max(0, total_docs - cached_docs - seen_docs)
        seen = min(seen_docs, total_docs - cached_docs)
        ms = per_doc * (unseen * self.compressor_ms_per_token() + seen * self.seen_ms_per_token())
        return ms * self.contention(in_flight)

    # the decision -------------------------------------------------------------
    def decide(self, *, context_tokens: int, cached_docs: int, total_docs: int, rate: float,
               wait_ms: float = 0.0, seen_docs: int = 0,
               in_flight: float = 1) -> Decision:  # fmt: skip
        if self.policy == "never":
            return Decision("skip", None, "skip:policy-never")
        if self.policy == "always":
            return Decision("compress", rate, "compress:policy-always")
        if context_tokens < self.min_context_tokens:
            return Decision("skip", None, f"skip:short-context({context_tokens})")
        cold = context_tokens * (1 - cached_docs / total_docs) if total_docs else 0
        work = self.work_ms(context_tokens, cached_docs, seen_docs, total_docs, in_flight)
        cost = work + (wait_ms if cold else 0.0)
        prefill = self.prefill_ms_per_token()
        if prefill is None:
            if cold == 0:
                return Decision("compress", rate, "compress:warm-cache")
            return Decision("skip", None, "skip:no-prefill-measurement")
        waiting = self.queue.waiting()
        saved = context_tokens * (1 - rate) * prefill * queue_multiplier(waiting)
        detail = f"saved={saved:.0f}ms,cost={cost:.0f}ms"
        if waiting:
            detail += f",queued={waiting:.2g}"
        if cold and wait_ms:
            detail += f",wait={wait_ms:.0f}ms"
        if cost > self.max_added_ms:
            return Decision("skip", None, f"skip:over-budget({detail})")
        if saved <= cost:
            return Decision("skip", None, f"skip:not-worth-it({detail})")
        return Decision("compress", rate, f"compress:auto({detail})")

"""The cost gate: compress only when it makes the request faster ("never slower").

Inputs, all measured online:
- prefill cost per uncached prompt token, per backend: from streamed TTFTs and from
  vLLM's own prefill-time metrics (proxy/backend_metrics.py), each a (tokens, ms) sample.
  A prefill is `base + per_token × tokens`; what compression saves is the slope, so
  `PrefillLaw` fits it (Theil–Sen: median of pairwise slopes, robust to a stalled
  request) and never reports more than the median ms/token ratio (which includes the
  base). The fastest backend is used, since routing happens after compression;
- compressor cost of a job: a fixed part plus a rate per cold token, fitted on observed
  compressions (proxy/job_cost.py: what the job added to the request, queue wait
  excluded); until the first one, no fixed part and the compressor's own prior
  (`prior_ms_per_1k`, a class attribute: the compressor knows its cost, the gate does
  not keep a table of names). The engine also measures the compressor at start-up
  (compressors/calibration.py), so the prior decides only while that runs or when it failed;
- the queue: the engine's expected wait for a worker (proxy/engine.py);
- the memo: documents already compressed cost a lookup, not a compression.

Decision for `auto`: compress at the requested rate when
    saved  = context_tokens × (1 − rate) × prefill_ms_per_token
    cost   = wait_ms + fixed_ms + uncached_context_tokens × compressor_ms_per_token
    saved > cost  and  cost ≤ max_added_ms  and  context_tokens ≥ min_context_tokens.
(no wait and no fixed part when every document is in the memo: no job runs).
The cost prices the request's real mix (issue 18): of the memo misses, documents whose
features are memoized (`seen_docs`) cost the seen law (a fixed part and a rate, fitted on
jobs with seen documents; until then the compressor's `prior_seen_ms_per_1k`), the
others the cold rate; and
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
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the records hold proxy/prefill_cost.py's laws: no import at run time
    from proxy.routing.endpoint import EndpointPool

from proxy.job_cost import MIN_SAMPLE_TOKENS, JobCost
from proxy.prefill_cost import BackendQueue, queue_multiplier


@dataclass(frozen=True)
class Decision:
    action: str  # "compress" | "skip"
    rate: float | None
    reason: str

    @property
    def for_cost(self) -> bool:
        """Skipped because the job was priced too dear (what a stale price would cause)."""
        return self.reason.startswith(("skip:not-worth-it", "skip:over-budget"))


class RobustRate:
    """Median of the last `window` per-token costs (outliers cannot drag it)."""

    def __init__(self, window: int = 64):
        self.samples: deque[float] = deque(maxlen=window)

    def add(self, ms: float, tokens: int) -> None:
        if tokens >= MIN_SAMPLE_TOKENS and ms >= 0:
            self.samples.append(ms / tokens)

    def value(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None


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
        self.compress_cost = JobCost()  # fixed ms per job + ms per cold token
        self.compressor_prior = prior_ms_per_1k / 1000
        # issue 18: documents with memoized features cost their own (measured) rate, and
        # every cost is scaled by the compressions in flight per core (contention)
        self.seen_cost = JobCost()
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
        """Learn the solo cost of a job: what it added to the request (its time less the
        queue wait, which the gate prices apart; at least the worker time) divided by the
        contention it ran under. All-unseen jobs teach the cold law, jobs with seen
        documents the seen law (`_observe_seen`)."""
        if outcome.misses and outcome.tokens_before:
            cold_tokens = outcome.tokens_before * outcome.misses / (outcome.hits + outcome.misses)
            work_ms = getattr(outcome, "work_ms", None) or 0.0
            spent = max(work_ms, outcome.ms - (getattr(outcome, "wait_ms", None) or 0.0))
            ms = spent / self.contention(getattr(outcome, "in_flight", 1))
            seen = getattr(outcome, "seen", 0)
            if seen == 0:
                self.compress_cost.add(ms, round(cold_tokens))
            else:
                self._observe_seen(ms, cold_tokens, seen / outcome.misses)

    def _observe_seen(self, ms: float, tokens: float, share: float) -> None:
        """A job whose misses were `share` seen: what the unseen part cost at the cold
        per-token rate is taken out, the rest (the job's fixed part included) is the seen
        law's (traffic of popular chunks is mostly such mixes: all-seen jobs alone would
        leave the prior in charge)."""
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
        measured = self.compress_cost.per_token
        return self.compressor_prior if measured is None else measured

    def seen_ms_per_token(self) -> float:
        """Per token of a document whose features are memoized (never above cold)."""
        measured = self.seen_cost.per_token
        seen = self.seen_prior if measured is None else measured
        return min(seen, self.compressor_ms_per_token())

    def job_ms(self, unseen_tokens: float, seen_tokens: float) -> tuple[float, float]:
        """A solo job's ms, and its fixed part: the cold law for an all-unseen job; with
        seen documents the seen law plus the unseen tokens at the cold rate, never more
        than the same job cold."""
        fixed = self.compress_cost.fixed_ms
        cold = (fixed + (unseen_tokens + seen_tokens) * self.compressor_ms_per_token(), fixed)
        if not seen_tokens:
            return cold
        seen_fixed = self.seen_cost.fixed_ms
        seen = seen_fixed + seen_tokens * self.seen_ms_per_token()
        mixed = (seen + unseen_tokens * self.compressor_ms_per_token(), seen_fixed)
        return min(cold, mixed)

    def contention(self, in_flight: float) -> float:
        """How much slower a compression runs with `in_flight` of them (itself included)
        on `cores` cores: 4 on 2 cores each took twice its solo time (issue 18)."""
        return max(1.0, in_flight / self.cores)

    def work_ms(self, context_tokens: int, cached_docs: int, seen_docs: int, total_docs: int,
                in_flight: float = 1) -> float:  # fmt: skip
        """The request's real mix: memo hits cost nothing, a job for the rest its fixed
        part, seen documents the seen rate, unseen ones the cold rate; all of it times
        the contention."""
        return self._work(context_tokens, cached_docs, seen_docs, total_docs, in_flight)[0]

    def _work(self, context_tokens: int, cached_docs: int, seen_docs: int, total_docs: int,
              in_flight: float) -> tuple[float, float]:  # fmt: skip
        """(work_ms, its fixed part), both times the contention."""
        if not total_docs:
            return 0.0, 0.0
        per_doc = context_tokens / total_docs
        unseen = max(0, total_docs - cached_docs - seen_docs)
        seen = min(seen_docs, total_docs - cached_docs)
        if not unseen and not seen:  # every document in the memo: no job
            return 0.0, 0.0
        ms, fixed = self.job_ms(per_doc * unseen, per_doc * seen)
        scale = self.contention(in_flight)
        return ms * scale, fixed * scale

    # the decision -------------------------------------------------------------
    def decide_early(self, context_tokens: int, rate: float) -> Decision | None:
        """What needs no memo or feature lookup (the compress stage asks this first)."""
        if self.policy == "always":
            return Decision("compress", rate, "compress:policy-always")
        if context_tokens < self.min_context_tokens:
            return Decision("skip", None, f"skip:short-context({context_tokens})")
        return None

    def decide(self, *, context_tokens: int, cached_docs: int, total_docs: int, rate: float,
               wait_ms: float = 0.0, seen_docs: int = 0,
               in_flight: float = 1) -> Decision:  # fmt: skip
        early = self.decide_early(context_tokens, rate)
        if early is not None:
            return early
        cold = context_tokens * (1 - cached_docs / total_docs) if total_docs else 0
        work, fixed = self._work(context_tokens, cached_docs, seen_docs, total_docs, in_flight)
        cost = work + (wait_ms if cold else 0.0)
        prefill = self.prefill_ms_per_token()
        if prefill is None:
            if cold == 0:
                return Decision("compress", rate, "compress:warm-cache")
            return Decision("skip", None, "skip:no-prefill-measurement")
        waiting = self.queue.waiting()
        saved = context_tokens * (1 - rate) * prefill * queue_multiplier(waiting)
        detail = f"saved={saved:.0f}ms,cost={cost:.0f}ms"
        if fixed:
            detail += f",fixed={fixed:.0f}ms"
        if waiting:
            detail += f",queued={waiting:.2g}"
        if cold and wait_ms:
            detail += f",wait={wait_ms:.0f}ms"
        if cost > self.max_added_ms:
            return Decision("skip", None, f"skip:over-budget({detail})")
        if saved <= cost:
            return Decision("skip", None, f"skip:not-worth-it({detail})")
        return Decision("compress", rate, f"compress:auto({detail})")

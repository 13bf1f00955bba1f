"""The cost gate: compress only when it makes the request faster ("never slower").

Inputs, all measured online:
- prefill cost per uncached prompt token, per backend: from streamed TTFTs and from
  vLLM's own prefill-time metrics (proxy/backends/scrape.py), each a (tokens, ms) sample.
  A prefill is `base + per_token × tokens`; what compression saves is the slope, so
  `PrefillLaw` fits it (Theil–Sen: median of pairwise slopes, robust to a stalled
  request) and never reports more than the median ms/token ratio (which includes the
  base). The fastest backend is used, since routing happens after compression;
- compressor cost of a job: a fixed part plus a rate per cold token, fitted on observed
  compressions (proxy/gate/job_cost.py: what the job added to the request, queue wait
  excluded); until the first one, no fixed part and the compressor's own prior
  (`prior_ms_per_1k`, a class attribute: the compressor knows its cost, the gate does
  not keep a table of names). The engine also measures the compressor at start-up
  (compressors/calibration.py), so the prior decides only while that runs or when it failed;
- the queue: the engine's expected wait for a worker (proxy/compression/engine.py);
- the memo: documents already compressed cost a lookup, not a compression.

Decision for `auto`: compress at the requested rate when
    saved  = context_tokens × (1 − rate) × prefill_ms_per_token
    cost   = wait_ms + fixed_ms + uncached_context_tokens × compressor_ms_per_token
    saved > cost  and  cost ≤ max_added_ms  and  context_tokens ≥ min_context_tokens.
Only uncached tokens cost prefill: context tokens a backend already holds as
the client sent them (`held`) are taken out of the cut, `skip:cached` when that leaves
no saving (proxy/compression/stable.py prices a reused compressed form the same way).
(no wait and no fixed part when every document is in the memo: no job runs).
The cost prices the request's real mix: of the memo misses, documents whose
features are memoized (`seen_docs`) cost the seen law (a fixed part and a rate, fitted on
jobs with seen documents; until then the compressor's `prior_seen_ms_per_1k`), the
others the cold rate; and
contention: the cost is times max(1, compressions in flight / cores), and samples are
divided by the contention they ran under, so the rates stay solo rates.

Under a queue (`BackendQueue`): when the backend has requests waiting, a removed
prompt token saves its own prefill time and as much again for every request queued
behind it (vLLM prefills at most `max_num_batched_tokens` per step, first come first
served: each token a step spends on this prompt delays every later prompt's steps). In
a steady queue as many requests wait behind a request as it found ahead of it, so
    saved = context_tokens × (1 − rate) × prefill_ms_per_token × (1 + waiting)
with `waiting` vLLM's `vllm:num_requests_waiting` (proxy/backends/scrape.py reads it; the mean of
the last few readings, `BackendQueue`). The
smallest fresh reading over the backends is used (routing happens after compression:
the safe side), and a reading older than `BackendQueue.fresh_s` (2 s) counts as no queue (the
gauges are read after responses; an idle replica sends none). So compression that
does not pay for one request on an idle GPU pays on a replica with a queue.
`always` compresses whenever a context is found (`compression.enabled=false` is the
switch that turns compression off: proxy/config/removed.py refuses the old `never`).

No request teaches the gate for others. The job laws are kept per tenant
(`TenantLaws`: a tenant's jobs price its own requests; until it has fresh ones, the
proxy's own calibration runs, then the prior, price them); a job's sample is what its
context cost: the question's part, which the compressor times apart (`question_ms`),
is taken out, so a giant question teaches no fixed part; memo hits teach nothing. Each
part is clamped and ages out (proxy/gate/job_cost.py), as the prefill law
(proxy/gate/prefill_law.py) and the token estimate (proxy/gate/token_estimate.py) do: a poisoned
value is gone `MAX_AGE_S` (60 s, proxy/gate/learning.py) after its last poisoned sample.
Why, and what was measured: docs/decisions/0040-cost-gate-learned-laws.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from proxy.gate.job_cost import MIN_SAMPLE_TOKENS, JobCost, TenantLaws
from proxy.gate.learning import PerTenant
from proxy.gate.prefill_law import BackendQueue, LawPool, queue_multiplier
from proxy.outcome.decision import Decision, Why, compress, skip
from proxy.outcome.job import Outcome


class CostGate:
    """`prior_ms_per_1k`: the compressor's cost per 1k cold tokens until measured
    (`compressor.prior_ms_per_1k`: the compressor knows its cost). `pool`: the backends
    whose records hold the prefill laws and queue readings (a backend's state lives on
    its record; samples from a backend not in the pool are dropped)."""

    def __init__(self, policy: str, *, prior_ms_per_1k: float, min_context_tokens: int,
                 max_added_ms: float, prior_prefill_ms_per_token: float | None = None,
                 prior_seen_ms_per_1k: float | None = None, cores: int = 1,
                 pool: LawPool,
                 clock: Callable[[], float] = time.monotonic):  # fmt: skip
        self.pool = pool
        self.policy = policy
        self.min_context_tokens = min_context_tokens
        self.max_added_ms = max_added_ms
        self.prior_prefill = prior_prefill_ms_per_token
        # fixed ms per job + ms per cold token, per tenant; the calibration
        # runs' law (no request shapes it: it never ages) prices a tenant without its own
        self.laws: PerTenant[TenantLaws] = PerTenant(lambda: TenantLaws(clock))
        self.calibrated = JobCost(max_age=None, clock=clock)
        self.compressor_prior = prior_ms_per_1k / 1000
        # documents with memoized features cost their own (measured) rate, and
        # every cost is scaled by the compressions in flight per core (contention)
        seen_prior = prior_ms_per_1k / 10 if prior_seen_ms_per_1k is None else prior_seen_ms_per_1k
        self.seen_prior = seen_prior / 1000
        self.cores = max(1, cores)
        self.queue = BackendQueue(self.pool)

    # feedback -----------------------------------------------------------------
    def observe_prefill(self, backend: str, uncached_tokens: float, ttft_ms: float,
                        source: str = "stream", tenant: str = "") -> None:  # fmt: skip
        """`source` "metrics": vLLM's own prefill time, which outranks TTFTs (a TTFT
        teaches only its tenant's view: proxy/gate/prefill_law.py)."""
        ep = self.pool.get(backend)
        if ep is not None:  # a backend that left: its sample teaches nothing any more
            ep.prefill.add(ttft_ms, uncached_tokens, source, tenant)

    def observe_calibration(self, outcome: Outcome) -> None:
        """The proxy's own measurement of the calibration workload (compressors/
        calibration.py): the law that prices a tenant without fresh jobs of its own."""
        sample = self._sample(outcome)
        if sample is not None:
            self.calibrated.add(*sample)

    def observe_compression(self, outcome: Outcome, tenant: str = "") -> None:
        """Learn `tenant`'s solo cost of a job (`_sample`). All-unseen jobs teach the cold
        law, jobs with seen documents the seen law (`_observe_seen`)."""
        sample = self._sample(outcome)
        if sample is None:
            return
        seen = outcome.seen
        if seen == 0:
            self.laws.get(tenant).cold.add(*sample)
        else:
            self._observe_seen(*sample, seen / outcome.misses, tenant)

    def _sample(self, outcome: Outcome) -> tuple[float, float] | None:
        """(ms, cold tokens) of a job: what it added to the request (its time less the
        queue wait, which the gate prices apart; at least the worker time), less the
        question's part (the compressor times it apart; a giant question is not the
        context's cost), divided by the contention it ran under; the tokens the
        compressor itself counted in the documents it compressed (memo hits cost a lookup,
        not a job: they teach nothing). None: no job ran."""
        if not outcome.misses or not outcome.tokens_before:
            return None
        fresh = outcome.fresh_tokens
        share = outcome.misses / (outcome.hits + outcome.misses)
        cold_tokens = fresh if fresh else outcome.tokens_before * share
        spent = max(outcome.work_ms, outcome.ms - outcome.wait_ms)
        spent = max(0.0, spent - outcome.question_ms)
        return spent / self.contention(outcome.in_flight), cold_tokens

    def observe_finish(self, ms: float, context_tokens: float, tenant: str = "") -> None:
        """What a compressing request of `tenant` spent after its job (TenantLaws)."""
        self.laws.get(tenant).finish.add(ms, context_tokens)

    def finish_ms(self, context_tokens: float, tenant: str = "") -> float:
        """The price of a compression's after-job work; 0 until measured."""
        return self.laws.get(tenant).finish.ms(context_tokens) or 0.0

    def _observe_seen(self, ms: float, tokens: float, share: float, tenant: str) -> None:
        """A job whose misses were `share` seen: what the unseen part cost at the cold
        per-token rate is taken out, the rest (the job's fixed part included) is the seen
        law's (traffic of popular chunks is mostly such mixes: all-seen jobs alone would
        leave the prior in charge)."""
        seen_tokens = tokens * share
        unseen_ms = (tokens - seen_tokens) * self.compressor_ms_per_token(tenant)
        if seen_tokens >= MIN_SAMPLE_TOKENS:
            self.laws.get(tenant).seen.add(max(0.0, ms - unseen_ms), round(seen_tokens))

    # estimates ----------------------------------------------------------------
    def prefill_ms_per_token(self, tenant: str = "") -> float | None:
        laws = (ep.prefill.value(tenant) for ep in self.pool.endpoints)
        measured = [value for value in laws if value is not None]
        return min(measured) if measured else self.prior_prefill

    def cold_law(self, tenant: str = "") -> JobCost | None:
        """The law that prices `tenant`'s cold jobs: its own while it has fresh samples,
        else the calibration runs'; None: the prior (no fixed part)."""
        own = self.laws.get(tenant).cold
        if own.per_token is not None:
            return own
        return self.calibrated if self.calibrated.per_token is not None else None

    def compressor_ms_per_token(self, tenant: str = "") -> float:
        law = self.cold_law(tenant)
        return self.compressor_prior if law is None else law.per_token  # type: ignore[return-value]

    def seen_ms_per_token(self, tenant: str = "") -> float:
        """Per token of a document whose features are memoized (never above cold)."""
        measured = self.laws.get(tenant).seen.per_token
        seen = self.seen_prior if measured is None else measured
        return min(seen, self.compressor_ms_per_token(tenant))

    def job_ms(self, unseen_tokens: float, seen_tokens: float,
               tenant: str = "") -> tuple[float, float]:  # fmt: skip
        """A solo job's ms, and its fixed part: the cold law for an all-unseen job; with
        seen documents the seen law plus the unseen tokens at the cold rate, never more
        than the same job cold."""
        law, per_token = self.cold_law(tenant), self.compressor_ms_per_token(tenant)
        fixed = 0.0 if law is None else law.fixed_ms
        cold = (fixed + (unseen_tokens + seen_tokens) * per_token, fixed)
        if not seen_tokens:
            return cold
        seen_fixed = self.laws.get(tenant).seen.fixed_ms
        seen = seen_fixed + seen_tokens * self.seen_ms_per_token(tenant)
        mixed = (seen + unseen_tokens * per_token, seen_fixed)
        return min(cold, mixed)

    def contention(self, in_flight: float) -> float:
        """How much slower a compression runs with `in_flight` of them (itself included)
        on `cores` cores: linear in compressions per core, at least 1."""
        return max(1.0, in_flight / self.cores)

    def work_ms(self, context_tokens: int, cached_docs: int, seen_docs: int, total_docs: int,
                in_flight: float = 1, tenant: str = "") -> float:  # fmt: skip
        """The request's real mix: memo hits cost nothing, a job for the rest its fixed
        part, seen documents the seen rate, unseen ones the cold rate; all of it times
        the contention."""
        mix = (context_tokens, cached_docs, seen_docs, total_docs)
        return self._work(*mix, in_flight, tenant)[0]

    def _work(self, context_tokens: int, cached_docs: int, seen_docs: int, total_docs: int,
              in_flight: float, tenant: str) -> tuple[float, float]:  # fmt: skip
        """(work_ms, its fixed part), both times the contention."""
        if not total_docs:
            return 0.0, 0.0
        per_doc = context_tokens / total_docs
        unseen = max(0, total_docs - cached_docs - seen_docs)
        seen = min(seen_docs, total_docs - cached_docs)
        if not unseen and not seen:  # every document in the memo: no job
            return 0.0, 0.0
        ms, fixed = self.job_ms(per_doc * unseen, per_doc * seen, tenant)
        scale = self.contention(in_flight)
        return ms * scale, fixed * scale

    # the decision -------------------------------------------------------------
    def decide_early(self, context_tokens: int, rate: float) -> Decision | None:
        """What needs no memo or feature lookup (the compress stage asks this first)."""
        if self.policy == "always":
            return compress(Why.POLICY_ALWAYS, rate)
        if context_tokens < self.min_context_tokens:
            return skip(Why.SHORT_CONTEXT, context_tokens=context_tokens)
        return None

    def decide_held(self, context_tokens: int, rate: float, held: int, tenant: str = ""):
        """`skip:cached` without the memo and feature lookups when a backend holds all
        that compressing would cut (`decide` would find nothing saved, whatever the
        cost); None when that takes the full decision (no prefill measured yet)."""
        if self.policy == "always" or self.prefill_ms_per_token(tenant) is None:
            return None
        if held <= 0 or context_tokens * (1 - rate) - held > 0:
            return None
        return skip(Why.CACHED, saved_ms=0.0, held=held)

    def decide(self, *, context_tokens: int, cached_docs: int, total_docs: int, rate: float,
               wait_ms: float = 0.0, seen_docs: int = 0, in_flight: float = 1,
               tenant: str = "", held: int = 0) -> Decision:  # fmt: skip
        """`held`: context tokens a backend already holds as the client sent them:
        compressing them saves nothing, so only the rest of the cut is saved."""
        early = self.decide_early(context_tokens, rate)
        if early is not None:
            return early
        cold = context_tokens * (1 - cached_docs / total_docs) if total_docs else 0
        mix = (context_tokens, cached_docs, seen_docs, total_docs)
        work, fixed = self._work(*mix, in_flight, tenant)
        cost = work + (wait_ms if cold else 0.0) + self.finish_ms(context_tokens, tenant)
        prefill = self.prefill_ms_per_token(tenant)
        if prefill is None:
            if cold == 0:
                return compress(Why.WARM_CACHE, rate)
            return skip(Why.NO_PREFILL_MEASUREMENT)
        waiting = self.queue.waiting()
        cut = max(0.0, context_tokens * (1 - rate) - held)
        saved = cut * prefill * queue_multiplier(waiting)
        figures = {"saved_ms": saved, "cost_ms": cost, "held": held, "fixed_ms": fixed,
                   "queued": waiting, "wait_ms": wait_ms if cold else None}  # fmt: skip
        if cost > self.max_added_ms:
            return skip(Why.OVER_BUDGET, **figures)
        if saved <= cost:
            return skip(Why.CACHED if held else Why.NOT_WORTH_IT, **figures)
        return compress(Why.AUTO, rate, **figures)

"""The compression service: one call, `decide_and_run`, between the compress stage and
everything that decides and compresses: the prefix cache's say (stable.py), the
cost gate (proxy/gate/), the engine (engine.py) and the re-measurement (recalibration.py)
talk behind it. The start-up calibration reaches the gate once, when `warm` ends.

Each context document is shrunk memoized, off the loop, and failing open.

The budget is the request's own (proxy/prompt/ragtrim_options.py) or the settings' rate. The gate
decides whether compressing pays off for this request.

The gate's token count is an estimate from characters, with the target tokenizer's
characters per token learned from each compression (the compressor counts exactly,
in the worker). The decision barely depends on it (saving and cost both scale with
the count). No request teaches it for others: per tenant, from the documents the
compressor tokenized (never memo hits), on visible characters, clamped and aged
(proxy/gate/token_estimate.py); the gate's laws likewise learn per tenant (proxy/gate/decide.py).
Why: docs/decisions/0040-cost-gate-learned-laws.md.

No silent loss of context: a context beyond `compression.limits` is
forwarded as it is (`skip:limits`); documents the scorer cannot judge (base64, long
URLs, code: compressors/verbatim.py) are kept verbatim and never reach the compressor;
and a compression that would forward an empty context where the client sent one is
discarded (`failed-open:emptied`, counted): the original goes upstream.

Never cost a cache hit: with `compression.stable` on, the prefix cache has
its say first (proxy/compression/stable.py): the client's prompt when a backend holds it
(`skip:cached`), a compressed form of these documents sent before, byte for byte
(`compress:stable`), grown when the question needs more (`compress:stable-grown`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field, replace

from cache.analysis import DocumentAnalyses
from compressors import (
    AUTO,
    AdaptiveBudget,
    calibration,
    merge_verbatim,
    partition_verbatim,
)
from compressors.verbatim import is_opaque
from proxy.compression.engine import CompressionEngine
from proxy.compression.limits import within_limits
from proxy.compression.outcome import failure_reason
from proxy.compression.recalibration import Recalibration
from proxy.compression.stable import Choice, Prices, StableCompression
from proxy.context import RequestContext
from proxy.errors import describe_error
from proxy.gate.decide import CostGate
from proxy.gate.token_estimate import Sizes, TokenEstimate, visible_in
from proxy.metrics import Metrics
from proxy.outcome.decision import Decision, Why, failed_open, skip
from proxy.outcome.job import Outcome
from proxy.outcome.request import Compression
from proxy.settings import CompressionLimitSettings

log = logging.getLogger("ragtrim.compress")


@dataclass(eq=False)
class CompressionService:
    """Decides and compresses one request's documents; the stage's one collaborator."""

    engine: CompressionEngine
    gate: CostGate
    metrics: Metrics
    log_prompts: bool
    limits: CompressionLimitSettings
    recalibration: Recalibration | None = None  # None: the start-up calibration only
    stable: StableCompression | None = None  # None: compression.stable.enabled false
    analyses: DocumentAnalyses | None = None  # None: compression.analysis_bytes 0
    estimate: TokenEstimate = field(default_factory=TokenEstimate, init=False)

    async def warm(self, torch_threads: int) -> None:
        """Load the compressor and measure it (compressors/calibration.py): the gate gets
        that first price here, once, at start; then, where a run is cheap, the workload
        at calibration.WIDE_COPIES times the size, so the law has a fixed part and a slope."""
        await self.engine.warm(torch_threads)
        small = self.engine.calibration
        if small is None:
            return
        self.gate.observe_calibration(small)
        if calibration.wide_pays(small.ms):
            wide = await self.engine.calibrate(calibration.WIDE_COPIES)
            if wide is not None:
                self.gate.observe_calibration(wide)

    @property
    def name(self) -> str:
        return self.engine.name

    async def drain(self) -> None:
        """The store writes still in flight (cache/writes.py): the memo's and the forms'."""
        await self.engine.memo.writes.drain()
        if self.stable is not None:
            await self.stable.writes.drain()

    def _learn(self, tenant: str, sizes: Sizes, outcome: Outcome) -> None:
        """What this job teaches `tenant`'s prices: its cost, and the characters
        per token of the documents the compressor counted now (memo hits teach nothing)."""
        self.gate.observe_compression(outcome, tenant)
        if outcome.misses and self.recalibration is not None:
            self.recalibration.learned()
        fresh = [i for i in outcome.fresh if i < len(sizes.visible)]
        if fresh:
            self.estimate.learn(tenant, sizes.chars(fresh), outcome.fresh_tokens)

    async def decide_and_run(
        self, ctx: RequestContext, texts: list[str], question: str, rate: float | str | None
    ) -> list[str]:
        """The new document texts (`texts` where compressing must not), recorded for the
        prefix cache as what goes upstream."""
        if not rate:  # compression off: nothing to price, the prompt is recorded as sent
            if self.stable is not None:
                self.stable.record_sent(ctx, texts, self.estimate.chars_per_token(ctx.tenant))
            return texts
        sizes = self.estimate.sizes(ctx.tenant, texts, self._visible(ctx.tenant, texts))
        new_texts, ended = await self._shrink(ctx, texts, question, rate, sizes)
        if self.stable is not None:
            self.stable.record_sent(ctx, new_texts, sizes.chars_per_token)
        if ended is not None:  # the after-job work, priced into later decisions (TenantLaws)
            spent = (time.perf_counter() - ended) * 1000
            self.gate.observe_finish(spent, sizes.tokens(), ctx.tenant)
        return new_texts

    async def _shrink(
        self, ctx, texts: list[str], question: str, rate: float, sizes: Sizes
    ) -> tuple[list[str], float | None]:
        """The new document texts: compressed, or `texts` where compressing must not; and
        when the job ended (None: no job ran, or its output was not sent)."""
        fits = within_limits(texts, self.limits)
        chosen = await self._judgeable(texts, ctx.tenant) if fits else []
        if not chosen:
            self._decided(ctx, skip(Why.OPAQUE if fits else Why.LIMITS))
            return texts, None
        picked, sized = [texts[i] for i in chosen], sizes.of(chosen)
        choice = await self._choose(ctx, texts, sized, question, rate)
        if choice.decision is not None and choice.kind in ("original", "form"):  # no job
            self._decided(ctx, choice.decision)  # the prefix cache decided
            self.stable.count(choice)  # type: ignore[union-attr]
            form = choice.form
            if form is None:
                return texts, None
            ctx.outcome.compression = Compression(
                self.engine.name, form.tokens_before, form.tokens_after
            )
            return list(form.texts), None
        outcome = await self._compress(ctx, picked, question, rate, choice, sized)
        if outcome is None:
            return texts, None
        ended = time.perf_counter()
        new = merge_verbatim(texts, chosen, outcome.texts)
        if any(t.strip() for t in texts) and not any(t.strip() for t in new):
            self.metrics.compress_failures.labels("emptied").inc()
            ctx.outcome.decision, ctx.outcome.compression = failed_open(Why.EMPTIED), None
            return texts, None
        if self.stable is not None:
            sizes = (outcome.tokens_before, outcome.tokens_after)
            new, settled, after = self.stable.settle(ctx, choice, new, question, *sizes)
            if settled is not None:
                ctx.outcome.decision = settled
            if after is not None and ctx.outcome.compression is not None:  # a form went
                ctx.outcome.compression = replace(ctx.outcome.compression, tokens_after=after)
        return new, ended

    async def _choose(
        self, ctx, texts: list[str], picked: Sizes, question: str, rate: float
    ) -> Choice:
        """The prefix cache's say (proxy/compression/stable.py); "fresh" without it."""
        if self.stable is None:
            return Choice("fresh")
        tenant, cpt = ctx.tenant, picked.chars_per_token
        wait = self.engine.expected_wait_ms(self.gate.compressor_ms_per_token(tenant) / cpt)
        prices = Prices(
            tenant,
            cpt,
            picked.tokens(),
            len(picked.visible),
            self.engine.in_flight() + 1,
            wait,
        )
        return await self.stable.choose(ctx, texts, question, rate, prices)

    async def _judgeable(self, texts: list[str], tenant: str) -> list[int]:
        """compressors/verbatim.py's partition: ~20 ms per MB, so big contexts off the loop;
        each document judged once while the analyses keep it (cache/analysis.py)."""
        if sum(map(len, texts)) > self.limits.offload_bytes:
            return await asyncio.to_thread(self._partition, texts, tenant)
        return self._partition(texts, tenant)

    def _visible(self, tenant: str, texts: list[str]) -> tuple[int, ...] | None:
        """Each document's visible characters, counted once while the analyses keep it."""
        memo = self.analyses
        return None if memo is None else memo.each("visible", tenant, texts, visible_in)

    def _partition(self, texts: list[str], tenant: str) -> list[int]:
        memo = self.analyses
        if memo is None:
            return partition_verbatim(texts)
        opaque = memo.each("opaque", tenant, texts, is_opaque)
        return [i for i, flag in enumerate(opaque) if not flag]

    async def _compress(
        self, ctx, texts: list[str], question: str, rate: float, choice: Choice, sizes: Sizes
    ):
        if choice.kind == "check" and choice.decision is not None:  # priced by the stable path
            decision = replace(choice.decision, rate=rate)  # a check over seen documents
        else:
            decision = await self._decide(ctx, texts, question, rate, sizes, choice.held)
        self._decided(ctx, decision)
        if decision.rate is None:
            if decision.for_cost and self.recalibration is not None:
                self.recalibration.after_skip()
            return None
        try:
            # a check selects by score margin: what the question needs, not
            # half of every document, so a grown form gains sentences that matter
            asked = AUTO if rate == AUTO or choice.kind == "check" else decision.rate
            # a new question against a form: its output would be read back only for the
            # same question, which the form records as asked (no job then)
            memo = choice.kind != "check"
            outcome = await self.engine.compress(texts, question, asked, ctx.tenant, memo)
        except Exception as exc:  # noqa: BLE001 - busy, timeout, crash: fails open
            reason = failure_reason(exc)
            log.warning(
                "compression failed open (%s): %s", reason, describe_error(exc, self.log_prompts)
            )
            self.metrics.compress_failures.labels(reason).inc()
            ctx.outcome.decision = failed_open(reason)
            return None
        self._record(ctx, outcome)
        self._learn(ctx.tenant, sizes, outcome)
        return outcome

    async def _decide(
        self, ctx, texts: list[str], question: str, rate: float, sizes: Sizes, held: int = 0
    ):
        """The gate's call; the memo and the features are looked up only when it needs
        them (not for a policy or a short context)."""
        tenant, tokens = ctx.tenant, sizes.tokens()
        early = self.gate.decide_early(tokens, _expected(rate))
        early = early or self.gate.decide_held(tokens, _expected(rate), held, tenant)
        if early is not None:
            return early
        found = await self.engine.lookup(texts, question, rate, tenant)
        per_char = self.gate.compressor_ms_per_token(tenant) / sizes.chars_per_token
        hits = sum(e is not None for e in found)
        return self.gate.decide(
            context_tokens=tokens,
            cached_docs=hits,
            total_docs=len(texts),
            rate=_expected(rate),
            wait_ms=self.engine.expected_wait_ms(per_char),
            seen_docs=await self._seen(texts, found, tenant),
            in_flight=self.engine.in_flight(),
            tenant=tenant,
            held=held,
        )

    async def _seen(self, texts: list[str], found: list, tenant: str) -> int:
        """Output-memo misses whose features are memoized: the gate prices them at the
        seen rate."""
        misses = [t for t, e in zip(texts, found, strict=True) if e is None]
        return await self.engine.seen_documents(misses, tenant) if misses else 0

    def _decided(self, ctx: RequestContext, decision: Decision) -> None:
        ctx.outcome.decision = decision
        self.metrics.compress_decisions.labels(decision.action.value).inc()

    def _record(self, ctx: RequestContext, outcome: Outcome) -> None:
        ctx.outcome.compression = Compression(
            self.engine.name,
            outcome.tokens_before,
            outcome.tokens_after,
            outcome.ms,
            memo_hits=outcome.hits,
            memo_lookups=outcome.hits + outcome.misses,
            features_seen=outcome.seen,
            features_missed=outcome.misses,
        )
        m = self.metrics
        m.compress_tokens.labels("before").inc(outcome.tokens_before)
        m.compress_tokens.labels("after").inc(outcome.tokens_after)
        m.compress_seconds.observe(outcome.ms / 1000)
        m.memo_lookups.labels("hit").inc(outcome.hits)
        m.memo_lookups.labels("miss").inc(outcome.misses)


def _expected(rate: float | str) -> float:
    """The keep rate the gate prices: an adaptive budget's most kept (the least saved)."""
    return AdaptiveBudget().rate if rate == AUTO else rate

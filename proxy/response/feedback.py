"""After the answer: what vLLM reported flows back into metrics, the cost gate and
the prefix registry. Never on the client's critical path; failures fail open.

The gate's prefill samples come from two sources: a streamed response's TTFT with
the usage vLLM reported, and (for every response, streamed or not) the backend's own
prefill metrics, read by `prefill` (a MetricsScraper, proxy/backends/scrape.py) when set.
The metrics outrank TTFTs, and a TTFT teaches only its tenant's view (a tenant can
inflate its own TTFTs: proxy/gate/prefill_law.py).

Per-backend totals live on the backend's record (proxy/backends/endpoint.py): an answer
from a backend that has left the pool meanwhile (discovery) updates nothing about it,
so no label series or state for it comes back after the pool dropped them."""

from __future__ import annotations

import logging
from typing import Any

from cache.prefixes import PrefixRegistry
from cache.writes import BackgroundWrites
from proxy.backends.endpoint import Endpoint, EndpointPool
from proxy.backends.scrape import MetricsScraper
from proxy.context import RequestContext
from proxy.gate.decide import CostGate
from proxy.metrics import Metrics
from proxy.response.usage_tap import cached_tokens

log = logging.getLogger("ragtrim.feedback")


class Feedback:
    def __init__(
        self,
        metrics: Metrics,
        gate: CostGate,
        prefixes: PrefixRegistry,
        pool: EndpointPool | None = None,
        prefill: MetricsScraper | None = None,
    ):
        self.metrics = metrics
        self.gate = gate
        self.prefixes = prefixes
        self.pool = gate.pool if pool is None else pool
        self.writes = BackgroundWrites()  # the prefix registry's records (cache/writes.py)
        self.prefill = prefill  # None: compression.prefill_metrics is off

    def observe(
        self, ctx: RequestContext, backend: str, usage: dict[str, Any] | None, ttft_ms: float | None
    ) -> None:
        if not usage:
            return
        prompt, cached = int(usage.get("prompt_tokens") or 0), cached_tokens(usage)
        ep = self.pool.get(backend)
        if ep is not None:  # else it left the pool while this answer was relaying
            self._learn(ep, prompt, cached, ttft_ms, ctx.tenant)
        if ctx.prefix_key:
            self.writes.spawn(self._record(ctx, backend, prompt, cached))

    def _learn(
        self, ep: Endpoint, prompt: int, cached: int, ttft_ms: float | None, tenant: str
    ) -> None:
        backend = ep.url
        self.metrics.prompt_tokens.labels(backend).inc(prompt)
        self.metrics.cached_tokens.labels(backend).inc(cached)
        ep.prompt_tokens += prompt
        ep.cached_tokens += cached
        if ep.prompt_tokens:
            self.metrics.prefix_hit_ratio.labels(backend).set(ep.cached_tokens / ep.prompt_tokens)
        if ttft_ms is not None:
            self.metrics.prefill_samples.labels(backend, "stream").inc()
            # a TTFT teaches only its tenant's view (proxy/gate/prefill_law.py)
            self.gate.observe_prefill(backend, prompt - cached, ttft_ms, "stream", tenant)
        if self.prefill is not None:
            self.prefill.poke(backend)

    async def _record(self, ctx: RequestContext, backend: str, prompt: int, cached: int) -> None:
        try:
            await self.prefixes.record(
                ctx.prefix_key,
                model=ctx.model or "",
                replica=backend,
                prompt_tokens=prompt,
                cached_tokens=cached,
            )
            if ctx.replay is not None:
                await self.prefixes.remember_replay(ctx.prefix_key, ctx.replay)
        except Exception as exc:  # noqa: BLE001 - stats fail open
            log.warning("prefix registry update failed: %r", exc)

    async def drain(self) -> None:
        if self.prefill is not None:
            await self.prefill.drain()
        await self.writes.drain()

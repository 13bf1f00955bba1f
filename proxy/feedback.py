"""After the answer: what vLLM reported flows back into metrics, the cost gate and
the prefix registry. Never on the client's critical path; failures fail open.

The gate's prefill samples come from two sources: a streamed response's TTFT with
the usage vLLM reported, and (for every response, streamed or not) the backend's own
prefill metrics, read by `prefill` (a MetricsScraper, proxy/backend_metrics.py) when set."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from cache.prefixes import PrefixRegistry
from proxy.context import RequestContext
from proxy.gate import CostGate
from proxy.metrics import Metrics
from proxy.usage import cached_tokens

log = logging.getLogger("ragtrim.feedback")


class Feedback:
    def __init__(self, metrics: Metrics, gate: CostGate, prefixes: PrefixRegistry):
        self.metrics = metrics
        self.gate = gate
        self.prefixes = prefixes
        self._totals: dict[str, list[int]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.prefill = None  # a MetricsScraper, wired by components

    def prefill_sample(self, backend: str, tokens: float, ms: float) -> None:
        """One (tokens, ms) point read from a backend's metrics."""
        self.metrics.prefill_samples.labels(backend, "metrics").inc()
        self.gate.observe_prefill(backend, tokens, ms)

    def observe(self, ctx: RequestContext, backend: str, usage: dict[str, Any] | None,
                ttft_ms: float | None) -> None:  # fmt: skip
        if not usage:
            return
        prompt, cached = int(usage.get("prompt_tokens") or 0), cached_tokens(usage)
        self.metrics.prompt_tokens.labels(backend).inc(prompt)
        self.metrics.cached_tokens.labels(backend).inc(cached)
        totals = self._totals.setdefault(backend, [0, 0])
        totals[0] += prompt
        totals[1] += cached
        if totals[0]:
            self.metrics.prefix_hit_ratio.labels(backend).set(totals[1] / totals[0])
        if ttft_ms is not None:
            self.metrics.prefill_samples.labels(backend, "stream").inc()
            self.gate.observe_prefill(backend, prompt - cached, ttft_ms)
        if self.prefill is not None:
            self.prefill.poke(backend)
        if ctx.prefix_key:
            self._spawn(self._record(ctx, backend, prompt, cached))

    async def _record(self, ctx: RequestContext, backend: str, prompt: int, cached: int) -> None:
        try:
            await self.prefixes.record(ctx.prefix_key, model=ctx.model, replica=backend,
                                       prompt_tokens=prompt, cached_tokens=cached)  # fmt: skip
            if ctx.replay is not None:
                await self.prefixes.remember_replay(ctx.prefix_key, ctx.replay)
        except Exception as exc:  # noqa: BLE001 - stats fail open
            log.warning("prefix registry update failed: %r", exc)

    def _spawn(self, coro) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        if self.prefill is not None:
            await self.prefill.drain()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

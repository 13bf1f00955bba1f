"""Quota stages: the tenant's shared limits (proxy/tenancy/rate_limits.py), checked twice.

`QuotaCheck` runs before segmentation and counts nothing: the request must fit with
what compression cannot shrink (token ids, tools, tool calls, content parts, schemas,
... : everything but the message texts; all of it when this request is not
compressed). A tenant already out, or one whose tools alone exceed what is left, is
refused before any segmentation or compression runs.
Why: docs/decisions/0041-tenancy-quotas-accounting-owners.md.

`QuotaStage` runs after compress and canonicalize and counts the request, so the tokens
it counts are the ones that go upstream: compression buys quota. Over a limit: a 429
in the envelope (RateLimited, with Retry-After and OpenAI's x-ratelimit-* headers);
admitted: the same headers ride on the answer, as OpenAI's API sends them on every
response. A body above `offload_bytes` is measured in a worker thread.

The metered pass-through routes (/invocations, the batch route, /inference/v1/generate,
embeddings and the pooling routes) have no pipeline: the forwarder calls `QuotaStage` on
them directly, so they are admitted, counted and refused in the same window, with the
same 429, as chat. A body counts as the requests its route says (`Route.requests_in`: a
batch's conversations).
"""

from __future__ import annotations

import asyncio

from proxy.context import RequestContext
from proxy.metrics import Metrics
from proxy.tenancy.accounting import tenant_label
from proxy.tenancy.rate_limits import PromptSize, RateLimited, RateLimiter, Verdict, prompt_size


class QuotaStage:
    name = "quota"

    def __init__(
        self,
        limiter: RateLimiter,
        metrics: Metrics,
        known: frozenset[str] | None,
        offload_bytes: int,
    ):
        self.limiter = limiter
        self.metrics = metrics
        self.known = known  # tenants a metric label may name (None: none, "all")
        self.offload_bytes = offload_bytes  # compression.limits.offload_bytes

    async def __call__(self, ctx: RequestContext) -> None:
        size = await self.size(ctx)
        asked = ctx.requests
        verdict = self.judged(ctx, await self.limiter.admit(ctx.tenant, size.tokens, True, asked))
        if verdict is not None:
            ctx.outcome.quota = verdict

    async def size(self, ctx: RequestContext) -> PromptSize:
        if len(ctx.raw) > self.offload_bytes:
            return await asyncio.to_thread(prompt_size, ctx.body)
        return prompt_size(ctx.body)

    def judged(self, ctx: RequestContext, verdict: Verdict | None) -> Verdict | None:
        """The verdict, or a 429 (counted) when it refuses."""
        if verdict is not None and not verdict.allowed:
            label = tenant_label(ctx.tenant, self.known)
            self.metrics.quota_refusals.labels(label, verdict.refused_by).inc()
            raise RateLimited(verdict)
        return verdict


class QuotaCheck:
    name = "quota_check"

    def __init__(self, quota: QuotaStage, rate: float | str | None):
        self.quota = quota  # the same limiter, metrics and labels
        self.rate = rate  # compression's default keep rate (None: compression is off)

    async def __call__(self, ctx: RequestContext) -> None:
        size = await self.quota.size(ctx)
        compressed = ctx.options.keep_rate(self.rate) is not None
        tokens = max(1, size.fixed if compressed else size.tokens)  # out: refused
        verdict = await self.quota.limiter.admit(ctx.tenant, tokens, False, ctx.requests)
        self.quota.judged(ctx, verdict)

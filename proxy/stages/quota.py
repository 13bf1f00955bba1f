"""Quota stage: the tenant's shared limits (proxy/ratelimit.py), after compression.

It runs after compress and canonicalize, so the tokens it counts are the ones that go
upstream: compression buys quota. Over a limit: a 429 in the envelope (RateLimited,
with Retry-After and OpenAI's x-ratelimit-* headers); admitted: the same headers ride
on the answer, as OpenAI's API sends them on every response.
"""

from __future__ import annotations

from proxy.accounting import tenant_label
from proxy.context import RequestContext
from proxy.metrics import Metrics
from proxy.ratelimit import RateLimited, RateLimiter, estimate_tokens


class QuotaStage:
    name = "quota"

    def __init__(self, limiter: RateLimiter, metrics: Metrics, known: frozenset[str]):
        self.limiter = limiter
        self.metrics = metrics
        self.known = known  # tenants a metric label may name

    async def __call__(self, ctx: RequestContext) -> None:
        verdict = await self.limiter.admit(ctx.tenant, estimate_tokens(ctx.body))
        if verdict is None:
            return
        if not verdict.allowed:
            label = tenant_label(ctx.tenant, self.known)
            self.metrics.quota_refusals.labels(label, verdict.refused_by).inc()
            raise RateLimited(verdict)
        ctx.response_headers.update(verdict.headers())

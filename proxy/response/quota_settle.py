"""`QuotaSettleHook`: with `tenancy.quotas.charge=computed`, an answered request's tokens in its
tenant's window become what vLLM computed (its prompt less the tokens it served from
its prefix cache), so a cache hit and a compressed document cost what they cost the
engine. Admission cannot know that (proxy/stages/quota.py counts the prompt that goes
upstream); the answer's usage (the answer hook's, proxy/telemetry/record.py) can.

The settlement is a store write nobody waits for (cache/writes.py), after the last
byte; an answer without usage, or an error, keeps the admission's count.
"""

from __future__ import annotations

from cache.writes import BackgroundWrites
from proxy.context import RequestContext
from proxy.tenancy.rate_limits import RateLimiter, Verdict
from proxy.upstream.exchange import Exchange


class QuotaSettleHook:
    """After the answer hook, which reads the usage."""

    def __init__(self, limiter: RateLimiter, writes: BackgroundWrites):
        self.limiter = limiter
        self.writes = writes

    def done(self, ctx: RequestContext, ex: Exchange, error: BaseException | None) -> None:
        verdict, usage = ctx.outcome.quota, ctx.outcome.usage
        if error is not None or usage is None or not isinstance(verdict, Verdict):
            return
        self.writes.spawn(self.limiter.settle(ctx.tenant, verdict, usage.computed_tokens))

"""The quota stage called directly: headers on admitted requests, a 429 past the limit,
tokens counted from the body as it will be sent (after compression)."""

import pytest

from cache.store import MemoryStore
from proxy.context import RequestContext
from proxy.metrics import Metrics
from proxy.settings import QuotaSettings
from proxy.stages.quota import QuotaStage
from proxy.tenancy.rate_limits import RateLimited, RateLimiter


def ctx_for(tenant: str, text: str) -> RequestContext:
    body = {"model": "m", "messages": [{"role": "user", "content": text}]}
    ctx = RequestContext("r", "chat", b"{}", body, {})
    ctx.tenant = tenant
    return ctx


async def test_admitted_carry_headers_then_429_and_the_metric():
    metrics = Metrics()
    limiter = RateLimiter(MemoryStore(), QuotaSettings(tokens_per_minute=48), metrics,
                          shared=False)  # fmt: skip
    stage = QuotaStage(limiter, metrics, frozenset({"acme"}), offload_bytes=65_536)
    first = ctx_for("acme", "x" * 80)  # 20 tokens of text, 4 of {"role":"user"}
    await stage(first)
    assert first.outcome.quota.headers()["x-ratelimit-remaining-tokens"] == "24"
    assert "x-ratelimit-limit-requests" not in first.outcome.quota.headers()  # no request limit
    with pytest.raises(RateLimited) as refused:
        await stage(ctx_for("acme", "x" * 160))
    assert refused.value.status == 429 and refused.value.verdict.refused_by == "tokens"
    assert metrics.quota_refusals.labels("acme", "tokens")._value.get() == 1
    smaller = ctx_for("acme", "x" * 80)  # what a compressed prompt would weigh: 24 tokens
    await stage(smaller)
    assert smaller.outcome.quota.headers()["x-ratelimit-remaining-tokens"] == "0"


async def test_a_tenant_without_limits_is_left_alone():
    settings = QuotaSettings(tenants={"acme": {"requests_per_minute": 1}})
    limiter = RateLimiter(MemoryStore(), settings, Metrics(), shared=False)
    stage = QuotaStage(limiter, Metrics(), frozenset(), offload_bytes=65_536)
    ctx = ctx_for("globex", "hi")
    for _ in range(3):
        await stage(ctx)
    assert ctx.outcome.quota is None

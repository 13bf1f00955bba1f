"""The window script on the real Redis (127.0.0.1:6379): atomic across clients, aligned
to the server's clock, recovering at the next window; hincr's TTL lands."""

import asyncio
import uuid

import pytest
import redis

from cache.store import RedisStore
from proxy.metrics import Metrics
from proxy.settings import QuotaSettings
from proxy.tenancy.rate_limits import RateLimiter

pytestmark = pytest.mark.integration
URL = "redis://127.0.0.1:6379/0"


def server_ms() -> int:
    seconds, micros = redis.Redis.from_url(URL).time()
    return seconds * 1000 + micros // 1000


async def wait_window_start(window_ms: int, margin_ms: int = 30) -> None:
    await asyncio.sleep(((window_ms - server_ms() % window_ms) + margin_ms) / 1000)


async def test_many_clients_at_once_admit_exactly_the_limit_and_the_window_recovers():
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    settings = QuotaSettings(requests_per_minute=7, tokens_per_minute=0, window_s=2)
    stores = [RedisStore(URL, timeout=2.0) for _ in range(5)]  # a loaded CI machine: no outage
    limiters = [RateLimiter(s, settings, Metrics(), shared=True) for s in stores]
    try:
        await asyncio.gather(
            *(lim.admit(f"warm-{tenant}", 0) for lim in limiters for _ in range(8))
        )
        await wait_window_start(2000)
        verdicts = await asyncio.gather(*(limiters[i % 5].admit(tenant, 3) for i in range(40)))
        assert sum(v.allowed for v in verdicts) == 7  # atomic: no slack per client
        assert not any(s.outage.down for s in stores)  # Redis answered every call
        refused = [v for v in verdicts if not v.allowed]
        assert all(v.requests == 7 and 0 < v.reset_ms <= 2000 for v in refused)
        await asyncio.sleep(refused[0].reset_ms / 1000 + 0.05)
        assert (await limiters[0].admit(tenant, 3)).allowed
    finally:
        for store in stores:
            await store.aclose()


async def test_tokens_limit_and_hincr_ttl_on_redis():
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    store = RedisStore(URL, timeout=0.5)
    limiter = RateLimiter(store, QuotaSettings(tokens_per_minute=100), Metrics(), shared=True)
    try:
        assert [(await limiter.admit(tenant, n)).allowed for n in (60, 50, 40)] == [
            True, False, True]  # fmt: skip
        await store.hincr(f"usage:{tenant}", {"requests": 1}, ttl=30)
        assert await store.hgetall(f"usage:{tenant}") == {"requests": "1"}
        ttl_ms = redis.Redis.from_url(URL).pttl(f"ragtrim:usage:{tenant}")
        assert 0 < ttl_ms <= 30_000
    finally:
        await store.aclose()

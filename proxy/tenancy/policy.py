"""The tenancy policy, one object built once by the composition root: who asks
(`Identity`), what a tenant may spend (`RateLimiter`, None without limits), what it spent
(`Accounting`, None when accounting is off) and whose Responses ids are whose
(`ResponseOwners`). The quota stages (proxy/stages/quota.py), the telemetry middleware
and the forwarder take their parts from here.

The limiter and the ledger get their own Redis connections and timeouts
(`redis.quota_timeout_s`, `redis.accounting_timeout_s`): a cache read may give up in
0.1 s, a limit check that gives up fails open, a ledger write that gives up is lost.
"""

from __future__ import annotations

from dataclasses import dataclass

from cache.store import KVStore, MemoryStore, RedisStore
from proxy.metrics import Metrics
from proxy.settings import Settings
from proxy.tenancy.accounting import Accounting
from proxy.tenancy.identity import Identity
from proxy.tenancy.owners import ResponseOwners
from proxy.tenancy.rate_limits import RateLimiter


@dataclass(eq=False)
class Tenancy:
    identity: Identity
    owners: ResponseOwners
    limiter: RateLimiter | None = None  # None: no limit configured (tenancy.quotas.*)
    accounting: Accounting | None = None  # None: tenancy.accounting.enabled false

    async def aclose(self) -> None:
        if self.limiter is not None:
            await self.limiter.aclose()
        if self.accounting is not None:
            await self.accounting.aclose()


def make_tenancy(settings: Settings, store: KVStore, metrics: Metrics) -> Tenancy:
    q = settings.tenancy.quotas
    limiter = None
    if q.active:
        own = own_store(settings, store, metrics, settings.redis.quota_timeout_s)
        limiter = RateLimiter(own, q, metrics, shared=isinstance(store, RedisStore),
                              owns_store=own is not store)  # fmt: skip
    return Tenancy(
        Identity(settings.tenancy, settings.tenancy.accounting.admin_key),
        ResponseOwners(settings.tenancy, store),
        limiter,
        make_accounting(settings, store, metrics) if settings.tenancy.accounting.enabled else None,
    )


def own_store(settings: Settings, store: KVStore, metrics: Metrics, timeout: float) -> KVStore:
    """Its own Redis connections and `timeout`; the shared store without Redis."""
    if not settings.redis.url or not isinstance(store, RedisStore):
        return store
    return RedisStore(settings.redis.url, timeout=timeout,
                      on_error=lambda op, exc: metrics.store_errors.labels(op).inc(),
                      fallback=MemoryStore(max_items=1000, max_bytes=1 << 20))  # fmt: skip


def make_accounting(settings: Settings, store: KVStore, metrics: Metrics) -> Accounting:
    ledger = own_store(settings, store, metrics, settings.redis.accounting_timeout_s)
    return Accounting(ledger, settings.tenancy.accounting, settings.tenancy, metrics,
                      owns_store=ledger is not store)  # fmt: skip

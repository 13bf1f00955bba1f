"""Redis, in one group: where it is and how long ragtrim waits for it. Two users, two
budgets: the cache's calls sit on every request's path and fall back to the in-process
store (cache/outage.py); the quota script and the accounting ledger have their own
connections and longer budgets (proxy/tenancy/rate_limits.py, proxy/tenancy/accounting.py).
What quotas do while Redis is down is a quota policy: tenancy.quotas.redis_down."""

from __future__ import annotations

from pydantic import Field

from cache.outage import REDIS_TIMEOUT_S
from proxy.config.section import Section


class RedisSettings(Section):
    url: str = Field("", description="Redis URL for shared state; empty = in-process store.")
    timeout_s: float = Field(
        REDIS_TIMEOUT_S,
        gt=0,
        description="Seconds a Redis call of the cache may take; slower counts as Redis down "
        "(served by the in-process store, cache/outage.py).",
    )
    quota_timeout_s: float = Field(
        0.25,
        gt=0,
        description="Seconds the quota script may take on Redis (its own connections, apart "
        "from the cache's); slower counts as Redis down (tenancy.quotas.redis_down).",
    )
    accounting_timeout_s: float = Field(
        1.0,
        gt=0,
        description="Seconds an accounting write may take on Redis (its own connections). It "
        "runs after the answer's last byte, so waiting costs no client time; a cache-sized "
        "budget lost counts to the in-process store on any stall of a busy machine.",
    )

"""Per-tenant accounting shared by every replica: what each tenant sent and saved.

One hash per tenant and period in the shared store (cache/store.py `hincr`, with a
TTL so old periods go away by themselves):

    usage:{tenant}:day:2026-12-01     expires after 3 days
    usage:{tenant}:month:2026-12      expires after 62 days

fields: the ledger's (proxy/tenancy/ledger.py: client, sent, removed, cached, computed and
completion tokens, the context before and after compression), and each again per
model as `model:{name}:{field}`. Periods
are UTC. Every replica adds to the same hashes (HINCRBYFLOAT is atomic), through the
ledger's own connections with a budget of redis.accounting_timeout_s, not the cache's
(docs/decisions/0041-tenancy-quotas-accounting-owners.md): the writes run after the
answer's last byte. When Redis
is down the store's in-process fallback takes the counts and the failure is counted
(ragtrim_store_errors{op="hincr"}): those requests are missing from the shared view.

The Prometheus counters carry a `tenant` label, but name no tenant unless
`tenancy.metrics_tenant_labels` asks for it: /metrics is readable with any valid key,
and per-tenant series would tell every tenant every other tenant's name, traffic,
tokens and cache hits. Off (the default) the label is "all", one series for the
fleet; per-tenant figures stay in the admin usage report (/v1/ragtrim/usage). On,
the label is bounded to the configured tenants (tenancy.api_keys' tenants and the
default tenant); any other name is "other", so a client cannot grow the series
without limit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from cache.store import KVStore
from proxy.metrics import Metrics
from proxy.settings import AccountingSettings, TenancySettings
from proxy.tenancy.ledger import split_models, with_model

ALL_TENANTS = "all"  # the label of every tenant while per-tenant labels are off
DAY_TTL_S = 3 * 24 * 3600
MONTH_TTL_S = 62 * 24 * 3600


def known_tenants(tenancy: TenancySettings) -> frozenset[str]:
    """The tenants requests can have: the keys' (an unknown key is a 401), or else the
    default tenant alone."""
    return frozenset(tenancy.api_keys.values()) or frozenset({tenancy.default_tenant})


def labelled_tenants(tenancy: TenancySettings) -> frozenset[str] | None:
    """The tenants a metric label may name; None: none (metrics_tenant_labels off)."""
    return known_tenants(tenancy) if tenancy.metrics_tenant_labels else None


def tenant_label(tenant: str, known: frozenset[str] | None) -> str:
    """`known`: labelled_tenants' (None: every tenant is ALL_TENANTS)."""
    if known is None:
        return ALL_TENANTS
    if tenant not in known:
        return "other"
    return tenant or "default"


def periods(now: float) -> dict[str, tuple[str, float]]:
    """Period name → (its key part, the key's TTL) for the instant `now` (UTC)."""
    day = datetime.fromtimestamp(now, UTC)
    return {
        "today": (f"day:{day:%Y-%m-%d}", DAY_TTL_S),
        "month": (f"month:{day:%Y-%m}", MONTH_TTL_S),
    }


class Accounting:
    def __init__(
        self,
        store: KVStore,
        settings: AccountingSettings,
        tenancy: TenancySettings,
        metrics: Metrics,
        clock: Callable[[], float] = time.time,
        owns_store: bool = False,
    ):
        self.store = store
        self.owns_store = owns_store
        self.settings = settings
        self.metrics = metrics
        self.known = labelled_tenants(tenancy)  # for metric labels only
        self.clock = clock
        self._day: tuple[int, dict[str, tuple[str, float]]] | None = None

    def periods(self) -> dict[str, tuple[str, float]]:
        """`periods` of now, formatted once per UTC day (a datetime and two strftime per
        request were ~2 % of a plain chat's CPU here)."""
        now = self.clock()
        day = int(now // 86_400)  # Unix time has no leap seconds: a UTC day is 86,400 s
        if self._day is None or self._day[0] != day:
            self._day = (day, periods(now))
        return self._day[1]

    async def record(self, tenant: str, entry: dict[str, int], model: str = "") -> None:
        """Add one answered request's ledger entry (proxy/tenancy/ledger.py `entry_of`)."""
        label = tenant_label(tenant, self.known)
        m = self.metrics
        m.tenant_requests.labels(label).inc(entry["requests"])
        m.tenant_prompt_tokens.labels(label).inc(entry["prompt_tokens"])
        m.tenant_tokens_removed.labels(label).inc(entry["tokens_removed"])
        m.tenant_cached_tokens.labels(label).inc(entry["cached_tokens"])
        m.tenant_computed_tokens.labels(label).inc(entry["computed_tokens"])
        m.tenant_completion_tokens.labels(label).inc(entry["completion_tokens"])
        fields = with_model(entry, model) if model else entry
        for part, ttl in self.periods().values():
            await self.store.hincr(f"usage:{tenant}:{part}", fields, ttl)

    async def totals(self, tenant: str) -> dict[str, Any]:
        """Today's and this month's totals for one tenant, with their costs."""
        out: dict[str, Any] = {"tenant": tenant}
        for name, (part, _) in self.periods().items():
            raw = await self.store.hgetall(f"usage:{tenant}:{part}")
            totals, models = split_models(raw)
            out[name] = totals | self._costs(totals) | {"models": models}
        return out

    def _costs(self, totals: dict[str, int]) -> dict[str, Any]:
        """At the configured price: what was sent, what compression kept from being sent."""
        per_token = self.settings.price_per_1k_prompt_tokens / 1000
        sent = totals["prompt_tokens"] * per_token
        saved = max(totals["tokens_removed"], 0) * per_token
        return {
            "cost": round(sent, 6),
            "cost_saved": round(saved, 6),
            "cost_without_ragtrim": round(sent + saved, 6),
            "currency": self.settings.currency,
        }

    async def aclose(self) -> None:
        """Close the store when it is the ledger's own (components.make_accounting)."""
        if self.owns_store:
            await self.store.aclose()

    async def report(self, tenants: Iterable[str]) -> dict[str, Any]:
        return {
            "object": "ragtrim.usage",
            "price_per_1k_prompt_tokens": self.settings.price_per_1k_prompt_tokens,
            "data": [await self.totals(t) for t in sorted(tenants)],
        }

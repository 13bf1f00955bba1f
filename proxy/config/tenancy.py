"""Tenancy (API keys, cache salts), the shared store's bounds and the warm-up."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from cache.lru import MEMORY_BYTES
from cache.prefixes import HOT_KEEP, PREFIX_TTL_S
from proxy.config.operations import AccountingSettings, QuotaSettings
from proxy.config.section import Section

MIN_SALT_SECRET = 16


class TenancySettings(Section):
    api_keys: dict[str, str] = Field(
        default_factory=dict, description="API key → tenant. When set, other keys get 401."
    )
    default_tenant: str = Field(
        "", description="Tenant of requests without tenancy; empty = cache_salt left as sent."
    )
    salt_secret: str = Field(
        "",
        description="Secret mixed into each tenant's cache_salt (makes salts unguessable); "
        "required (16+ characters) when api_keys are set: ragtrim refuses to start without it.",
    )
    backend_header: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Send x-ragtrim-backend (the backend URL) on responses; auto = on "
        "without api_keys, off with them (a tenant has no need to learn backend URLs).",
    )

    metrics_tenant_labels: bool = Field(
        False,
        description="Name each tenant in the tenant label of the per-tenant counters on "
        '/metrics (ragtrim_tenant_*, ragtrim_quota_refusals). Off: one series, tenant="all" '
        "(any valid key reads /metrics; per-tenant figures stay in /v1/ragtrim/usage).",
    )
    response_owners: int = Field(
        20_000,
        ge=1,
        description="Stored Responses API ids whose tenant each replica remembers, shared "
        "equally by the configured tenants (each keeps its most recently used "
        "response_owners / tenants; one tenant's flood never evicts another's); a GET, "
        "cancel or previous_response_id of an id not known for the asking tenant is a 404. "
        "With Redis every id is also shared (first writer wins).",
    )
    response_owner_ttl_s: float = Field(
        7 * 24 * 3600.0,
        gt=0,
        description="Seconds a response id's tenant is kept in Redis (the shared record).",
    )
    quotas: QuotaSettings = Field(default_factory=QuotaSettings)
    accounting: AccountingSettings = Field(default_factory=AccountingSettings)

    @model_validator(mode="after")
    def _secret_with_keys(self) -> TenancySettings:
        """Without a secret, anyone who knows a tenant's name can compute its salt:
        tenancy without one is a configuration error, not a default."""
        if self.api_keys and len(self.salt_secret) < MIN_SALT_SECRET:
            raise ValueError(
                f"tenancy.api_keys is set but tenancy.salt_secret is "
                f"{'empty' if not self.salt_secret else 'too short'}: set "
                f"RAGTRIM_TENANCY__SALT_SECRET (or --tenancy-salt-secret) to a random string "
                f"of {MIN_SALT_SECRET}+ characters, e.g. `openssl rand -hex 32`, and keep it "
                "stable across restarts and replicas (it keys every tenant's cache_salt)"
            )
        return self

    def shows_backend(self) -> bool:
        return self.backend_header == "on" or (self.backend_header == "auto" and not self.api_keys)


class StoreSettings(Section):
    """Bounded memory in the stores. Why: docs/decisions/0021-bounded-work-per-request.md."""

    memory_bytes: int = Field(
        MEMORY_BYTES,
        ge=1024,
        description="Bytes the in-process store may hold (keys, values, hashes, sorted sets; "
        "least recently used go first). Also the Redis store's outage fallback.",
    )
    prefix_ttl_s: float = Field(
        PREFIX_TTL_S,
        gt=0,
        description="Seconds a prefix's statistics live after its last request.",
    )
    hot_prefixes: int = Field(
        HOT_KEEP, ge=1, description="Prefixes the hot set keeps (warm-up reads its top N)."
    )


class WarmupSettings(Section):
    enabled: bool = Field(True, description="Replay hot prefixes to a replica turning healthy.")
    top_n: int = Field(16, ge=0, description="How many hot prefixes to replay.")
    concurrency: int = Field(2, ge=1, description="Replays in flight at once.")
    budget_s: float = Field(60.0, gt=0, description="Seconds a warm-up may take in all.")

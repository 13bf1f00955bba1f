"""What operators run a fleet with: the access log, telemetry's bounds, per-tenant
accounting and quotas."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from proxy.config.section import Section


class AccessLogSettings(Section):
    enabled: bool = Field(
        False, description="One JSON line per request on stderr (logger ragtrim.access)."
    )


class TelemetrySettings(Section):
    """Sizes of what logs and traces carry: proxy/http/capped.py.
    Why: docs/decisions/0021-bounded-work-per-request.md."""

    max_value_chars: int = Field(
        256,
        ge=16,
        description="Longest string an access-log field or span attribute carries (model, "
        "request id, path, tenant); longer ones are cut and marked …[+N].",
    )
    max_request_id_chars: int = Field(
        128,
        ge=16,
        description="Longest x-request-id kept from a client; a longer one, or one with "
        "spaces, control or non-ASCII characters, is replaced by a generated id (never echoed).",
    )


class AccountingSettings(Section):
    """Per-tenant usage counters in the shared store (proxy/tenancy/accounting.py)."""

    enabled: bool = Field(
        True, description="Count requests and tokens per tenant, per day and month."
    )
    price_per_1k_prompt_tokens: float = Field(
        0.0, ge=0, description="Price of 1k prompt tokens, for the costs /v1/ragtrim/usage shows."
    )
    currency: str = Field("USD", description="Currency of the price (shown as is).")
    admin_key: str = Field(
        "", description="Bearer key that sees every tenant's usage; empty = none does."
    )


class TenantQuota(Section):
    requests_per_minute: int | None = Field(None, ge=0, description="Requests per window.")
    tokens_per_minute: int | None = Field(None, ge=0, description="Prompt tokens per window.")


class QuotaSettings(Section):
    """Per-tenant limits shared by every replica (proxy/tenancy/rate_limits.py): a fixed window
    aligned to the Redis server's clock, one atomic Lua script per request."""

    requests_per_minute: int = Field(
        0, ge=0, description="Requests per tenant per window (0 = no limit)."
    )
    tokens_per_minute: int = Field(
        0,
        ge=0,
        description="Prompt tokens per tenant per window, counted after compression "
        "(0 = no limit).",
    )
    tenants: dict[str, TenantQuota] = Field(
        default_factory=dict,
        description='Per-tenant overrides: {"acme": {"requests_per_minute": 600}} (JSON/YAML).',
    )
    window_s: float = Field(
        60.0, gt=0, description="Window length in seconds (60: the limits are per minute)."
    )
    redis_down: Literal["open", "local"] = Field(
        "open",
        description="Redis unreachable: open = admit (counted), local = each replica "
        "enforces the limits alone.",
    )
    charge: Literal["sent", "computed"] = Field(
        "sent",
        description="What a request's tokens cost: sent = the prompt that goes upstream "
        "(counted at admission); computed = what vLLM prefilled (settled once it answers: "
        "its prefix-cache hits are free).",
    )

    def limits_of(self, tenant: str) -> tuple[int, int]:
        """(requests, tokens) per window for `tenant`; 0 = no limit."""
        own = self.tenants.get(tenant) or TenantQuota()
        rpm = (
            self.requests_per_minute if own.requests_per_minute is None else own.requests_per_minute
        )
        tpm = self.tokens_per_minute if own.tokens_per_minute is None else own.tokens_per_minute
        return rpm, tpm

    @property
    def active(self) -> bool:
        tenants = self.tenants.values()
        per_tenant = any(q.requests_per_minute or q.tokens_per_minute for q in tenants)
        return bool(self.requests_per_minute or self.tokens_per_minute or per_tenant)

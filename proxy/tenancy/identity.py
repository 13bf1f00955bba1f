"""Who is asking: a request's `Principal`, resolved once from its key by `Identity`.

With `tenancy.api_keys` configured, the key names the tenant; an unknown key resolves to
no tenant (a 401 wherever a key is needed: `Principal.require`). Without keys the
`default_tenant` applies. The key is `Authorization: Bearer` (OpenAI's clients), else
`x-api-key` (the anthropic SDK's); a request that sends both is judged by the bearer.
Keys are compared in constant time, every configured key each time (`match_key`).

The tenant's `salt` is an HMAC of its name keyed by `tenancy.salt_secret` (settings
require 16+ characters whenever keys are set): written over the client's `cache_salt`,
it keeps one tenant from probing another's prefix cache (vLLM CVE-2025-46570: hits are
measurable from 8 tokens). Without a tenant name there is no salt and the client's
passes. `admin` is the accounting admin key (`tenancy.accounting.admin_key`), which sees every
tenant's usage report.

proxy/http/principal.py resolves a request once, at the edge, and keeps the Principal in
the ASGI scope: every route, the telemetry and the pipeline read that one.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from proxy.errors import ProxyError, Unauthorized
from proxy.settings import TenancySettings


@dataclass(frozen=True)
class Principal:
    tenant: str | None  # None: a key was required and the one presented is unknown
    salt: str | None  # the tenant's cache_salt; None: the client's own passes
    keyed: bool  # tenancy.api_keys are configured
    admin: bool = False  # the accounting admin key
    refusal: ProxyError | None = None  # why it has no tenant (a 401), when it has none

    @property
    def valid(self) -> bool:
        """A tenant was resolved (always, without api_keys)."""
        return self.tenant is not None

    def require(self) -> str:
        """The tenant; the refusal (401) when there is none."""
        if self.tenant is None:
            raise self.refusal or Unauthorized("Incorrect API key provided.")
        return self.tenant


def tenant_salt(tenant: str, secret: str) -> str:
    return hmac.new(secret.encode(), tenant.encode(), hashlib.sha256).hexdigest()[:32]


def presented_key(headers: dict[str, str]) -> str:
    auth = headers.get("authorization", "")
    if auth:
        return auth[7:].strip() if auth.lower().startswith("bearer ") else ""
    return headers.get("x-api-key", "").strip()


def match_key(presented: str, keys: dict[str, str]) -> str | None:
    """The tenant of `presented`, compared with every configured key in constant time: a
    dict lookup would exit early, and the time saved tells how many leading bytes match."""
    given = presented.encode()
    found = None
    for key, tenant in keys.items():
        if hmac.compare_digest(given, key.encode()):  # no early exit
            found = tenant
    return found


class Identity:
    """The tenancy policy's identity part, built once by the composition root."""

    def __init__(self, settings: TenancySettings, admin_key: str = ""):
        self.settings = settings
        self.admin_key = admin_key.encode()

    def resolve(self, headers: dict[str, str]) -> Principal:
        keys = self.settings.api_keys
        key = presented_key(headers)
        admin = bool(self.admin_key) and hmac.compare_digest(key.encode(), self.admin_key)
        tenant = match_key(key, keys) if keys else self.settings.default_tenant
        return Principal(tenant, self.salt_of(tenant), bool(keys), admin)

    def refused(self, error: ProxyError) -> Principal:
        """The principal of a request whose head could not be read (two keys: a 401)."""
        return Principal(None, None, bool(self.settings.api_keys), refusal=error)

    def salt_of(self, tenant: str | None) -> str | None:
        return tenant_salt(tenant, self.settings.salt_secret) if tenant else None

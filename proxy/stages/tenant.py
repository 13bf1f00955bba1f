"""Tenant stage: who is asking, and the cache_salt that isolates their prefix cache.

With `tenancy.api_keys` configured, the bearer key names the tenant (an unknown key
is a 401) and `cache_salt` is set from the tenant, overwriting whatever the client
sent: a tenant must not be able to probe another's prefix cache (vLLM
CVE-2025-46570: hits are measurable from 8 tokens). Without api_keys, the
`default_tenant` applies; when that is empty, the client's cache_salt passes as sent.
API keys are compared in constant time (`match_key`). The salt is an HMAC of the tenant
keyed by `tenancy.salt_secret`, which settings require (16+ characters) whenever
api_keys are set: without it anyone who knows a tenant's name could compute its salt
(issue 23). On the HTTP routes the forwarder checks the key on the request head,
before the body is read; this stage checks it again (one constant-time compare per
key), so the pipeline holds on its own. `ctx.tenant` also scopes the chunk memo
(cache/keys.py); the prefix registry and replay bodies are keyed by the prefix key,
which covers the tenant's salt set here. The pass-through routes whose vLLM request
takes a salt get the same one from `salt_of` (issue 33: /v1/responses carried the
client's own); `vouches` says whether a request may steer ragtrim's telemetry (the
client's sampled flag), which only a valid key may when keys are configured.
"""

from __future__ import annotations

import hashlib
import hmac

from proxy.context import RequestContext
from proxy.errors import Unauthorized
from proxy.settings import TenancySettings


def tenant_salt(tenant: str, secret: str) -> str:
    return hmac.new(secret.encode(), tenant.encode(), hashlib.sha256).hexdigest()[:32]


def presented_key(headers: dict[str, str]) -> str:
    """The client's key: `Authorization: Bearer` (OpenAI's clients), else `x-api-key`
    (the anthropic SDK's, issue 31); a request that sends both is judged by the bearer."""
    auth = headers.get("authorization", "")
    if auth:
        return auth[7:].strip() if auth.lower().startswith("bearer ") else ""
    return headers.get("x-api-key", "").strip()


def match_key(presented: str, keys: dict[str, str]) -> str | None:
    """The tenant of `presented`, comparing it with every configured key in constant
    time: a dict lookup hashes the key and compares it with early exit, and the time
    an early exit saves tells an attacker how many leading bytes were right."""
    given = presented.encode()
    found = None
    for key, tenant in keys.items():
        if hmac.compare_digest(given, key.encode()):  # no early exit: every key is compared
            found = tenant
    return found


class TenantStage:
    name = "tenant"

    def __init__(self, settings: TenancySettings):
        self.settings = settings

    def authenticate(self, headers: dict[str, str]) -> str:
        """The tenant of a request (401 for an unknown key when keys are configured).
        Every route that reaches a backend or the memo calls this: the traffic routes
        through this stage, the pass-through routes and /v1/compress directly."""
        keys = self.settings.api_keys
        if not keys:
            return self.settings.default_tenant
        tenant = match_key(presented_key(headers), keys)
        if tenant is None:
            raise Unauthorized("Incorrect API key provided.")
        return tenant

    def salt_of(self, tenant: str) -> str | None:
        """The cache_salt of `tenant`; None without one (the client's salt passes)."""
        return tenant_salt(tenant, self.settings.salt_secret) if tenant else None

    def vouches(self, headers: dict[str, str]) -> bool:
        """True without api_keys (nobody has a key to show), else for a valid key."""
        if not self.settings.api_keys:
            return True
        try:
            self.authenticate(headers)
        except Unauthorized:
            return False
        return True

    async def __call__(self, ctx: RequestContext) -> None:
        ctx.tenant = self.authenticate(ctx.headers)
        salt = self.salt_of(ctx.tenant)
        if salt is not None:
            ctx.prompt.set("cache_salt", salt)  # a client's own salt is overwritten

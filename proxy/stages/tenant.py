"""Tenant stage: the request's tenant and the cache_salt that isolates its prefix cache,
from the Principal the edge resolved (proxy/http/principal.py; identity and salts:
proxy/tenancy/identity.py). With a salt, it is written over whatever `cache_salt` the
client sent; without one (no tenant name) the client's passes. `ctx.tenant` also scopes
the chunk memo (cache/keys.py); the prefix registry and replay bodies are keyed by the
prefix key, which covers the salt set here.

A context made without a Principal (warm-up replays, tests) is resolved here from its
headers, once.
"""

from __future__ import annotations

from proxy.context import RequestContext
from proxy.tenancy.identity import Identity


class TenantStage:
    name = "tenant"

    def __init__(self, identity: Identity):
        self.identity = identity

    async def __call__(self, ctx: RequestContext) -> None:
        principal = ctx.principal
        if principal is None:
            principal = ctx.principal = self.identity.resolve(ctx.headers)
        ctx.tenant = principal.require()
        if principal.salt is not None:
            ctx.prompt.set("cache_salt", principal.salt)  # a client's own salt is overwritten

"""GET /v1/ragtrim/usage: a tenant's totals for today and this month, with costs.

Who sees what: the `tenancy.accounting.admin_key` (compared in constant time) sees every
configured tenant; any other caller is authenticated like a traffic request (tenancy
keys: a 401 for an unknown key) and sees only its own tenant. Without tenancy every
caller is the default tenant. The totals are the shared store's, so every replica
answers the same (proxy/tenancy/accounting.py).
"""

from __future__ import annotations

from typing import Any

from proxy.errors import NotFound
from proxy.settings import Settings
from proxy.tenancy.accounting import Accounting, known_tenants
from proxy.tenancy.identity import Principal


async def usage_report(
    accounting: Accounting | None, settings: Settings, principal: Principal
) -> dict[str, Any]:
    if accounting is None:
        raise NotFound("usage accounting is off (tenancy.accounting.enabled)", code="not_found")
    if principal.admin:
        return await accounting.report(known_tenants(settings.tenancy))
    return await accounting.report([principal.require()])  # 401 for an unknown key

"""GET /v1/ragtrim/usage: a tenant's totals for today and this month, with costs.

Who sees what: the `accounting.admin_key` (compared in constant time) sees every
configured tenant; any other caller is authenticated like a traffic request (tenancy
keys: a 401 for an unknown key) and sees only its own tenant. Without tenancy every
caller is the default tenant. The totals are the shared store's, so every replica
answers the same (proxy/tenancy/accounting.py).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

from proxy.errors import NotFound
from proxy.settings import Settings
from proxy.tenancy.accounting import Accounting, known_tenants


def is_admin(headers: dict[str, str], admin_key: str) -> bool:
    auth = headers.get("authorization", "")
    key = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
    return bool(admin_key) and hmac.compare_digest(key.encode(), admin_key.encode())


async def usage_report(accounting: Accounting | None, settings: Settings,
                       authenticate: Callable[[dict[str, str]], str],
                       headers: dict[str, str]) -> dict[str, Any]:  # fmt: skip
    if accounting is None:
        raise NotFound("usage accounting is off (accounting.enabled)", code="not_found")
    if is_admin(headers, settings.accounting.admin_key):
        return await accounting.report(known_tenants(settings.tenancy))
    return await accounting.report([authenticate(headers)])  # 401 for an unknown key

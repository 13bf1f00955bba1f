"""The prefix key: the name of a static prefix, for routing and the prefix registry.

sha256 over a length-prefixed encoding of (version, model, canonical static text,
canonical tools JSON, cache_salt) — `cache.keys.content_key`, so no two inputs
collide and the tenant's salt keeps tenants apart. The version names the encoding:
bump it when the static text's definition changes, so old registry entries stop
matching instead of matching the wrong prefix.
"""

from __future__ import annotations

from cache.keys import content_key

KEY_VERSION = "ragtrim-prefix-v2"  # v2: compact JSON by orjson, tools encoded once


def prefix_key(model: str, static_prefix: str, tools_canonical_json: str, tenant_salt: str) -> str:
    return content_key(KEY_VERSION, model, static_prefix, tools_canonical_json, tenant_salt)

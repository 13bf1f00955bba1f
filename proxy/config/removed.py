"""Settings that no longer exist, each with what replaced it.

A setting renamed or removed must not pass without a word: an old
`RAGTRIM_ROUTING__POLICY` or YAML `timeouts.connect` would otherwise be dropped (an env
variable no field reads is never looked at) and ragtrim would run differently from what
its operator wrote. `Settings` checks its input and the environment against these
tables before validation and refuses to start, naming the replacement. Every section
also forbids unknown keys (proxy/config/section.py), so a typo fails as well.

Removed: shorthands that rewrote other settings (two ways to say one thing). Renamed:
every duration ends in `_s` or `_ms`; Redis has one group; each routing plugin's
parameters sit beside its name; the per-worker cap is `admission` (not `limits`, beside
the unrelated `compression.limits`); the per-backend cap is the filter `room` with its
parameter; the tenancy policy's quotas and accounting sit under `tenancy`.
Why: docs/decisions/0025-settings-and-component-layout.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

_SCORERS = (
    "set routing.scorers (RAGTRIM_ROUTING__SCORERS, --routing-scorers: name:weight,... or "
    "JSON) and routing.picker.name: the old affinity policy is the default "
    "`affinity:1,load:0.3` with picker `bounded`, roundrobin is scorers `roundrobin` with "
    "picker `highest`"
)
_DURATIONS = {
    **{f"timeouts.{k}": f"timeouts.{k}_s" for k in ("connect", "first_byte", "idle", "total")},
    "timeouts.drain": "timeouts.drain_s",
    **{
        f"{group}.{k}": f"{group}.{k}_s"
        for group in ("health", "discovery")
        for k in ("interval", "timeout")
    },
    **{f"http.{k}": f"http.{k}_s" for k in ("head_timeout", "body_timeout", "keep_alive_timeout")},
    "store.prefix_ttl": "store.prefix_ttl_s",
    **{
        f"compression.{k}": f"compression.{k}_s"
        for k in ("timeout", "memo_ttl", "prefill_scrape_interval")
    },
    **{
        f"routing.kv_events.{k}": f"routing.kv_events.{k}_s" for k in ("replay_timeout", "interval")
    },
}
_TENANCY_POLICY = {  # the tenancy policy's settings sit under tenancy (proxy/tenancy/policy.py)
    **{f"{group}.{k}": f"tenancy.{group}.{k}" for group, keys in (
        ("quotas", ("requests_per_minute", "tokens_per_minute", "tenants", "window_s",
                    "redis_down", "charge")),
        ("accounting", ("enabled", "price_per_1k_prompt_tokens", "currency", "admin_key")),
    ) for k in keys},
    "quotas": "tenancy.quotas",
    "accounting": "tenancy.accounting",
}  # fmt: skip
RENAMED: dict[str, str] = {
    **_DURATIONS,
    **_TENANCY_POLICY,
    "redis_url": "redis.url",
    "store.redis_timeout_s": "redis.timeout_s",
    "quotas.redis_timeout_s": "redis.quota_timeout_s",
    "limits.max_in_flight": "admission.max_in_flight",
    "limits.retry_after_s": "admission.retry_after_s",
    "routing.epsilon": "routing.picker.epsilon",
    "routing.bounded_min_in_flight": "routing.picker.min_in_flight",
    "routing.kv_events.spill_floor": "routing.picker.spill_floor",
    "routing.kv_events.queue_tokens": "routing.picker.queue_tokens",
}
REPLACED: dict[str, str] = {
    "routing.policy": _SCORERS,
    "routing.affinity_weight": _SCORERS,
    "routing.load_weight": _SCORERS,
    "limits.max_in_flight_per_backend": (
        "name the filter room with its cap in routing.filters (RAGTRIM_ROUTING__FILTERS, "
        "--routing-filters), e.g. healthy,serves_model,room:8; it no longer appends itself"
    ),
}
REMOVED_VALUES: dict[tuple[str, str], str] = {
    ("compression.policy", "never"): "set compression.enabled=false "
    "(RAGTRIM_COMPRESSION__ENABLED=false, --compression-enabled false) instead",
}


def env_name(path: str) -> str:
    return "RAGTRIM_" + path.upper().replace(".", "__")


def flag_name(path: str) -> str:
    return "--" + path.replace(".", "-").replace("_", "-")


def _why(path: str) -> str:
    if path in RENAMED:
        new = RENAMED[path]
        return f"was renamed: set {new} ({env_name(new)}, {flag_name(new)})"
    return f"was removed: {REPLACED[path]}"


def _lookup(data: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _found(data: Mapping[str, Any], environ: Mapping[str, str]) -> Iterator[str]:
    for path in (*RENAMED, *REPLACED):
        if _lookup(data, path)[0] or env_name(path) in environ:
            yield f"{path} ({env_name(path)}) {_why(path)}"
    for (path, value), instead in REMOVED_VALUES.items():
        here, seen = _lookup(data, path)
        if (here and seen == value) or environ.get(env_name(path)) == value:
            yield f"{path}={value} ({env_name(path)}) was removed: {instead}"


def reject_removed(data: Any, environ: Mapping[str, str] | None = None) -> Any:
    """`data` unchanged, or ValueError naming every removed key or value it (or the
    environment, `os.environ` by default) still sets."""
    env = os.environ if environ is None else environ
    found = list(_found(data if isinstance(data, Mapping) else {}, env))
    if found:
        raise ValueError("; ".join(found))
    return data

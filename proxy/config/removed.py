"""Settings that no longer exist, each with what replaced it (issue 21: shorthands that
rewrote other settings gave two ways to say one thing).

Nested settings models ignore unknown keys by default (pydantic's `extra="ignore"`), so
an old `RAGTRIM_ROUTING__POLICY` or YAML `routing.policy` would otherwise pass without a
word and route differently from what its operator wrote. Each section's model checks its
input against this table before validation and refuses to start, naming the replacement.
"""

from __future__ import annotations

from typing import Any

_SCORERS = (
    "set routing.scorers (RAGTRIM_ROUTING__SCORERS, --routing-scorers: name:weight,... or "
    "JSON) and routing.picker: the old affinity policy is the default "
    "`affinity:1,load:0.3` with picker `bounded`, roundrobin is scorers `roundrobin` with "
    "picker `highest`"
)
REMOVED: dict[str, dict[str, str]] = {
    "routing": {"policy": _SCORERS, "affinity_weight": _SCORERS, "load_weight": _SCORERS},
}
REMOVED_VALUES: dict[tuple[str, str, str], str] = {
    ("compression", "policy", "never"): "set compression.enabled=false "
    "(RAGTRIM_COMPRESSION__ENABLED=false, --compression-enabled false) instead",
}


def env_name(section: str, key: str) -> str:
    return f"RAGTRIM_{section.upper()}__{key.upper()}"


def reject_removed(section: str, data: Any) -> Any:
    """`data` unchanged, or ValueError for a removed key or value of `section`."""
    if not isinstance(data, dict):
        return data
    for key, instead in REMOVED.get(section, {}).items():
        if key in data:
            raise ValueError(
                f"{section}.{key} ({env_name(section, key)}) was removed in issue 21: {instead}"
            )
    for (where, key, value), instead in REMOVED_VALUES.items():
        if where == section and data.get(key) == value:
            raise ValueError(
                f"{section}.{key}={value} ({env_name(section, key)}) was removed in issue 21: "
                f"{instead}"
            )
    return data

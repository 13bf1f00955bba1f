"""Router: filters narrow the candidates, weighted scorers (each 0..1) rank them,
the picker orders the result. The ranking is also the failover order.

    filters  -> [Endpoint]                (healthy, serves the model, ...)
    scorers  -> {Endpoint: 0..1} × weight (round-robin, prefix affinity, load, ...)
    picker   -> ordered [Endpoint]        (highest total first; ties by URL)

The shape is the Gateway API Inference Extension's endpoint picker (filters, scorers
weighted in configuration, a picker); which ones run is composed from settings in
proxy/routing/registry.py. A part reads only `ctx.prefix_key` and `ctx.model`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext


@dataclass
class Cycle:
    """One ranking's state, made by `Router.rank` and handed to every scorer and the
    picker (as the endpoint picker's CycleState, issue 32): what a scorer learns for the
    picker travels here, never in a plugin's own slot. `held`: the kv_cache scorer's
    shares of the request (proxy/routing/kv/picker.py `Held`), for the kv pickers."""

    held: Any = None


class Filter(Protocol):
    name: str

    def filter(self, ctx: RequestContext, endpoints: Sequence[Endpoint]) -> list[Endpoint]:
        """The endpoints that may take the request; raises a ProxyError when none may."""
        ...


class Scorer(Protocol):
    name: str

    def score(
        self, ctx: RequestContext, endpoints: Sequence[Endpoint], cycle: Cycle | None = None
    ) -> dict[Endpoint, float]: ...


class Picker(Protocol):
    def order(
        self,
        ctx: RequestContext,
        totals: dict[Endpoint, float],
        endpoints: Sequence[Endpoint],
        cycle: Cycle | None = None,
    ) -> list[Endpoint]: ...


@dataclass
class Weighted:
    scorer: Scorer
    weight: float


class HighestScore:
    """Highest weighted total first; ties broken by URL so every replica agrees."""

    def order(
        self,
        ctx: RequestContext,
        totals: dict[Endpoint, float],
        endpoints: Sequence[Endpoint],
        cycle: Cycle | None = None,
    ) -> list[Endpoint]:
        return sorted(endpoints, key=lambda ep: (-totals[ep], ep.url))


class Router:
    """`rank(ctx, endpoints)` takes every endpoint of the pool; the filters narrow them."""

    def __init__(self, scorers: Sequence[Weighted], picker: Picker | None = None,
                 filters: Sequence[Filter] = ()):  # fmt: skip
        self.scorers = list(scorers)
        self.picker = picker or HighestScore()
        self.filters = list(filters)

    def rank(self, ctx: RequestContext, endpoints: Sequence[Endpoint]) -> list[Endpoint]:
        candidates = list(endpoints)
        for item in self.filters:
            candidates = item.filter(ctx, candidates)
        totals, cycle = dict.fromkeys(candidates, 0.0), Cycle()
        for weighted in self.scorers:
            for ep, value in weighted.scorer.score(ctx, candidates, cycle).items():
                totals[ep] += weighted.weight * min(1.0, max(0.0, value))
        return self.picker.order(ctx, totals, candidates, cycle)

    async def prepare(self, ctx: RequestContext) -> None:
        """What a scorer must compute before ranking and may not on the event loop
        (the kv_cache scorer's token ids: a worker thread for a large body). `rank`
        stays synchronous: warm-up and failover rank without awaiting."""
        for weighted in self.scorers:
            prepare = getattr(weighted.scorer, "prepare", None)
            if prepare is not None:
                await prepare(ctx)

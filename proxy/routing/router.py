"""Router: filters narrow the candidates, weighted scorers (each 0..1) rank them,
the picker orders the result. The ranking is also the failover order.

    filters  -> [Endpoint]                (healthy, serves the model, ...)
    scorers  -> {Endpoint: 0..1} × weight (round-robin, prefix affinity, load, ...)
    picker   -> ordered [Endpoint]        (highest total first; ties by URL)

One `Cycle` per ranking carries the request, the candidates, their totals and what a
scorer learns for the picker (the endpoint picker's CycleState): the picker takes it
whole, `order(cycle)`.

The shape is the Gateway API Inference Extension's endpoint picker (filters, scorers
weighted in configuration, a picker); which ones run is composed from settings in
proxy/routing/registry.py. A part reads only `ctx.prefix_key` and `ctx.model`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext

T = TypeVar("T")


@dataclass(frozen=True)
class StateKey(Generic[T]):
    """A typed slot of a ranking's `Cycle`: the scorer that writes it and the picker that
    reads it share the key (e.g. proxy/routing/kv/picker.py `HELD`)."""

    name: str


@dataclass
class Cycle:
    """One ranking's state, made by `Router.rank` and handed to every scorer and the
    picker (as the endpoint picker's CycleState): what a scorer learns for the
    picker travels here, in a typed slot (`write`, `read` by `StateKey`), never in a
    plugin's own attribute. `candidates`: what the filters left; `totals`: their
    weighted scores."""

    ctx: RequestContext
    candidates: list[Endpoint] = field(default_factory=list)
    totals: dict[Endpoint, float] = field(default_factory=dict)
    state: dict[StateKey[Any], Any] = field(default_factory=dict)

    def write(self, key: StateKey[T], value: T) -> None:
        self.state[key] = value

    def read(self, key: StateKey[T]) -> T | None:
        """What a scorer wrote under `key` in this ranking; None when nothing was."""
        return self.state.get(key)

    def by_total(self) -> list[Endpoint]:
        """Highest total first; ties broken by URL so every replica agrees."""
        return sorted(self.candidates, key=lambda ep: (-self.totals.get(ep, 0.0), ep.url))


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


@runtime_checkable
class Preparing(Protocol):
    """A scorer with work to do before ranking, off the event loop where it is big."""

    async def prepare(self, ctx: RequestContext) -> None: ...


class Picker(Protocol):
    def order(self, cycle: Cycle) -> list[Endpoint]:
        """Every candidate, best first: the ranking is also the failover order."""
        ...


@dataclass
class Weighted:
    scorer: Scorer
    weight: float


class HighestScore:
    """Highest weighted total first; ties broken by URL so every replica agrees."""

    def order(self, cycle: Cycle) -> list[Endpoint]:
        return cycle.by_total()


class Router:
    """`rank(ctx, endpoints)` takes every endpoint of the pool; the filters narrow them."""

    def __init__(
        self,
        scorers: Sequence[Weighted],
        picker: Picker | None = None,
        filters: Sequence[Filter] = (),
    ):
        self.scorers = list(scorers)
        self.picker = picker or HighestScore()
        self.filters = list(filters)
        self.preparing = [w.scorer for w in self.scorers if isinstance(w.scorer, Preparing)]

    def rank(self, ctx: RequestContext, endpoints: Sequence[Endpoint]) -> list[Endpoint]:
        candidates = list(endpoints)
        for item in self.filters:
            candidates = item.filter(ctx, candidates)
        cycle = Cycle(ctx, candidates, dict.fromkeys(candidates, 0.0))
        for weighted in self.scorers:
            for ep, value in weighted.scorer.score(ctx, candidates, cycle).items():
                cycle.totals[ep] += weighted.weight * min(1.0, max(0.0, value))
        return self.picker.order(cycle)

    async def prepare(self, ctx: RequestContext) -> None:
        """What a scorer must compute before ranking and may not on the event loop
        (the kv_cache scorer's token ids: a worker thread for a large body). `rank`
        stays synchronous: warm-up and failover rank without awaiting."""
        for scorer in self.preparing:
            await scorer.prepare(ctx)

"""Filters: which endpoints may take this request at all, before any scoring.

The Gateway API Inference Extension's endpoint picker runs filters first, then
weighted scorers, then a picker; a filter only narrows the set, and an empty set is
an error the client sees (503 no healthy backend, 404 unknown model), never a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from proxy.context import RequestContext
from proxy.errors import NoHealthyBackend, NotFound
from proxy.routing.endpoint import Endpoint


class Healthy:
    """Healthy endpoints; with `panic` and none healthy, every endpoint that has answered
    before and was not ejected for refusing connections (Envoy's panic threshold).

    A health probe that times out on a busy replica must not turn into 503s for requests
    that replica would have served, while a dead one (its circuit open) gets no traffic
    until a health check passes. `on_panic` is called each time the panic set is used
    (ragtrim_panic_routes), also when a later filter then refuses the request.
    """

    name = "healthy"

    def __init__(self, panic: bool, on_panic: Callable[[], None] | None = None):
        self.panic = panic
        self.on_panic = on_panic

    def filter(self, ctx: RequestContext, endpoints: Sequence[Endpoint]) -> list[Endpoint]:
        healthy = [ep for ep in endpoints if ep.healthy]
        if not healthy and self.panic:
            healthy = [ep for ep in endpoints if ep.models and not ep.refused]
            if healthy and self.on_panic is not None:
                self.on_panic()
        if not healthy:
            raise NoHealthyBackend("no healthy backend")
        return healthy


class ServesModel:
    """Endpoints whose model list has the requested model (all of them when the request
    names none); none → 404 in OpenAI's words."""

    name = "serves_model"

    def filter(self, ctx: RequestContext, endpoints: Sequence[Endpoint]) -> list[Endpoint]:
        model = ctx.model  # None on pass-through routes: any backend serves them
        if model is None:
            return list(endpoints)
        serving = [ep for ep in endpoints if model in ep.models]
        if not serving:
            raise NotFound(f"The model `{model}` does not exist.", param="model")
        return serving

"""Filters: which endpoints may take this request at all, before any scoring.

The Gateway API Inference Extension's endpoint picker runs filters first, then
weighted scorers, then a picker; a filter only narrows the set, and an empty set is
an error the client sees (503 no healthy backend, 404 unknown model, 429 every backend
full), never a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext
from proxy.errors import InvalidRequest, NoHealthyBackend, NotFound, Overloaded


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
    """Endpoints whose model list has the requested model; none → 404 in OpenAI's words.

    A chat or completions body may name no model: vLLM then answers with its
    served model, so when every backend serves the same models any of them answers as
    vLLM would, and the body goes without a model; when they differ, which one vLLM
    would pick is undefined, a 400 naming them. Pass-through routes go anywhere."""

    name = "serves_model"

    def filter(self, ctx: RequestContext, endpoints: Sequence[Endpoint]) -> list[Endpoint]:
        model = ctx.model
        if model is None:
            _one_model_set(ctx, endpoints)
            return list(endpoints)
        serving = [ep for ep in endpoints if model in ep.models]
        if not serving and ctx.route == "other":  # a pass-through body read for its quota
            return list(endpoints)  # vLLM answers an unknown model in its words
        if not serving:
            raise NotFound(f"The model `{model}` does not exist.", param="model")
        return serving


def _one_model_set(ctx: RequestContext, endpoints: Sequence[Endpoint]) -> None:
    served = {ep.models for ep in endpoints if ep.models}  # one backend still loading: any
    if ctx.route != "other" and len(served) > 1:
        names = ", ".join(sorted(set().union(*served)))
        raise InvalidRequest(
            f"model: required when the backends serve different models ({names})", param="model"
        )


class HasRoom:
    """Endpoints below the per-backend cap (the filter `room:N` in routing.filters); when
    every candidate is at it, a 429 with Retry-After: shedding, for a fleet behind a
    load balancer that retries elsewhere, instead of queueing in vLLM.

    A filter, not a check after ranking, so the scorers and the picker rank
    only backends that can take the request, and warm-up sees the same cap. Put it
    last in routing.filters, as the default examples do: after `healthy` and
    `serves_model` an unknown model stays a 404 and a dead fleet a 503. `on_full`
    counts each refusal (ragtrim_overloaded)."""

    name = "room"

    def __init__(
        self, cap: int, retry_after_s: int | None, on_full: Callable[[], None] | None = None
    ):
        if cap < 1:
            raise ValueError("routing: filter room needs its cap, e.g. room:8")
        self.cap = cap
        self.retry_after_s = retry_after_s
        self.on_full = on_full

    def filter(self, ctx: RequestContext, endpoints: Sequence[Endpoint]) -> list[Endpoint]:
        room = [ep for ep in endpoints if ep.in_flight < self.cap]
        if not room:
            if self.on_full is not None:
                self.on_full()
            exc = Overloaded(f"every backend is at its limit of {self.cap} in flight")
            exc.retry_after = self.retry_after_s
            raise exc
        return room

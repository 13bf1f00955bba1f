"""The router: filters inside it (healthy with panic, serves the model), then weighted
scorers, then the picker; nothing written to the context."""

from __future__ import annotations

import pytest

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext
from proxy.errors import NoHealthyBackend, NotFound
from proxy.routing.filters import Healthy, ServesModel
from proxy.routing.router import Router, Weighted


def ctx(model: str = "m", route: str = "chat") -> RequestContext:
    body = {} if route == "other" else {"model": model}
    return RequestContext("r", route, b"", body, {}, prefix_key="k")


def ep(url: str, *, healthy=True, models=("m",), refused=False, in_flight=0) -> Endpoint:
    return Endpoint(url, healthy=healthy, models=frozenset(models), refused=refused,
                    in_flight=in_flight)  # fmt: skip


class Fixed:
    name = "fixed"

    def __init__(self, scores: dict[str, float]):
        self.scores = scores

    def score(self, ctx, endpoints, cycle=None):
        return {e: self.scores[e.url] for e in endpoints}


def router(panic=True, on_panic=None, scorers=()) -> Router:
    return Router(list(scorers), filters=[Healthy(panic, on_panic), ServesModel()])


def test_filters_drop_unhealthy_and_other_models():
    eps = [ep("http://a"), ep("http://b", healthy=False), ep("http://c", models=("x",))]
    assert [e.url for e in router().rank(ctx(), eps)] == ["http://a"]


def test_no_healthy_backend_is_503_and_unknown_model_404():
    with pytest.raises(NoHealthyBackend):
        router(panic=False).rank(ctx(), [ep("http://a", healthy=False)])
    with pytest.raises(NoHealthyBackend):
        router().rank(ctx(), [])
    with pytest.raises(NotFound) as info:
        router().rank(ctx("nope"), [ep("http://a")])
    assert "nope" in str(info.value)


def test_panic_routes_to_known_backends_but_not_refusing_ones_and_counts():
    calls = []
    eps = [ep("http://a", healthy=False), ep("http://b", healthy=False, refused=True),
           ep("http://c", healthy=False, models=())]  # fmt: skip
    ranked = router(on_panic=lambda: calls.append(1)).rank(ctx(), eps)
    assert [e.url for e in ranked] == ["http://a"] and calls == [1]
    router(on_panic=lambda: calls.append(1)).rank(ctx(), [ep("http://a")])
    assert calls == [1]  # healthy: no panic


def test_pass_through_routes_name_no_model_and_take_any_healthy_backend():
    eps = [ep("http://a", models=("x",)), ep("http://b", models=("y",))]
    assert len(router().rank(ctx(route="other"), eps)) == 2


def test_weighted_scores_are_clamped_summed_and_tie_broken_by_url():
    eps = [ep("http://a"), ep("http://b"), ep("http://c")]
    one = Fixed({"http://a": 0.2, "http://b": 0.9, "http://c": 5.0})  # 5.0 counts as 1.0
    two = Fixed({"http://a": 1.0, "http://b": 0.0, "http://c": -3.0})  # -3.0 as 0.0
    ranked = router(scorers=[Weighted(one, 1.0), Weighted(two, 1.0)]).rank(ctx(), eps)
    assert [e.url for e in ranked] == ["http://a", "http://c", "http://b"]  # 1.2, 1.0, 0.9
    ranked = router(scorers=[Weighted(one, 1.0), Weighted(two, 0.0)]).rank(ctx(), eps)
    assert [e.url for e in ranked] == ["http://c", "http://b", "http://a"]


def test_rank_writes_nothing_to_the_context():
    c = ctx()
    router(scorers=[Weighted(Fixed({"http://a": 1.0}), 1.0)]).rank(c, [ep("http://a")])
    assert not getattr(c, "decisions", {})


def test_a_router_without_filters_ranks_what_it_is_given():
    eps = [ep("http://b", healthy=False), ep("http://a")]
    assert [e.url for e in Router([]).rank(ctx(), eps)] == ["http://a", "http://b"]

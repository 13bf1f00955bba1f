"""Bounded-load picker and the least-loaded scorer: a hot prefix spills, bounded."""

from __future__ import annotations

import math

from proxy.context import RequestContext
from proxy.routing.affinity import PrefixAffinity, rendezvous_order
from proxy.routing.bounded import BoundedLoad, load_bound
from proxy.routing.endpoint import Endpoint
from proxy.routing.load import LeastLoaded
from proxy.routing.router import Router, Weighted

URLS = [f"http://vllm-{i}:8000" for i in range(4)]
HOT = "f" * 64


def ctx(key: str | None = HOT) -> RequestContext:
    return RequestContext("r", "chat", b"", {"model": "m"}, {}, prefix_key=key)


def pool(loads: list[int]) -> list[Endpoint]:
    return [Endpoint(url, healthy=True, in_flight=n) for url, n in zip(URLS, loads, strict=True)]


def test_bound_is_ceil_of_one_plus_epsilon_times_mean_with_the_new_request():
    assert load_bound([0, 0, 0, 0], 0.25) == 1
    assert load_bound([3, 3, 3, 2], 0.25) == math.ceil(1.25 * 12 / 4)
    assert load_bound([9, 0, 0, 0], 0.0) == 3


def test_over_bound_endpoints_move_behind_keeping_order():
    eps = pool([5, 0, 2, 0])  # 7 in flight + this one -> bound ceil(1.25 * 8 / 4) = 3
    totals = dict(zip(eps, [0.9, 0.1, 0.8, 0.5], strict=True))
    c = ctx()
    ranked = BoundedLoad().order(c, totals, eps)
    assert [ep.url for ep in ranked] == [URLS[2], URLS[3], URLS[1], URLS[0]]
    assert c.decisions["bounded"] == {"bound": 3, "skipped": [URLS[0]]}


def test_within_bound_it_is_highest_total_then_url():
    eps = pool([1, 1, 1, 1])
    c = ctx()
    ranked = BoundedLoad().order(c, dict.fromkeys(eps, 0.5), eps)
    assert [ep.url for ep in ranked] == URLS
    assert c.decisions["bounded"]["skipped"] == []
    assert BoundedLoad().order(c, {}, []) == []


def simulate(router: Router, requests: int) -> list[Endpoint]:
    eps = pool([0, 0, 0, 0])
    for _ in range(requests):  # all still in flight: nothing completes
        router.rank(ctx(), eps)[0].in_flight += 1
    return eps


def test_hot_prefix_spills_within_the_bound_and_its_home_gets_the_most():
    router = Router([Weighted(PrefixAffinity(), 1.0)], BoundedLoad(0.25))
    eps = simulate(router, 200)
    loads = {ep.url: ep.in_flight for ep in eps}
    assert sum(loads.values()) == 200
    assert max(loads.values()) <= math.ceil(1.25 * 200 / 4)
    order = rendezvous_order(HOT, URLS)
    assert loads[order[0]] == max(loads.values()) == 63  # home rides the bound
    # the spill follows the key's own rendezvous order (its 2nd choice, then 3rd, ...)
    assert [loads[url] for url in order] == sorted(loads.values(), reverse=True)
    assert loads[order[-1]] < loads[order[0]] / 2


def test_with_a_load_scorer_too_the_bound_holds():
    router = Router(
        [Weighted(PrefixAffinity(), 1.0), Weighted(LeastLoaded(), 0.3)], BoundedLoad(0.25)
    )
    loads = {ep.url: ep.in_flight for ep in simulate(router, 200)}
    assert max(loads.values()) <= 63
    assert loads[rendezvous_order(HOT, URLS)[0]] == max(loads.values())


def test_without_the_bound_the_hot_prefix_piles_on_one_backend():
    loads = [ep.in_flight for ep in simulate(Router([Weighted(PrefixAffinity(), 1.0)]), 200)]
    assert sorted(loads) == [0, 0, 0, 200]


def test_least_loaded_scores():
    eps = pool([0, 2, 4, 1])
    scores = LeastLoaded().score(ctx(), eps)
    assert [scores[ep] for ep in eps] == [1.0, 0.5, 0.0, 0.75]
    assert set(LeastLoaded().score(ctx(), pool([0, 0, 0, 0])).values()) == {1.0}
    assert LeastLoaded().score(ctx(), []) == {}

"""Bounded-load picker and the least-loaded scorer: a hot prefix spills, bounded, and
not below the floor."""

from __future__ import annotations

import math

import pytest

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext
from proxy.routing.affinity import PrefixAffinity
from proxy.routing.bounded import BoundedLoad, load_bound
from proxy.routing.load import LeastLoaded
from proxy.routing.router import Cycle, Router, Weighted
from tests.support.rendezvous import rendezvous_order

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


def test_the_floor_raises_a_small_bound_only():
    assert load_bound([3, 0], 0.25, min_in_flight=8) == 8  # Mirrokni alone: 3
    assert load_bound([30, 10], 0.25, min_in_flight=8) == math.ceil(1.25 * 41 / 2)


def test_over_bound_endpoints_move_behind_keeping_order():
    eps = pool([5, 0, 2, 0])  # 7 in flight + this one -> bound ceil(1.25 * 8 / 4) = 3
    totals = dict(zip(eps, [0.9, 0.1, 0.8, 0.5], strict=True))
    spilled = []
    ranked = BoundedLoad(epsilon=0.25, min_in_flight=0, on_spill=spilled.append).order(
        Cycle(ctx(), eps, totals)
    )
    assert [ep.url for ep in ranked] == [URLS[2], URLS[3], URLS[1], URLS[0]]
    assert spilled == [eps[0]]  # the best-scored one was over: one spill, named


def test_a_lower_ranked_endpoint_over_the_bound_is_no_spill():
    eps = pool([0, 5, 2, 0])
    totals = dict(zip(eps, [0.9, 0.1, 0.8, 0.5], strict=True))
    spilled = []
    ranked = BoundedLoad(epsilon=0.25, min_in_flight=0, on_spill=spilled.append).order(
        Cycle(ctx(), eps, totals)
    )
    assert ranked[0] is eps[0] and ranked[-1] is eps[1] and spilled == []


def test_within_bound_it_is_highest_total_then_url():
    eps = pool([1, 1, 1, 1])
    ranked = BoundedLoad(epsilon=0.25, min_in_flight=8).order(
        Cycle(ctx(), eps, dict.fromkeys(eps, 0.5))
    )
    assert [ep.url for ep in ranked] == URLS
    assert BoundedLoad(epsilon=0.25, min_in_flight=8).order(Cycle(ctx())) == []


def test_no_spill_below_the_floor():
    # two replicas, the prompt's home has 3 in flight, the other 0: Mirrokni's bound is
    # ceil(1.25 * 4 / 2) = 3, so without the floor it would spill at 3-4 in flight
    eps = pool([3, 0, 0, 0])[:2]
    totals = dict(zip(eps, [1.0, 0.5], strict=True))
    assert BoundedLoad(epsilon=0.25, min_in_flight=0).order(Cycle(ctx(), eps, totals))[0] is eps[1]
    spilled = []
    ranked = BoundedLoad(epsilon=0.25, min_in_flight=4, on_spill=spilled.append).order(
        Cycle(ctx(), eps, totals)
    )
    assert ranked[0] is eps[0] and spilled == []


def test_at_the_floor_the_bound_applies_again():
    eps = pool([8, 0, 0, 0])[:2]  # bound max(ceil(1.25 * 9 / 2), 8) = 8; 8 + 1 > 8
    totals = dict(zip(eps, [1.0, 0.5], strict=True))
    spilled = []
    ranked = BoundedLoad(epsilon=0.25, min_in_flight=8, on_spill=spilled.append).order(
        Cycle(ctx(), eps, totals)
    )
    assert ranked[0] is eps[1] and spilled == [eps[0]]
    eps[0].in_flight = 7  # 7 + 1 <= 8: stays home
    assert BoundedLoad(epsilon=0.25, min_in_flight=8).order(Cycle(ctx(), eps, totals))[0] is eps[0]


def test_negative_settings_are_refused():
    with pytest.raises(ValueError):
        BoundedLoad(epsilon=-0.1, min_in_flight=8)
    with pytest.raises(ValueError):
        BoundedLoad(epsilon=0.25, min_in_flight=-1)


def simulate(router: Router, requests: int) -> list[Endpoint]:
    eps = pool([0, 0, 0, 0])
    for _ in range(requests):  # all still in flight: nothing completes
        router.rank(ctx(), eps)[0].in_flight += 1
    return eps


def test_hot_prefix_spills_within_the_bound_and_its_home_gets_the_most():
    router = Router([Weighted(PrefixAffinity(), 1.0)], BoundedLoad(epsilon=0.25, min_in_flight=0))
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
        [Weighted(PrefixAffinity(), 1.0), Weighted(LeastLoaded(), 0.3)],
        BoundedLoad(epsilon=0.25, min_in_flight=8),
    )  # with the default floor (8): the bound, 63 at the end, is far above it
    loads = {ep.url: ep.in_flight for ep in simulate(router, 200)}
    assert max(loads.values()) <= 63
    assert loads[rendezvous_order(HOT, URLS)[0]] == max(loads.values())


def test_with_the_floor_a_few_requests_stay_home_then_the_bound_takes_over():
    router = Router([Weighted(PrefixAffinity(), 1.0)], BoundedLoad(epsilon=0.25, min_in_flight=8))
    home = rendezvous_order(HOT, URLS)[0]
    loads = {ep.url: ep.in_flight for ep in simulate(router, 8)}
    assert loads[home] == 8 and sum(loads.values()) == 8  # no spill below the floor
    loads = {ep.url: ep.in_flight for ep in simulate(router, 200)}
    assert loads[home] == max(loads.values()) <= math.ceil(1.25 * 200 / 4)


def test_without_the_bound_the_hot_prefix_piles_on_one_backend():
    loads = [ep.in_flight for ep in simulate(Router([Weighted(PrefixAffinity(), 1.0)]), 200)]
    assert sorted(loads) == [0, 0, 0, 200]


def test_least_loaded_scores():
    eps = pool([0, 2, 4, 1])
    scores = LeastLoaded().score(ctx(), eps)
    assert [scores[ep] for ep in eps] == [1.0, 0.5, 0.0, 0.75]
    assert set(LeastLoaded().score(ctx(), pool([0, 0, 0, 0])).values()) == {1.0}
    assert LeastLoaded().score(ctx(), []) == {}

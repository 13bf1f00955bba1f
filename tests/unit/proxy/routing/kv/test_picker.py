"""The kv bounded-load picker: the floor scales with the first choice's lead in held
blocks, so held requests stay (as rendezvous) and requests held everywhere spread."""

from __future__ import annotations

import pytest

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext
from proxy.routing.kv.events import BlockRemoved, BlockStored
from proxy.routing.kv.index import KvIndex
from proxy.routing.kv.picker import HELD, ROOM_WINDOW_S, Held, KvBoundedLoad, stake
from proxy.routing.kv.scorer import KvCacheScorer
from proxy.routing.load import LeastLoaded
from proxy.routing.router import Cycle, Router, Weighted

IDS = list(range(100, 140))  # 10 full blocks of 4


def ctx() -> RequestContext:
    return RequestContext("r", "chat", b"", {"model": "m", "messages": []}, {}, prefix_key="k")


def eps(a: int, b: int) -> tuple[Endpoint, Endpoint]:
    return Endpoint("http://a:8000", healthy=True, in_flight=a), Endpoint(
        "http://b:8000", healthy=True, in_flight=b
    )


class Ids:
    def ids(self, route, body, model, wait=True):
        return IDS


def index_holding(a: Endpoint, b: Endpoint, on_a: int, on_b: int, evicting: bool = True) -> KvIndex:
    """Both under cache pressure (each just evicted a block) unless `evicting` is False."""
    index = KvIndex()
    for ep, n in ((a, on_a), (b, on_b)):
        index.reset(ep.url).synced = True
        if evicting:
            index.apply(ep.url, [BlockRemoved(["gone"], "GPU")])
        if n:
            index.apply(ep.url, [BlockStored([f"h{i}" for i in range(n)], None, IDS[: 4 * n], 4,
                                             "GPU")])  # fmt: skip
    return index


def route(a: Endpoint, b: Endpoint, on_a: int, on_b: int, evicting: bool = True) -> Endpoint:
    scorer = KvCacheScorer(index_holding(a, b, on_a, on_b, evicting), Ids(), thread_bytes=0)
    router = Router([Weighted(scorer, 1.0), Weighted(LeastLoaded(), 0.3)],
                    KvBoundedLoad(epsilon=0.25, held=8, free=3))  # fmt: skip
    return router.rank(ctx(), [a, b])[0]


def test_floor_scales_with_the_stake():
    picker = KvBoundedLoad(epsilon=0.25, held=8, free=3)
    assert [picker.floor(s) for s in (0.0, 0.5, 1.0)] == [3, 6, 8]
    assert picker.floor(None) == 8  # unscored (fallback to affinity): rendezvous' floor


def test_stake_is_the_lead_over_the_best_other():
    a, b = eps(0, 0)
    assert stake({a: 0.9, b: 0.2}, [a, b]) == pytest.approx(0.7)
    assert stake({a: 0.3, b: 0.3}, [a, b]) == 0.0
    assert stake({a: 0.3, b: 0.6}, [a, b]) == 0.0  # ranked first by load, not by blocks
    assert stake({b: 0.6}, [a, b]) is None and stake(None, [a, b]) is None


def test_a_request_held_only_on_its_replica_stays_until_rendezvous_floor():
    """9 of 10 blocks on a, none on b: a keeps it with 6 in flight to b's 0 (the fixed
    floor 3 spilled it there), and spills only past the floor 8."""
    a, b = eps(6, 0)
    assert route(a, b, 9, 0) is a
    a, b = eps(8, 0)
    assert route(a, b, 9, 0) is b


def test_a_spill_to_a_replica_with_room_comes_early():
    """b evicted nothing (its cache has room: one application's second replica before
    it holds the system prompt): a spill evicts nothing there, so the low floor."""
    a, b = eps(3, 0)
    assert route(a, b, 9, 0, evicting=False) is b
    a, b = eps(2, 0)
    assert route(a, b, 9, 0, evicting=False) is a


def test_room_is_no_eviction_within_the_window():
    now = [1000.0]
    index = KvIndex(clock=lambda: now[0])
    for url in ("http://a", "http://b", "http://c"):
        index.reset(url).synced = True
    index.apply("http://a", [BlockRemoved(["x"], "GPU")])
    index.backend("http://c").synced = False
    assert index.roomy(["http://a", "http://b", "http://c", "http://d"], 60) == {"http://b"}
    now[0] += ROOM_WINDOW_S + 1
    assert index.roomy(["http://a", "http://b"], ROOM_WINDOW_S) == {"http://a", "http://b"}


def pick(a: Endpoint, b: Endpoint, shares: dict[Endpoint, float]) -> Endpoint:
    """a ranked first by total score; the stake from `shares`."""
    # no replica with room: both under cache pressure
    cycle = Cycle(ctx(), [a, b], {a: 0.9, b: 0.5}, {HELD: Held(shares)})
    return KvBoundedLoad(epsilon=0.25, held=8, free=3).order(cycle)[0]


def test_a_request_held_as_well_elsewhere_spreads_early():
    """The system prompt on both, a leads by one block of 10 (stake 0.1, floor
    round(3.5) = 4): a keeps it at 3 in flight to b's 0, spills it at 4; the fixed
    floor 8 would have kept it until 8."""
    a, b = eps(3, 0)
    assert pick(a, b, {a: 0.4, b: 0.3}) is a
    a, b = eps(4, 0)
    assert pick(a, b, {a: 0.4, b: 0.3}) is b
    a, b = eps(4, 0)
    assert pick(a, b, {a: 0.9, b: 0.0}) is a  # held only on a: floor 8


def test_the_scorers_shares_reach_the_picker_in_the_rankings_own_cycle():
    """Router.rank makes one Cycle per ranking: the scorer writes the request's shares
    into it and the picker reads them there (no slot shared between rankings)."""
    a, b = eps(4, 0)
    scorer = KvCacheScorer(index_holding(a, b, 4, 0, True), Ids(), thread_bytes=0)
    cycle = Cycle(ctx(), [a, b])
    scorer.score(ctx(), [a, b], cycle)
    held = cycle.read(HELD)
    assert held is not None and held.shares[a] > held.shares[b]
    picker, totals = KvBoundedLoad(epsilon=0.25, held=8, free=3), {a: 1.0, b: 0.0}
    assert picker.order(Cycle(ctx(), [a, b], totals))[0] is a  # no shares: floor 8
    # held as well on b: floor 3, a spills
    even = Cycle(ctx(), [a, b], totals, {HELD: Held({a: 0.4, b: 0.4})})
    assert picker.order(even)[0] is b


def test_floors_are_checked_and_a_low_held_floor_lowers_free():
    with pytest.raises(ValueError):
        KvBoundedLoad(epsilon=0.25, held=-1, free=3)
    assert KvBoundedLoad(epsilon=0.25, held=2, free=3).free == 2

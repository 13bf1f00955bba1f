"""The `cost` picker: queue plus the prefill of what a replica does not hold decides,
so conversations stick to their history, new ones spread, an overloaded replica loses."""

from __future__ import annotations

import pytest

from proxy.backends.endpoint import Endpoint, EndpointPool
from proxy.context import RequestContext
from proxy.metrics import Metrics
from proxy.routing.bounded import BoundedLoad
from proxy.routing.kv.cost import KvCostPicker, expected_cost
from proxy.routing.kv.events import BlockRemoved, BlockStored
from proxy.routing.kv.index import KvIndex
from proxy.routing.kv.picker import Held
from proxy.routing.kv.scorer import KvCacheScorer
from proxy.routing.kv.service import build_kv
from proxy.routing.load import LeastLoaded
from proxy.routing.registry import build_router
from proxy.routing.router import Router, Weighted
from proxy.settings import KvEventsSettings, RoutingSettings

SYSTEM = [7] * 4  # one block of 4: the system prompt every conversation shares
QUEUE = 4  # one request in flight costs one block's prefill here


def history(conv: int, blocks: int) -> list[int]:
    return SYSTEM + [1000 + conv] * 4 * (blocks - 1)


class Ids:
    def __init__(self, ids):
        self.value = ids

    def ids(self, route, body, model, wait=True):
        return self.value


def ctx() -> RequestContext:
    return RequestContext("r", "chat", b"", {"model": "m", "messages": []}, {}, prefix_key="k")


def fleet(*in_flight: int) -> list[Endpoint]:
    return [Endpoint(f"http://r{i}:8000", healthy=True, in_flight=n)
            for i, n in enumerate(in_flight)]  # fmt: skip


def index_of(held: dict[Endpoint, list[int]], evicting: bool = True) -> KvIndex:
    """Each endpoint holds the given ids (whole blocks); all under cache pressure unless
    `evicting` is False."""
    index = KvIndex()
    for ep, ids in held.items():
        index.reset(ep.url).synced = True
        if evicting:
            index.apply(ep.url, [BlockRemoved(["gone"], "GPU")])
        hashes = [f"{ep.url}-{i}" for i in range(len(ids) // 4)]
        if hashes:
            index.apply(ep.url, [BlockStored(hashes, None, ids, 4, "GPU")])
    return index


def first(index: KvIndex, ids: list[int], eps: list[Endpoint]) -> Endpoint:
    scorer = KvCacheScorer(index, Ids(ids), thread_bytes=0)
    fallback = BoundedLoad(epsilon=0.25, min_in_flight=8)
    picker = KvCostPicker(queue_tokens=QUEUE, fallback=fallback)
    return Router([Weighted(scorer, 1.0), Weighted(LeastLoaded(), 0.3)], picker).rank(ctx(), eps)[0]


def test_a_conversation_sticks_to_the_replica_holding_its_history():
    a, b = fleet(3, 0)  # a busier, but it holds the conversation's 10 blocks
    index = index_of({a: history(1, 10), b: SYSTEM})
    assert first(index, history(1, 11), [a, b]) is a


def test_a_replica_far_more_loaded_loses_even_with_more_blocks():
    a, b = fleet(30, 0)
    index = index_of({a: history(1, 10), b: SYSTEM})
    assert first(index, history(1, 11), [a, b]) is b


def test_new_conversations_spread_over_replicas_that_all_hold_the_system_prompt():
    eps = fleet(0, 0, 0, 0)
    index = index_of({ep: SYSTEM for ep in eps})
    firsts = {first(index, history(c, 6), eps).url for c in range(40)}
    assert len(firsts) == 4  # equal costs: the kv_cache score's rendezvous term spreads


def test_a_new_conversation_goes_to_the_less_loaded_replica():
    a, b = fleet(0, 1)
    index = index_of({a: SYSTEM, b: SYSTEM})
    assert all(first(index, history(c, 6), [a, b]) is a for c in range(20))


def test_the_system_prompt_gets_a_second_home_where_it_evicts_nobody():
    """Held only on a: b has room, so prefilling it there costs one prefill; under
    cache pressure it would evict blocks someone prefills again, so it stays longer."""
    a, b = fleet(1, 0)
    assert first(index_of({a: SYSTEM, b: []}, evicting=False), history(1, 10), [a, b]) is b
    assert first(index_of({a: SYSTEM, b: []}), history(1, 10), [a, b]) is a


def _cost_router(index: KvIndex) -> tuple[KvCacheScorer, Router]:
    scorer = KvCacheScorer(index, Ids([]), thread_bytes=0)
    picker = KvCostPicker(queue_tokens=QUEUE, fallback=BoundedLoad(epsilon=0.25, min_in_flight=8))
    return scorer, Router([Weighted(scorer, 1.0), Weighted(LeastLoaded(), 0.3)], picker)


def test_a_widely_shared_system_prompt_is_copied_to_an_idle_replica_with_room():
    """The system prompt held only on a (busier): b has room, and once conversations
    branch after the prompt, copying it costs b a share of its prefill. A
    conversation's own history (nobody else's) is not copied for the same load."""
    a, b = fleet(4, 0)
    system = SYSTEM * 16  # 16 blocks, two segments: a full copy costs more than a's queue
    scorer, router = _cost_router(index_of({a: system, b: []}, evicting=False))

    def first_for(ids: list[int]) -> Endpoint:
        scorer.tokens = Ids(ids)
        return router.rank(ctx(), [a, b])[0]

    assert first_for(system + [2000] * 32) is a  # nobody shares it yet: a's queue is cheaper
    for conv in range(5):  # each a segment (8 blocks) past the branch: it is seen
        first_for(system + [2001 + conv] * 32)
    assert first_for(system + [3000] * 32) is b  # six conversations share it: worth a copy
    turns = [system + sum(([4000 + k] * 32 for k in range(n)), []) for n in range(1, 6)]
    for ids in turns[:-1]:
        first_for(ids)  # one conversation, each turn extending the last by 8 blocks
    scorer.index = index_of({a: turns[-2], b: system}, evicting=False)
    assert first_for(turns[-1]) is a  # its history is its own: full price on b


def test_a_tenant_context_carrying_a_small_share_of_traffic_keeps_one_home():
    """Many questions branch after tenant 1's context, but it carries a fifth of the
    requests and a, holding it, is more than its share of the fleet: no copy."""
    a, b = fleet(3, 0)
    context = [11] * 64
    scorer, router = _cost_router(index_of({a: context, b: []}, evicting=False))
    for q in range(30):
        scorer.tokens = Ids((context if q % 5 == 0 else [12 + q] * 64) + [2000 + q] * 32)
        router.rank(ctx(), [a, b])
    scorer.tokens = Ids(context + [3000] * 32)
    assert router.rank(ctx(), [a, b])[0] is a


def test_expected_cost_counts_queue_and_missing_tokens():
    a, b = fleet(2, 0)
    held = Held({a: 0.5, b: 0.0}, frozenset({b}), {a: 20}, 40)
    assert expected_cost(a, held, 10) == 2 * 10 + 20 * 2  # a evicts: twice its misses
    assert expected_cost(b, held, 10) == 40
    priced = Held({a: 0.5, b: 0.0}, frozenset({a, b}), {a: 20}, 40, {a: 20.0, b: 12.5})
    assert expected_cost(b, priced, 10) == 12.5  # b has room: a shared prefix amortized
    assert expected_cost(a, priced, 10) == 2 * 10 + 20


def test_no_token_ids_fall_back_to_bounded_load():
    a, b = fleet(0, 0)
    seen: list[str] = []
    scorer = KvCacheScorer(index_of({a: SYSTEM, b: SYSTEM}), Ids(None), seen.append,
                           thread_bytes=0)  # fmt: skip
    fallback = BoundedLoad(epsilon=0.25, min_in_flight=8)
    router = Router([Weighted(scorer, 1.0)], KvCostPicker(queue_tokens=QUEUE,
                                                          fallback=fallback))  # fmt: skip
    affinity = Router([Weighted(scorer, 1.0)], fallback)
    assert router.rank(ctx(), [a, b]) == affinity.rank(ctx(), [a, b]) and "no_tokens" in seen


def test_registry_builds_the_cost_picker_from_settings():
    on = RoutingSettings(kv_events=KvEventsSettings(enabled=True), scorers="kv_cache:1,load:0.3",
                         picker={"name": "cost"})  # fmt: skip
    metrics = Metrics()
    kv = build_kv(on.kv_events, EndpointPool(), metrics, "")
    router = build_router(on, metrics, panic=True, kv=kv)
    assert isinstance(router.picker, KvCostPicker)
    assert router.picker.queue_tokens == on.picker.queue_tokens == 400
    assert router.picker.fallback.min_in_flight == 8
    with pytest.raises(ValueError, match="kv_cache"):
        RoutingSettings(picker={"name": "cost"})

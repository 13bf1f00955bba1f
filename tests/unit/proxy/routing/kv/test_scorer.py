"""The kv_cache scorer: leading-block share, tenants apart, fallback, registry default."""

from __future__ import annotations

import pytest

from proxy.backends.endpoint import Endpoint, EndpointPool
from proxy.context import RequestContext
from proxy.metrics import Metrics
from proxy.routing.affinity import PrefixAffinity
from proxy.routing.kv.events import BlockStored
from proxy.routing.kv.index import KvIndex
from proxy.routing.kv.picker import KvBoundedLoad
from proxy.routing.kv.scorer import TIE_WEIGHT, KvCacheScorer
from proxy.routing.kv.service import build_kv
from proxy.routing.registry import build_router
from proxy.settings import KvEventsSettings, RoutingSettings

A, B = Endpoint("http://a:8000"), Endpoint("http://b:8000")
IDS = list(range(100, 140))  # 10 full blocks of 4


class Ids:
    """Stands in for RequestTokens: fixed ids (None = no tokenizer)."""

    def __init__(self, ids):
        self.value = ids

    def ids(self, route, body, model, wait=True):
        assert not wait  # the scorer never loads a tokenizer on the event loop
        return self.value


def ctx(salt: str | None = None) -> RequestContext:
    body = {"model": "m", "messages": []}
    if salt:
        body["cache_salt"] = salt
    return RequestContext("r", "chat", b"", body, {}, prefix_key="k")


def index_with(url: str, blocks: int, salt: str | None = None) -> KvIndex:
    index = KvIndex()
    index.reset(url).synced = True
    extras = [[salt]] + [None] * (blocks - 1) if salt else None
    index.apply(url, [BlockStored([f"h{i}" for i in range(blocks)], None, IDS[: 4 * blocks],
                                  4, "GPU", None, extras, 0)])  # fmt: skip
    return index


def test_share_of_leading_blocks():
    index = index_with(A.url, 6)
    index.reset(B.url).synced = True
    scores = KvCacheScorer(index, Ids(IDS), thread_bytes=0).score(ctx(), [A, B])
    assert scores[A] == pytest.approx(0.6, abs=TIE_WEIGHT)
    assert scores[B] == pytest.approx(0.0, abs=TIE_WEIGHT)


def test_another_tenants_identical_prompt_scores_zero():
    index = index_with(A.url, 10, salt="tenant-a")
    scorer = KvCacheScorer(index, Ids(IDS), thread_bytes=0)
    assert scorer.shares(ctx("tenant-a"), [A])[A][0] == 1.0
    assert scorer.shares(ctx("tenant-b"), [A])[A][0] == 0.0
    assert scorer.shares(ctx(), [A])[A][0] == 0.0


def test_a_prefix_held_nowhere_gets_rendezvous_affinity():
    index = index_with(A.url, 10, salt="tenant-a")
    index.reset(B.url).synced = True
    seen: list[str] = []
    scores = KvCacheScorer(index, Ids(IDS), seen.append, thread_bytes=0).score(
        ctx("tenant-b"), [A, B]
    )
    assert scores == PrefixAffinity().score(ctx("tenant-b"), [A, B]) and seen == ["cold"]


def test_stale_backend_falls_back_to_affinity_and_counts():
    index = index_with(A.url, 10)
    index.backend(A.url).synced = False
    seen: list[str] = []
    scores = KvCacheScorer(index, Ids(IDS), seen.append, thread_bytes=0).score(ctx(), [A, B])
    assert scores == PrefixAffinity().score(ctx(), [A, B])
    assert seen == ["stale", "stale"]


def test_no_token_ids_falls_back():
    seen: list[str] = []
    scores = KvCacheScorer(KvIndex(), Ids(None), seen.append, thread_bytes=0).score(ctx(), [A, B])
    assert scores == PrefixAffinity().score(ctx(), [A, B]) and seen == ["no_tokens"]


def test_ties_spread_over_backends():
    """Every replica holds the shared first block (a system prompt): equal shares."""
    urls = [Endpoint(f"http://r{i}:8000") for i in range(4)]
    index = KvIndex()
    for ep in urls:
        index.reset(ep.url).synced = True
        index.apply(ep.url, [BlockStored(["s"], None, [7] * 4, 4, "GPU")])
    firsts = set()
    for n in range(40):
        scores = KvCacheScorer(index, Ids([7] * 4 + [n] * 4), thread_bytes=0).score(ctx(), urls)
        assert all(v == pytest.approx(0.5, abs=TIE_WEIGHT) for v in scores.values())
        firsts.add(max(urls, key=lambda ep: scores[ep]).url)
    assert len(firsts) == 4


def test_registry_builds_the_kv_cache_scorer_named_with_events_on():
    on = RoutingSettings(kv_events=KvEventsSettings(enabled=True), scorers="kv_cache:1,load:0.3")
    assert [s.name for s in on.scorers] == ["kv_cache", "load"] and on.picker.name == "bounded"
    assert on.picker.min_in_flight == 8 and on.picker.spill_floor == 3
    assert [s.name for s in RoutingSettings().scorers] == ["affinity", "load"]
    metrics = Metrics()
    kv = build_kv(on.kv_events, EndpointPool(), metrics, "")
    router = build_router(on, metrics, panic=True, kv=kv)
    assert isinstance(router.scorers[0].scorer, KvCacheScorer)
    assert isinstance(router.picker, KvBoundedLoad)
    assert (router.picker.held, router.picker.free) == (8, 3)
    with pytest.raises(ValueError, match="kv_events.enabled"):
        build_router(on, Metrics(), panic=True)  # the subscription not built
    assert build_kv(KvEventsSettings(), EndpointPool(), metrics, "") is None

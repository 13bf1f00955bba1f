"""The kv_cache scorer's token ids are computed before ranking, off the event loop for
a large body, and a failure there routes by affinity (counted), never fails."""

from __future__ import annotations

import threading

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext
from proxy.routing.affinity import PrefixAffinity
from proxy.routing.kv.events import BlockStored
from proxy.routing.kv.index import KvIndex
from proxy.routing.kv.scorer import KvCacheScorer
from proxy.routing.load import LeastLoaded
from proxy.routing.router import Router, Weighted

A, B = Endpoint("http://a:8000"), Endpoint("http://b:8000")
IDS = list(range(100, 140))


class Ids:
    """Stands in for RequestTokens: fixed ids, the threads and calls it saw."""

    def __init__(self, ids, fail: bool = False, pending: int = 0):
        self.value, self.fail, self.pending = ids, fail, pending
        self.threads: list[int] = []

    def pending_bytes(self, route, body, model):
        return self.pending

    def ids(self, route, body, model, wait=True):
        assert not wait
        self.threads.append(threading.get_ident())
        if self.fail:
            raise RuntimeError("tokenizer broke")
        return self.value


def ctx(raw: bytes = b"{}") -> RequestContext:
    return RequestContext("r", "chat", raw, {"model": "m", "messages": []}, {}, prefix_key="k")


def index_on_a() -> KvIndex:
    index = KvIndex()
    for url in (A.url, B.url):
        index.reset(url).synced = True
    index.apply(A.url, [BlockStored(["h"], None, IDS[:4], 4, "GPU")])
    return index


async def test_a_large_body_is_tokenized_in_a_worker_thread():
    tokens = Ids(IDS, pending=100)
    scorer = KvCacheScorer(index_on_a(), tokens, thread_bytes=100)
    request = ctx(b"x" * 100)
    await scorer.prepare(request)
    assert request.token_ids == IDS and tokens.threads[0] != threading.get_ident()
    scorer.score(request, [A, B])
    assert len(tokens.threads) == 1  # ranking reads the prepared ids, tokenizes nothing


async def test_a_body_whose_uncached_text_is_small_is_tokenized_inline():
    tokens = Ids(IDS, pending=99)
    request = ctx(b"x" * 10_000)  # the rest: a static prefix already cached
    await KvCacheScorer(index_on_a(), tokens, thread_bytes=100).prepare(request)
    assert request.token_ids == IDS and tokens.threads == [threading.get_ident()]


async def test_a_failing_tokenizer_falls_back_counted():
    seen: list[str] = []
    scorer = KvCacheScorer(index_on_a(), Ids(IDS, fail=True), seen.append, thread_bytes=0)
    request = ctx()
    await scorer.prepare(request)
    assert request.token_ids == []
    assert scorer.score(request, [A, B]) == PrefixAffinity().score(request, [A, B])
    assert seen == ["no_tokens"]


async def test_pass_through_is_not_tokenized():
    tokens = Ids(IDS)
    request = RequestContext("r", "other", b"", {}, {})
    await KvCacheScorer(index_on_a(), tokens, thread_bytes=0).prepare(request)
    assert request.token_ids is None and tokens.threads == []


async def test_router_prepare_awaits_the_scorers_that_have_it():
    tokens = Ids(IDS)
    scorer = KvCacheScorer(index_on_a(), tokens, thread_bytes=0)
    router = Router([Weighted(scorer, 1.0), Weighted(LeastLoaded(), 0.3)])
    request = ctx()
    await router.prepare(request)
    assert request.token_ids == IDS
    assert router.rank(request, [A, B])[0] is A and len(tokens.threads) == 1

"""proxy/backends/warmup.py: which hot prefixes a replica turning healthy gets (the configured
router's choice), the bounds, and that its replays hold in-flight slots."""

import asyncio
import json
import time

import pytest

from cache.prefixes import PrefixRegistry
from cache.store import MemoryStore
from proxy.backends.endpoint import Endpoint, EndpointPool
from proxy.backends.warmup import Warmer
from proxy.metrics import Metrics
from proxy.routing.registry import build_router
from proxy.routing.router import Router
from proxy.settings import RoutingSettings, WarmupSettings
from tests.support.compressor_doubles import HandlerTransport
from tests.support.rendezvous import rendezvous_order

A, B = "http://replica-a", "http://replica-b"


class Backend:
    """Transport handler: records replays, can stall, counts concurrency, and reads the
    replica's in-flight count while each replay is on the wire."""

    def __init__(self, pool: EndpointPool, delay: float = 0.0):
        self.pool, self.delay, self.seen, self.in_flight, self.most = pool, delay, [], 0, 0
        self.slots: list[int] = []

    async def __call__(self, method, url, headers, body):
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        self.slots.append(self.pool.get(url.split("/v1/")[0]).in_flight)
        try:
            await asyncio.sleep(self.delay)
            self.seen.append((url, json.loads(body)))
            return 200, b'{"choices": []}'
        finally:
            self.in_flight -= 1


async def registry(n: int) -> tuple[PrefixRegistry, list[str]]:
    """n prefixes, key i requested n - i times; odd ones for another model."""
    reg, keys = PrefixRegistry(MemoryStore()), [f"key-{i}" for i in range(n)]
    for i, key in enumerate(keys):
        model = "m" if i % 2 == 0 else "other"
        for _ in range(n - i):
            await reg.record(key, model=model, replica=A, prompt_tokens=10, cached_tokens=0)
        await reg.remember_replay(key, {"model": model, "messages": [{"content": key}],
                                        "max_tokens": 1})  # fmt: skip
    return reg, keys


def pool_of_two() -> EndpointPool:
    return EndpointPool([Endpoint(A, healthy=True, models=frozenset({"m"})),
                         Endpoint(B, healthy=True, models=frozenset({"m"}))])  # fmt: skip


def warm(settings: WarmupSettings, delay: float = 0.0, n: int = 24, router=None,
         warmed: str = A):  # fmt: skip
    async def scenario():
        reg, keys = await registry(n)
        pool, metrics = pool_of_two(), Metrics()
        backend = Backend(pool, delay)
        chosen = router or build_router(RoutingSettings(), metrics, panic=True)
        warmer = Warmer(settings, pool, reg, HandlerTransport(backend), metrics, chosen)
        await warmer(pool.get(warmed))
        return keys, metrics, backend, pool

    return asyncio.run(scenario())


def test_replays_only_the_hot_prefixes_the_router_sends_here_for_its_models():
    keys, metrics, backend, pool = warm(WarmupSettings(top_n=10, concurrency=2))
    replayed = {body["messages"][0]["content"] for _, body in backend.seen}
    expected = {k for i, k in enumerate(keys[:10])  # the 10 hottest
                if i % 2 == 0 and rendezvous_order(k, [A, B])[0] == A}  # fmt: skip
    assert replayed == expected and expected  # not B's, not another model's, not the cold
    assert all(url == f"{A}/v1/chat/completions" for url, _ in backend.seen)
    ok = metrics.registry.get_sample_value("ragtrim_warmup_replays_total", {"result": "ok"})
    assert ok == len(expected)
    assert backend.most <= 2


def test_the_owner_is_the_configured_routers_choice_not_rendezvous():
    # no scorers: every total is 0 and ties go by URL, so A takes every request
    for warmed, count in ((A, 5), (B, 0)):
        _, _, backend, _ = warm(WarmupSettings(top_n=10), router=Router([]), warmed=warmed)
        assert len(backend.seen) == count  # the 5 hot prefixes of model m, all A's


def test_replays_hold_an_in_flight_slot_and_give_it_back():
    _, _, backend, pool = warm(WarmupSettings(top_n=10, concurrency=1))
    assert backend.slots and all(n == 1 for n in backend.slots)  # one at a time, counted
    assert [ep.in_flight for ep in pool.endpoints] == [0, 0]


def test_time_budget_stops_a_stalled_warm_up():
    start = time.monotonic()
    _, _, backend, pool = warm(WarmupSettings(top_n=10, concurrency=1, budget_s=0.2), delay=30)
    assert time.monotonic() - start < 10 and backend.seen == []  # gave up at the budget
    assert pool.get(A).in_flight == 0  # the cancelled replay gave its slot back


@pytest.mark.parametrize("settings", [WarmupSettings(enabled=False), WarmupSettings(top_n=0)])
def test_disabled_warm_up_sends_nothing(settings):
    _, _, backend, _ = warm(settings)
    assert backend.seen == []


def test_a_replay_without_model_is_warmed_where_the_router_sends_it():
    """vLLM makes `model` optional (issue 31): such a replay goes as its request did."""
    pool = pool_of_two()
    warmer = Warmer(WarmupSettings(), pool, None, None, Metrics(), Router([]))
    body = {"messages": [{"role": "system", "content": "s"}], "max_tokens": 1}
    assert warmer.owns(pool.get(A), "k", body) and not warmer.owns(pool.get(B), "k", body)
    assert not warmer.owns(pool.get(A), "k", {**body, "model": "other"})

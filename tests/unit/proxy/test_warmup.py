"""proxy/warmup.py: which hot prefixes a replica turning healthy gets, and the bounds."""

import asyncio
import json
import time

import httpx
import pytest

from cache.prefixes import PrefixRegistry
from cache.store import MemoryStore
from proxy.metrics import Metrics
from proxy.routing.affinity import rendezvous_order
from proxy.routing.endpoint import Endpoint, EndpointPool
from proxy.settings import WarmupSettings
from proxy.warmup import Warmer

A, B = "http://replica-a", "http://replica-b"


class Backend:
    """httpx MockTransport handler: records replays, can stall, counts concurrency."""

    def __init__(self, delay: float = 0.0):
        self.delay, self.seen, self.in_flight, self.most = delay, [], 0, 0

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            self.seen.append((str(request.url), json.loads(request.content)))
            return httpx.Response(200, json={"choices": []})
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


def warm(settings: WarmupSettings, backend: Backend, n: int = 24):
    async def scenario():
        reg, keys = await registry(n)
        pool = EndpointPool([Endpoint(A, healthy=True, models=frozenset({"m"})), Endpoint(B)])
        metrics = Metrics()
        async with httpx.AsyncClient(transport=httpx.MockTransport(backend)) as client:
            await Warmer(settings, pool, reg, client, metrics)(pool.endpoints[0])
        return keys, metrics

    return asyncio.run(scenario())


def test_replays_only_the_hot_prefixes_this_replica_owns_for_its_models():
    backend = Backend()
    keys, metrics = warm(WarmupSettings(top_n=10, concurrency=2), backend)
    replayed = {body["messages"][0]["content"] for _, body in backend.seen}
    expected = {k for i, k in enumerate(keys[:10])  # the 10 hottest
                if i % 2 == 0 and rendezvous_order(k, [A, B])[0] == A}  # fmt: skip
    assert replayed == expected and expected  # not B's, not another model's, not the cold
    assert all(url == f"{A}/v1/chat/completions" for url, _ in backend.seen)
    ok = metrics.registry.get_sample_value("ragtrim_warmup_replays_total", {"result": "ok"})
    assert ok == len(expected)
    assert backend.most <= 2


def test_time_budget_stops_a_stalled_warm_up():
    backend = Backend(delay=30.0)
    start = time.monotonic()
    warm(WarmupSettings(top_n=10, concurrency=1, budget_s=0.2), backend)
    assert time.monotonic() - start < 10 and backend.seen == []  # gave up at the budget


@pytest.mark.parametrize("settings", [WarmupSettings(enabled=False), WarmupSettings(top_n=0)])
def test_disabled_warm_up_sends_nothing(settings):
    backend = Backend()
    warm(settings, backend)
    assert backend.seen == []

"""Subscriptions follow the pool: a joiner is subscribed, a leaver dropped with its
blocks; endpoints follow the backend address or per-backend settings."""

from __future__ import annotations

import asyncio

from proxy.backends.endpoint import EndpointPool
from proxy.routing.kv.index import KvIndex
from proxy.routing.kv.subscriptions import KvSubscriptions, event_endpoints
from proxy.settings import KvEndpoint, KvEventsSettings


def test_endpoints_follow_the_backend_address():
    s = KvEventsSettings(enabled=True, port=6000, replay_port=6001)
    assert event_endpoints("http://10.0.0.5:8000", s) == (
        "tcp://10.0.0.5:6000",
        "tcp://10.0.0.5:6001",
    )
    assert event_endpoints("http://[fd00::1]:8000", s)[0] == "tcp://[fd00::1]:6000"
    assert event_endpoints("http://a:8000", KvEventsSettings(replay_port=0))[1] is None
    own = KvEventsSettings(endpoints={"http://a:8000": KvEndpoint(pub="tcp://b:7")})
    assert event_endpoints("http://a:8000", own) == ("tcp://b:7", None)


async def test_joiners_are_subscribed_and_leavers_forgotten():
    pool, index = EndpointPool.from_urls(["http://127.0.0.1:1"]), KvIndex()
    subs = KvSubscriptions(pool, index, KvEventsSettings(enabled=True, interval_s=0.05,
                                                         replay_timeout_s=0.1))  # fmt: skip
    await subs.start()
    try:
        assert set(subs.subscribers) == {"http://127.0.0.1:1"}
        pool.add("http://127.0.0.1:2")
        await asyncio.sleep(0.2)
        assert set(subs.subscribers) == {"http://127.0.0.1:1", "http://127.0.0.1:2"}
        index.reset("http://127.0.0.1:1")
        pool.remove("http://127.0.0.1:1")
        await asyncio.sleep(0.2)
        assert set(subs.subscribers) == {"http://127.0.0.1:2"}
        assert index.backend("http://127.0.0.1:1") is None
    finally:
        await subs.stop()
    assert subs.subscribers == {}

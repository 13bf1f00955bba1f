"""MemoryStore's counters with a TTL and its `eval` (the in-process side of the
shared-store methods issue 22 added; Redis's side: tests/integration/test_quota_redis.py)."""

import time

from cache.store import MemoryStore


async def test_hincr_ttl_expires_the_whole_hash(monkeypatch):
    store = MemoryStore()
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    await store.hincr("usage:acme", {"requests": 1, "tokens": 10}, ttl=5)
    await store.hincr("usage:acme", {"requests": 1}, ttl=5)
    assert await store.hgetall("usage:acme") == {"requests": "2.0", "tokens": "10.0"}
    now[0] += 4
    await store.hincr("usage:acme", {"requests": 1}, ttl=5)  # restarts the expiry
    now[0] += 4
    assert (await store.hgetall("usage:acme"))["requests"] == "3.0"
    now[0] += 2
    assert await store.hgetall("usage:acme") == {}
    await store.hincr("usage:acme", {"requests": 1})
    assert await store.hgetall("usage:acme") == {"requests": "1.0"}


async def test_eval_is_answered_by_the_callers_local_version():
    calls = []

    async def local():
        calls.append(1)
        return [1, 2, 3, 4]

    assert await MemoryStore().eval("return 1", ["k"], [1], local) == [1, 2, 3, 4]
    assert calls == [1]

"""KVStore: bytes by key, with a TTL. A miss and an outage look the same to callers.

MemoryStore  in-process LRU (the embedded default; one per app, not global)
RedisStore   shared by every ragtrim replica; short timeouts, no retries; while Redis
             fails, an in-process fallback answers (reported through `on_error`:
             the proxy counts them) until a background probe sees it back
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from cache.lru import MEMORY_BYTES, OVERHEAD, ByteLRU
from cache.outage import REDIS_TIMEOUT_S, Outage

log = logging.getLogger("ragtrim.cache")
OnError = Callable[[str, BaseException], None]
T = TypeVar("T")
ZSET_TRIM_LUA = """
local score = redis.call('ZINCRBY', KEYS[1], ARGV[1], ARGV[2])
local keep = tonumber(ARGV[3])
if keep > 0 and redis.call('ZCARD', KEYS[1]) > 2 * keep then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(keep + 1))
  redis.call('ZADD', KEYS[1], score, ARGV[2])
end
if tonumber(ARGV[4]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return 0
"""


class KVStore(Protocol):
    async def get(self, key: str) -> bytes | None: ...

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]: ...

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None: ...

    async def set_many(self, items: dict[str, bytes], ttl: float | None = None) -> None: ...

    async def hincr(self, key: str, fields: dict[str, float], ttl: float | None = None) -> None: ...

    async def eval(self, script: str, keys: Sequence[str], args: Sequence[int | float | str],
                   local: Callable[[], Awaitable[T]]) -> T: ...  # fmt: skip

    async def hsetnx(self, key: str, field: str, value: str) -> None: ...

    async def hgetall(self, key: str) -> dict[str, str]: ...

    async def zincr(self, key: str, member: str, amount: float = 1, *, keep: int | None = None,
                    ttl: float | None = None) -> None: ...  # fmt: skip

    async def ztop(self, key: str, n: int) -> list[str]: ...

    async def aclose(self) -> None: ...


class MemoryStore:
    """LRU with per-entry expiry, bounded in bytes (cache/lru.py says why): values,
    hashes and sorted sets share one order under `max_bytes` and `max_items` (keys of
    any kind), and each tenant's memo and feature entries a fair share of both (the
    heaviest owner is evicted first)."""

    def __init__(self, max_items: int = 100_000, max_bytes: int = MEMORY_BYTES):
        self.max_items = max_items
        self.lru = ByteLRU(max_bytes, max_items=max_items)
        self._data: dict[str, tuple[bytes, float]] = {}  # the order is the LRU's
        self._hashes: dict[str, dict[str, str]] = {}
        self._hash_expires: dict[str, float] = {}  # hashes given a ttl (hincr)
        self._zsets: dict[str, dict[str, float]] = {}

    async def get(self, key: str) -> bytes | None:
        item = self._data.get(key)
        if item is None:
            return None
        value, expires = item
        if expires and expires < time.monotonic():
            self._drop(key)
            return None
        self.lru.touch(key)
        return value

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        return [await self.get(k) for k in keys]

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        self._data[key] = (value, time.monotonic() + ttl if ttl else 0.0)
        self._account(key, len(key) + len(value) + OVERHEAD)

    def _account(self, key: str, size: int) -> None:
        for old in self.lru.set(key, size):
            self._drop(old)

    def _drop(self, key: str) -> None:
        """Forget `key`, whatever its kind."""
        self._data.pop(key, None)
        self._hashes.pop(key, None)
        self._zsets.pop(key, None)
        self.lru.drop(key)

    async def set_many(self, items: dict[str, bytes], ttl: float | None = None) -> None:
        for key, value in items.items():
            await self.set(key, value, ttl)

    async def hincr(self, key: str, fields: dict[str, float], ttl: float | None = None) -> None:
        """`ttl` (seconds) restarts the hash's expiry, as HINCRBYFLOAT + PEXPIRE would."""
        self._expire_hash(key)
        table = self._hashes.setdefault(key, {})
        for field, amount in fields.items():
            table[field] = str(float(table.get(field, 0)) + amount)
        self._account(key, _hash_size(key, table))
        if ttl:
            self._hash_expires[key] = time.monotonic() + ttl

    def _expire_hash(self, key: str) -> None:
        expires = self._hash_expires.get(key)
        if expires is not None and expires < time.monotonic():
            self._drop(key)  # its bytes leave the LRU's account too
            del self._hash_expires[key]

    async def eval(self, script: str, keys: Sequence[str], args: Sequence[int | float | str],
                   local: Callable[[], Awaitable[T]]) -> T:  # fmt: skip
        """No script engine in process: `local`, the caller's own version of it, answers."""
        return await local()

    async def hsetnx(self, key: str, field: str, value: str) -> None:
        table = self._hashes.setdefault(key, {})
        table.setdefault(field, value)
        self._account(key, _hash_size(key, table))

    async def hgetall(self, key: str) -> dict[str, str]:
        self._expire_hash(key)
        self.lru.touch(key)
        return dict(self._hashes.get(key, {}))

    async def zincr(self, key: str, member: str, amount: float = 1, *, keep: int | None = None,
                    ttl: float | None = None) -> None:  # fmt: skip
        """`keep`: past 2 × keep members, the set is cut to its top `keep` and `member`
        (ZSET_TRIM_LUA: one cut per `keep` newcomers, who have that long to climb). `ttl`
        is Redis's business (PEXPIRE): the byte cap bounds this store."""
        zset = self._zsets.setdefault(key, {})
        size = self.lru.size(key) or len(key) + OVERHEAD
        if member not in zset:
            size += len(member) + OVERHEAD
        zset[member] = zset.get(member, 0.0) + amount
        if keep is not None and len(zset) > 2 * keep:
            top = {*heapq.nsmallest(keep, zset, key=lambda m: (-zset[m], m)), member}
            self._zsets[key] = zset = {m: zset[m] for m in top}
            size = len(key) + OVERHEAD + sum(len(m) + OVERHEAD for m in zset)
        self._account(key, size)

    async def ztop(self, key: str, n: int) -> list[str]:
        zset = self._zsets.get(key, {})
        return sorted(zset, key=lambda m: (-zset[m], m))[:n]

    async def aclose(self) -> None:
        self._data.clear()
        self._hashes.clear()
        self._zsets.clear()
        self.lru.clear()


def _hash_size(key: str, table: dict[str, str]) -> int:
    return len(key) + OVERHEAD + sum(len(f) + len(v) + OVERHEAD for f, v in table.items())


class RedisStore:
    """Redis-backed store, shared by every replica; never the reason a request fails.

    Every call is bounded by `timeout` (no client retries: a retry would multiply the
    wait). A failure is counted through `on_error` and the call is served by the
    in-process `fallback` instead (a miss, then whatever was written meanwhile); while
    Redis is down every call goes to the fallback at once, until a background probe
    sees it answer again (cache/outage.py). What was written to the fallback during
    the outage stays local: a memo entry is recomputed once on its next miss.
    """

    def __init__(self, url: str, *, timeout: float = REDIS_TIMEOUT_S, retry_after: float = 0.5,
                 on_error: OnError | None = None, prefix: str = "ragtrim:",
                 fallback: KVStore | None = None):  # fmt: skip
        import redis.asyncio as redis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        self.client = redis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0), retry_on_timeout=False,
        )  # fmt: skip
        self.prefix = prefix
        self.timeout = timeout
        self.fallback: KVStore = fallback if fallback is not None else MemoryStore(10_000)
        self.outage = Outage(self._probe, retry_after=retry_after, timeout=timeout)
        self._scripts: dict[str, Any] = {}  # Lua source → redis-py Script (its SHA)
        self.on_error = on_error or (lambda op, exc: log.warning("redis %s failed: %r", op, exc))

    async def _probe(self) -> None:
        """Fresh connections, then PING: pooled ones may be dead (a restarted server
        resets them), and each would fail one request after the store is back up."""
        await self.client.connection_pool.disconnect()
        await self.client.ping()

    async def _call(self, op: str, remote: Callable[[], Awaitable[T]],
                    local: Callable[[], Awaitable[T]]) -> T:  # fmt: skip
        if self.outage.down:
            return await local()
        try:
            async with asyncio.timeout(self.timeout):
                return await remote()
        except Exception as exc:  # noqa: BLE001 - an outage reads as the fallback
            self.on_error(op, exc)
            self.outage.failed()
            return await local()

    async def get(self, key: str) -> bytes | None:
        return (await self.get_many([key]))[0]

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        if not keys:
            return []
        return await self._call("get", lambda: self.client.mget([self.prefix + k for k in keys]),
                                lambda: self.fallback.get_many(keys))  # fmt: skip

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        await self.set_many({key: value}, ttl)

    async def set_many(self, items: dict[str, bytes], ttl: float | None = None) -> None:
        if not items:
            return

        async def remote() -> None:
            async with self.client.pipeline(transaction=False) as pipe:
                for key, value in items.items():
                    pipe.set(self.prefix + key, value, px=int(ttl * 1000) if ttl else None)
                await pipe.execute()

        await self._call("set", remote, lambda: self.fallback.set_many(items, ttl))

    async def hincr(self, key: str, fields: dict[str, float], ttl: float | None = None) -> None:
        """With `ttl`, in one MULTI/EXEC: every field and the expiry land together."""

        async def remote() -> None:
            async with self.client.pipeline(transaction=ttl is not None) as pipe:
                for field, amount in fields.items():
                    pipe.hincrbyfloat(self.prefix + key, field, amount)
                if ttl:
                    pipe.pexpire(self.prefix + key, int(ttl * 1000))
                await pipe.execute()

        await self._call("hincr", remote, lambda: self.fallback.hincr(key, fields, ttl))

    async def eval(self, script: str, keys: Sequence[str], args: Sequence[int | float | str],
                   local: Callable[[], Awaitable[T]]) -> T:  # fmt: skip
        """A Lua script, atomic on the server (EVALSHA, EVAL once on NOSCRIPT: redis-py's
        Script); keys get the store's prefix. Down or failing: `local` answers, counted."""
        registered = self._scripts.get(script)
        if registered is None:
            registered = self._scripts[script] = self.client.register_script(script)
        full = [self.prefix + k for k in keys]
        return await self._call("eval", lambda: registered(keys=full, args=list(args)), local)

    async def hsetnx(self, key: str, field: str, value: str) -> None:
        await self._call("hsetnx", lambda: self.client.hsetnx(self.prefix + key, field, value),
                         lambda: self.fallback.hsetnx(key, field, value))  # fmt: skip

    async def hgetall(self, key: str) -> dict[str, str]:
        async def remote() -> dict[str, str]:
            raw = await self.client.hgetall(self.prefix + key)
            return {k.decode(): v.decode() for k, v in raw.items()}

        return await self._call("hgetall", remote, lambda: self.fallback.hgetall(key))

    async def zincr(self, key: str, member: str, amount: float = 1, *, keep: int | None = None,
                    ttl: float | None = None) -> None:  # fmt: skip
        """As MemoryStore.zincr, atomic on the server (ZSET_TRIM_LUA); `ttl` restarts the
        set's expiry."""
        local = self.fallback.zincr
        args = [amount, member, keep or 0, int(ttl * 1000) if ttl else 0]
        await self.eval(ZSET_TRIM_LUA, [key], args,
                        lambda: local(key, member, amount, keep=keep, ttl=ttl))  # fmt: skip

    async def ztop(self, key: str, n: int) -> list[str]:
        async def remote() -> list[str]:
            members = await self.client.zrevrange(self.prefix + key, 0, n - 1)
            return [m.decode() for m in members]

        return await self._call("ztop", remote, lambda: self.fallback.ztop(key, n))

    async def aclose(self) -> None:
        await self.outage.aclose()
        await self.client.aclose()
        await self.fallback.aclose()

"""KVStore: bytes by key, with a TTL. A miss and an outage look the same to callers.

MemoryStore  in-process LRU (the embedded default; one per app, not global)
RedisStore   shared by every ragtrim replica; short timeouts; errors → miss/no-op,
             reported through `on_error` (the proxy counts them)
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Protocol

log = logging.getLogger("ragtrim.cache")
OnError = Callable[[str, BaseException], None]


class KVStore(Protocol):
    async def get(self, key: str) -> bytes | None: ...

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]: ...

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None: ...

    async def set_many(self, items: dict[str, bytes], ttl: float | None = None) -> None: ...

    async def hincr(self, key: str, fields: dict[str, float]) -> None: ...

    async def hsetnx(self, key: str, field: str, value: str) -> None: ...

    async def hgetall(self, key: str) -> dict[str, str]: ...

    async def zincr(self, key: str, member: str, amount: float = 1) -> None: ...

    async def ztop(self, key: str, n: int) -> list[str]: ...

    async def aclose(self) -> None: ...


class MemoryStore:
    """Bounded LRU with per-entry expiry."""

    def __init__(self, max_items: int = 100_000):
        self.max_items = max_items
        self._data: OrderedDict[str, tuple[bytes, float]] = OrderedDict()
        self._hashes: dict[str, dict[str, str]] = {}
        self._zsets: dict[str, dict[str, float]] = {}

    async def get(self, key: str) -> bytes | None:
        item = self._data.get(key)
        if item is None:
            return None
        value, expires = item
        if expires and expires < time.monotonic():
            del self._data[key]
            return None
        self._data.move_to_end(key)
        return value

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        return [await self.get(k) for k in keys]

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        self._data[key] = (value, time.monotonic() + ttl if ttl else 0.0)
        self._data.move_to_end(key)
        while len(self._data) > self.max_items:
            self._data.popitem(last=False)

    async def set_many(self, items: dict[str, bytes], ttl: float | None = None) -> None:
        for key, value in items.items():
            await self.set(key, value, ttl)

    async def hincr(self, key: str, fields: dict[str, float]) -> None:
        table = self._hashes.setdefault(key, {})
        for field, amount in fields.items():
            table[field] = str(float(table.get(field, 0)) + amount)

    async def hsetnx(self, key: str, field: str, value: str) -> None:
        self._hashes.setdefault(key, {}).setdefault(field, value)

    async def hgetall(self, key: str) -> dict[str, str]:
        return dict(self._hashes.get(key, {}))

    async def zincr(self, key: str, member: str, amount: float = 1) -> None:
        zset = self._zsets.setdefault(key, {})
        zset[member] = zset.get(member, 0.0) + amount

    async def ztop(self, key: str, n: int) -> list[str]:
        zset = self._zsets.get(key, {})
        return sorted(zset, key=lambda m: (-zset[m], m))[:n]

    async def aclose(self) -> None:
        self._data.clear()


class RedisStore:
    """Redis-backed store; every failure is a miss (get) or a no-op (set)."""

    def __init__(self, url: str, *, timeout: float = 0.25, on_error: OnError | None = None,
                 prefix: str = "ragtrim:"):  # fmt: skip
        import redis.asyncio as redis

        self.client = redis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        self.prefix = prefix
        self.on_error = on_error or (lambda op, exc: log.warning("redis %s failed: %r", op, exc))

    async def get(self, key: str) -> bytes | None:
        return (await self.get_many([key]))[0]

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        if not keys:
            return []
        try:
            return await self.client.mget([self.prefix + k for k in keys])
        except Exception as exc:  # noqa: BLE001 - an outage reads as a miss
            self.on_error("get", exc)
            return [None] * len(keys)

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        await self.set_many({key: value}, ttl)

    async def set_many(self, items: dict[str, bytes], ttl: float | None = None) -> None:
        if not items:
            return
        try:
            async with self.client.pipeline(transaction=False) as pipe:
                for key, value in items.items():
                    pipe.set(self.prefix + key, value, px=int(ttl * 1000) if ttl else None)
                await pipe.execute()
        except Exception as exc:  # noqa: BLE001 - fail open
            self.on_error("set", exc)

    async def hincr(self, key: str, fields: dict[str, float]) -> None:
        try:
            async with self.client.pipeline(transaction=False) as pipe:
                for field, amount in fields.items():
                    pipe.hincrbyfloat(self.prefix + key, field, amount)
                await pipe.execute()
        except Exception as exc:  # noqa: BLE001 - fail open
            self.on_error("hincr", exc)

    async def hsetnx(self, key: str, field: str, value: str) -> None:
        try:
            await self.client.hsetnx(self.prefix + key, field, value)
        except Exception as exc:  # noqa: BLE001 - fail open
            self.on_error("hsetnx", exc)

    async def hgetall(self, key: str) -> dict[str, str]:
        try:
            raw = await self.client.hgetall(self.prefix + key)
        except Exception as exc:  # noqa: BLE001 - an outage reads as empty
            self.on_error("hgetall", exc)
            return {}
        return {k.decode(): v.decode() for k, v in raw.items()}

    async def zincr(self, key: str, member: str, amount: float = 1) -> None:
        try:
            await self.client.zincrby(self.prefix + key, amount, member)
        except Exception as exc:  # noqa: BLE001 - fail open
            self.on_error("zincr", exc)

    async def ztop(self, key: str, n: int) -> list[str]:
        try:
            members = await self.client.zrevrange(self.prefix + key, 0, n - 1)
        except Exception as exc:  # noqa: BLE001 - an outage reads as empty
            self.on_error("ztop", exc)
            return []
        return [m.decode() for m in members]

    async def aclose(self) -> None:
        await self.client.aclose()

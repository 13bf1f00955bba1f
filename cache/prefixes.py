"""The prefix registry: what ragtrim knows about each static prefix, in a KVStore
(Redis when configured, so every replica sees the same picture).

    prefix:{key}        hash: first_seen, model, requests, prompt_tokens, cached_tokens,
                        and requests per replica (`replica:<url>`)
    prefix:hot          sorted set: requests per prefix key (warm-up picks the top N)
    prefix:replay:{key} the static part of a request, replayed to warm a replica

Every key expires: a prefix's hash `ttl` seconds after its last request, the replay
body `replay_ttl` after it was stored, the hot set `ttl` after the last request of any
prefix; and the hot set holds at most 2 × `hot_keep` members (the least requested go;
warm-up reads its top N ≤ hot_keep).
Why: docs/decisions/0014-content-caches-bytes-tenants-expiry.md.
"""

from __future__ import annotations

import json
import time
from typing import Any

from cache.store import KVStore

HOT = "prefix:hot"
# The defaults of store.prefix_ttl_s and store.hot_prefixes (proxy/config/tenancy.py reads them).
PREFIX_TTL_S = 7 * 24 * 3600
HOT_KEEP = 1024


class PrefixRegistry:
    def __init__(
        self,
        store: KVStore,
        replay_ttl: float = 24 * 3600,
        *,
        ttl: float = PREFIX_TTL_S,
        hot_keep: int = HOT_KEEP,
    ):
        self.store = store
        self.replay_ttl = replay_ttl
        self.ttl = ttl
        self.hot_keep = hot_keep

    async def record(
        self, key: str, *, model: str, replica: str, prompt_tokens: int, cached_tokens: int
    ) -> None:
        await self.store.hsetnx(f"prefix:{key}", "first_seen", f"{time.time():.3f}")
        await self.store.hsetnx(f"prefix:{key}", "model", model)
        await self.store.hincr(
            f"prefix:{key}",
            {
                "requests": 1,
                "prompt_tokens": prompt_tokens,
                "cached_tokens": cached_tokens,
                f"replica:{replica}": 1,
            },
            self.ttl,
        )
        await self.store.zincr(HOT, key, keep=self.hot_keep, ttl=self.ttl)

    async def stats(self, key: str) -> dict[str, str]:
        return await self.store.hgetall(f"prefix:{key}")

    async def remember_replay(self, key: str, body: dict[str, Any]) -> None:
        await self.store.set(f"prefix:replay:{key}", json.dumps(body).encode(), self.replay_ttl)

    async def hot(self, n: int) -> list[tuple[str, dict[str, Any]]]:
        """The n most requested prefixes that still have a replay body."""
        keys = await self.store.ztop(HOT, n)
        bodies = await self.store.get_many([f"prefix:replay:{k}" for k in keys])
        return [(k, json.loads(b)) for k, b in zip(keys, bodies, strict=True) if b]

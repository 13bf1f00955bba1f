"""FeatureCache: each chunk's question-independent compression features, shared.

A question-aware compressor's output memo (cache/memo.py) hits only on the same
question over the same documents. The document part of its work (compressors/features.py)
does not depend on the question, so it is memoized per chunk here (why:
docs/decisions/0012-fast-extractive-scoring-and-memos.md), keyed by

    tenant, compressor feature fingerprint, document content   (not the question)

in two tiers: an in-process LRU capped in bytes (a hit costs no network round trip)
and the shared KVStore (Redis when configured: every worker and replica reads what any
of them computed or what `/v1/compress` precomputed at ingest), with a TTL. Values are
opaque bytes (this package never imports the compressors). The store fails open as
ever (cache/store.py): an outage reads as a miss, and the features are recomputed.

With tenancy the tenant is inside the hash and in the key's name, as for the memo
(cache/keys.py): one tenant's features never serve another.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cache.keys import content_key, tenant_tag
from cache.lru import ValueLRU
from cache.memo import MEMO_TTL_S
from cache.store import KVStore

# The default of compression.feature_cache_bytes (proxy/config/compression.py reads it here).
FEATURE_CACHE_BYTES = 256 << 20

OnLookup = Callable[[str, int], None]  # (result: "local" | "shared" | "miss", count)


def feature_key(fingerprint: str, document: str, tenant: str = "") -> str:
    tag = tenant_tag(tenant)
    digest = content_key("features", tenant, fingerprint, document)
    return f"feat:{tag + ':' if tag else ''}{digest}"


class FeatureCache:
    def __init__(
        self,
        store: KVStore | None,
        *,
        max_bytes: int = FEATURE_CACHE_BYTES,
        ttl: float | None = MEMO_TTL_S,
        on_lookup: OnLookup | None = None,
        on_write: Callable[[int], None] | None = None,
    ):
        self.store = store
        self.ttl = ttl
        self.local = ValueLRU(max_bytes)  # each tenant a fair share (cache/lru.py)
        self.on_lookup = on_lookup or (lambda result, n: None)
        self.on_write = on_write or (lambda n: None)

    async def get_many(
        self,
        fingerprint: str,
        documents: Sequence[str],
        tenant: str = "",
        keys: Sequence[str] | None = None,
    ) -> list[bytes | None]:
        """`documents`: the texts, or their names (the proxy passes digests:
        cache/analysis.py `document_names`); a caller keeps to one. `keys`: their
        `feature_key`s when the caller keeps them (a recurring set's, memoized)."""
        if keys is None:
            keys = [feature_key(fingerprint, d, tenant) for d in documents]
        found = [self.local.get(k) for k in keys]
        ask = [i for i, v in enumerate(found) if v is None]
        if ask and self.store is not None:
            shared = await self.store.get_many([keys[i] for i in ask])
            for i, value in zip(ask, shared, strict=True):
                if value is not None:
                    found[i] = value
                    self.local.put(keys[i], value)
        local = len(documents) - len(ask)
        misses = sum(v is None for v in found)
        for result, n in (("local", local), ("shared", len(ask) - misses), ("miss", misses)):
            if n:
                self.on_lookup(result, n)
        return found

    async def put_many(self, fingerprint: str, items: dict[str, bytes], tenant: str = "") -> None:
        """`items`: document -> its features' bytes."""
        if not items:
            return
        keyed = {feature_key(fingerprint, d, tenant): v for d, v in items.items()}
        for key, value in keyed.items():
            self.local.put(key, value)
        self.on_write(sum(len(v) for v in keyed.values()))
        if self.store is not None:
            await self.store.set_many(keyed, self.ttl)

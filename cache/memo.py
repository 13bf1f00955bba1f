"""Per-document memo of compression results, in any KVStore.

The key covers the compressor's fingerprint (name, version, settings), the document
and — for question-aware compressors only — the question. A question-agnostic
compressor (LLMLingua-2) therefore hits across requests and across replicas, within
one tenant: with tenancy, the tenant is part of the key (cache/keys.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from cache.keys import memo_key
from cache.store import KVStore
from cache.writes import BackgroundWrites

# A week: the default of compression.memo_ttl_s (proxy/config/compression.py reads it here).
MEMO_TTL_S = 7 * 24 * 3600


@dataclass(frozen=True)
class MemoEntry:
    text: str
    tokens_before: int
    tokens_after: int


class ChunkMemo:
    def __init__(self, store: KVStore, ttl: float | None = MEMO_TTL_S):
        self.store = store
        self.ttl = ttl
        self.writes = BackgroundWrites()
        self._landing: dict[str, MemoEntry] = {}  # put_later's entries until they land

    @staticmethod
    def keys(
        fingerprint: str, documents: Sequence[str], question: str | None, tenant: str = ""
    ) -> list[str]:
        """`documents`: the texts or their names (digests, as the proxy passes them)."""
        return [memo_key(fingerprint, doc, question, tenant) for doc in documents]

    async def lookup(
        self, fingerprint: str, documents: Sequence[str], question: str | None, tenant: str = ""
    ) -> list[MemoEntry | None]:
        return await self.get(self.keys(fingerprint, documents, question, tenant))

    async def get(self, keys: Sequence[str]) -> list[MemoEntry | None]:
        """The entries under `keys` (from `keys()`: a caller that also stores computes
        them once; each hashes the whole document)."""
        values = await self.store.get_many(list(keys))
        landing = self._landing
        return [landing.get(k) or _decode(v) for k, v in zip(keys, values, strict=True)]

    async def put(self, keys: Sequence[str], entries: Sequence[MemoEntry]) -> None:
        items = {k: json.dumps(e.__dict__).encode() for k, e in zip(keys, entries, strict=True)}
        await self.store.set_many(items, self.ttl)

    def put_later(self, keys: Sequence[str], entries: Sequence[MemoEntry]) -> None:
        """`put` off the request path (cache/writes.py); until the write lands, `get` in
        this process reads the entries from here, so no request computes them again."""
        pairs = list(zip(keys, entries, strict=True))
        self._landing.update(pairs)
        self.writes.spawn(self._land(pairs))

    async def _land(self, pairs: list[tuple[str, MemoEntry]]) -> None:
        try:
            await self.put([k for k, _ in pairs], [e for _, e in pairs])
        finally:
            for key, entry in pairs:
                if self._landing.get(key) is entry:
                    del self._landing[key]


def _decode(value: bytes | None) -> MemoEntry | None:
    if value is None:
        return None
    try:
        return MemoEntry(**json.loads(value))
    except (ValueError, TypeError):
        return None  # a corrupt entry is a miss

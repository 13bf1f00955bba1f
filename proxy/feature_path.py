"""The engine's seen-document path (issue 18): features memoized per chunk, any question.

A question-aware compressor split in a document part and a request part
(compressors/features.py) gets its documents' features from the FeatureCache
(cache/features.py: in-process LRU, then the shared store) before its job goes to a
worker; the worker computes only the missing ones, and they are stored for every later
request, whatever its question. The bytes cross the thread boundary; decoding them is
a few `np.frombuffer` views, done in the worker with the rest of the work.
"""

from __future__ import annotations

from collections.abc import Sequence

from cache.features import FeatureCache
from compressors.features import ChunkFeatures, FeatureCompressor, decode, encode


class FeaturePath:
    def __init__(self, compressor: FeatureCompressor, cache: FeatureCache) -> None:
        self.compressor = compressor
        self.cache = cache
        self.fingerprint = compressor.feature_fingerprint()

    async def fetch(self, documents: Sequence[str], tenant: str) -> list[bytes | None]:
        return await self.cache.get_many(self.fingerprint, documents, tenant)

    async def seen(self, documents: Sequence[str], tenant: str) -> int:
        return sum(b is not None for b in await self.fetch(documents, tenant))

    async def keep(self, documents: Sequence[str], blobs: Sequence[bytes | None],
                   found: Sequence[bytes | None], tenant: str) -> None:  # fmt: skip
        """Store what the worker computed (`blobs` entries that are not the `found` ones)."""
        new = {d: b for d, b, old in zip(documents, blobs, found, strict=True)
               if b is not None and b is not old}  # fmt: skip
        await self.cache.put_many(self.fingerprint, new, tenant)

    def compute(self, documents: Sequence[str]) -> list[bytes]:
        """In a worker: the document part of each, encoded (ingest-time precompute)."""
        return [encode(self.compressor.document_features(d)) for d in documents]

    def features(self, documents: Sequence[str], blobs: list[bytes | None]) -> list[ChunkFeatures]:
        """In a worker: each document's features, decoded or computed (and then written
        into `blobs`, for `keep`)."""
        out = []
        for i, (doc, blob) in enumerate(zip(documents, blobs, strict=True)):
            f = decode(blob) if blob is not None else None
            if f is None:  # unseen (or an entry of another format): the document part
                f = self.compressor.document_features(doc)
                blobs[i] = encode(f)
            out.append(f)
        return out

"""The engine's seen-document path: features memoized per chunk, any question.

A question-aware compressor split in a document part and a request part
(compressors/features.py) gets its documents' features from the FeatureCache
(cache/features.py: in-process LRU, then the shared store) before its job goes to a
worker; the worker computes only the missing ones, and they are stored for every later
request, whatever its question. The bytes cross the thread boundary; decoding them is
a few `np.frombuffer` views, done in the worker with the rest of the work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import Executor

from cache.analysis import DocumentAnalyses, document_names
from cache.features import FeatureCache, feature_key
from compressors import ChunkFeatures, FeatureCompressor, decode_features, encode_features
from compressors.features import readable

INLINE_CHARS = 12_000  # ~3k tokens: a seen set's job this small runs on the loop (~1 ms)


class FeaturePath:
    def __init__(
        self,
        compressor: FeatureCompressor,
        cache: FeatureCache,
        inline_chars: int = INLINE_CHARS,
        analyses: DocumentAnalyses | None = None,
    ) -> None:
        self.compressor = compressor
        self.cache = cache
        self.fingerprint = compressor.feature_fingerprint()
        self.inline_chars = inline_chars
        self.analyses = analyses  # a set's prepared arrays, once per (tenant, set)
        self._kind = f"prepared:{self.fingerprint}"

    def inline(self, documents: Sequence[str], blobs: Sequence[bytes | None]) -> bool:
        """Whether a job runs on the event loop: every document's features memoized and
        readable (the job is the question's part only: scores, selection, splice; an
        entry of an older format would be computed again, never on the loop) and the set
        small (a bigger set would hold the loop, so it still goes to a worker).
        Why: docs/decisions/0044-compression-service-path.md."""
        small = sum(map(len, documents)) <= self.inline_chars
        return small and all(b is not None and readable(b) for b in blobs)

    async def fetch(self, documents: Sequence[str], tenant: str) -> list[bytes | None]:
        names = document_names(self.analyses, tenant, documents)  # the keys' one hash each
        keys = None
        if self.analyses is not None:  # a recurring set's keys: one lookup, no hashing
            fp = self.fingerprint
            keys = self.analyses.each(
                f"feature-key:{fp}", tenant, names, lambda n: feature_key(fp, n, tenant)
            )
        return await self.cache.get_many(self.fingerprint, names, tenant, keys)

    async def seen(self, documents: Sequence[str], tenant: str) -> int:
        return sum(b is not None for b in await self.fetch(documents, tenant))

    async def keep(
        self,
        documents: Sequence[str],
        blobs: Sequence[bytes | None],
        found: Sequence[bytes | None],
        tenant: str,
    ) -> None:
        """Store what the worker computed (`blobs` entries that are not the `found` ones)."""
        fresh = [i for i, (b, old) in enumerate(zip(blobs, found, strict=True)) if b is not old]
        if not fresh:  # every document's features were found: nothing to name or store
            return
        names = document_names(self.analyses, tenant, documents)
        new = {names[i]: blobs[i] for i in fresh if blobs[i] is not None}
        await self.cache.put_many(self.fingerprint, new, tenant)

    async def precompute(
        self, documents: Sequence[str], tenant: str, pool: Executor, timeout: float
    ) -> int:
        """Compute (in `pool`) and store the features of the unseen `documents`."""
        blobs = await self.fetch(documents, tenant)
        new = [d for d, b in zip(documents, blobs, strict=True) if b is None]
        if new:
            job = pool.submit(self.compute, new, tenant)
            fresh = await asyncio.wait_for(asyncio.wrap_future(job), timeout)
            await self.keep(new, fresh, [None] * len(new), tenant)
        return len(new)

    def compute(self, documents: Sequence[str], tenant: str) -> list[bytes]:
        """In a worker: the document part of each, encoded (ingest-time precompute)."""
        computed = self.compressor.documents_features(documents, tenant)
        return [encode_features(f) for f in computed]

    def features(
        self, documents: Sequence[str], blobs: list[bytes | None], tenant: str
    ) -> list[ChunkFeatures]:
        """In a worker: each document's features, decoded or computed (and then written
        into `blobs`, for `keep`; the tenant scopes what the tokenizers memoize)."""
        out = [decode_features(blob) if blob is not None else None for blob in blobs]
        unseen = [i for i, f in enumerate(out) if f is None]  # or an entry of another format
        if unseen:  # the document part, all of them in one batch
            computed = self.compressor.documents_features([documents[i] for i in unseen], tenant)
            for i, f in zip(unseen, computed, strict=True):
                out[i], blobs[i] = f, encode_features(f)
        return out  # type: ignore[return-value]

    def compress(
        self,
        documents: Sequence[str],
        question: str,
        blobs: list[bytes | None],
        budget_for: Callable[[list[int]], object],
        tenant: str = "",
    ):
        """In a worker, or on the loop for a small seen set: the request part over the
        set's prepared arrays (the budget from their token counts: a seen document is
        not tokenized again)."""
        prepared = self.prepared(documents, blobs, tenant)
        budget = budget_for(list(prepared.before))
        return self.compressor.compress_prepared(
            documents, prepared, question=question, budget=budget
        )

    def prepared(self, documents: Sequence[str], blobs: list[bytes | None], tenant: str):
        """The set's question-independent arrays (compressors/fast_extractive/prepared.py):
        made once per (tenant, document set) while the analyses keep them, so a follow-up
        over seen documents decodes and concatenates nothing. Keyed by the tuple of the
        documents under the features' fingerprint (cache/analysis.py `analysis_key`)."""

        def make(_: tuple[str, ...]):
            return self.compressor.prepare(self.features(documents, blobs, tenant))

        if self.analyses is None or not documents:
            return make("")
        return self.analyses.get(self._kind, tenant, tuple(documents), make)

"""A chunk's question-independent features, and their compact binary form.

What `fast_extractive` does per document that does not depend on the question: sentence
splitting (with protected spans), token counting, WordPiece tokenization and the
static-embedding sum of every sentence. Computed once per chunk and memoized
(cache/features.py, keyed without the question), so a seen document costs the
question's encoding, a few dot products and the selection.
Why: docs/decisions/0012-fast-extractive-scoring-and-memos.md.

`ChunkFeatures` holds exactly what the per-request part reads:

- `spans`    (n, 2) int32  sentence character spans (sentences.split_sentences)
- `counts`   (n,)   int32  target-model tokens of each sentence (tokens.count_spans)
- `tokens`   int           target-model tokens of the whole document
- `lengths`  (n,)   int32  WordPiece tokens that start inside each sentence
- `ids`      (m,)   int32  those tokens' ids, in text order (m = lengths.sum())
- `sums`     (n, d) float32 the sum of each sentence's static-embedding rows
- `unjudged` (n,)   int32  1 where the scorer cannot judge the sentence, kept whatever
                           its score (verbatim.keep_unjudged; since format 2)

The sums stay float32: float16 would change scores in the 4th decimal and flip picks,
and the output must stay byte-identical to the unsplit compressor's. Encoded as one
bytes value: a header (magic, format version, n, m, d, tokens) then the arrays, raw,
little-endian, so decoding is a few `np.frombuffer` views (no copy, no parsing).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

MAGIC = b"RTF"
FORMAT = 2
_HEADER = struct.Struct("<3sBIIII")  # magic, format, n sentences, m ids, dim, tokens


@dataclass(frozen=True)
class ChunkFeatures:
    spans: np.ndarray
    counts: np.ndarray
    tokens: int
    lengths: np.ndarray
    ids: np.ndarray
    sums: np.ndarray
    unjudged: np.ndarray

    @property
    def sentences(self) -> int:
        return len(self.counts)

    def span_list(self) -> list[tuple[int, int]]:
        return [(int(a), int(b)) for a, b in self.spans.tolist()]


def encode(f: ChunkFeatures) -> bytes:
    n, m, dim = len(f.counts), len(f.ids), f.sums.shape[1] if f.sums.ndim == 2 else 0
    parts = [
        _HEADER.pack(MAGIC, FORMAT, n, m, dim, f.tokens),
        np.ascontiguousarray(f.spans, "<i4").tobytes(),
        np.ascontiguousarray(f.counts, "<i4").tobytes(),
        np.ascontiguousarray(f.lengths, "<i4").tobytes(),
        np.ascontiguousarray(f.ids, "<i4").tobytes(),
        np.ascontiguousarray(f.sums, "<f4").tobytes(),
        np.ascontiguousarray(f.unjudged, "<i4").tobytes(),
    ]
    return b"".join(parts)


def readable(value: bytes) -> bool:
    """Whether `decode` reads `value` (this format, whole), from its header alone."""
    if len(value) < _HEADER.size:
        return False
    magic, fmt, n, m, dim, _ = _HEADER.unpack_from(value)
    return (
        magic == MAGIC and fmt == FORMAT and len(value) == _HEADER.size + 4 * (5 * n + m + n * dim)
    )


def decode(value: bytes) -> ChunkFeatures | None:
    """The features in `value`, or None when it is not this format (a miss, not an error:
    an entry from another version or a corrupt one is recomputed)."""
    if not readable(value):
        return None
    n, m, dim, tokens = _HEADER.unpack_from(value)[2:]
    at = _HEADER.size

    def take(count: int, dtype: str) -> np.ndarray:
        nonlocal at
        out = np.frombuffer(value, dtype, count, at)
        at += 4 * count
        return out

    spans = take(2 * n, "<i4").reshape(n, 2)
    counts, lengths, ids = take(n, "<i4"), take(n, "<i4"), take(m, "<i4")
    sums = take(n * dim, "<f4").reshape(n, dim)
    return ChunkFeatures(spans, counts, tokens, lengths, ids, sums, take(n, "<i4"))


@runtime_checkable
class FeatureCompressor(Protocol):
    """A compressor split in a document part and a request part (fast_extractive).

    feature_fingerprint(): every setting the features depend on (model, token counter,
                           protected spans, sentence length), not the scoring weights
    documents_features():  the document part, question-independent, of a batch (`scope`:
                           whose documents, the tenant, for what it memoizes)
    compress_features():   the request part: same output as compress() on the documents
    prepare():             a set's features arranged once for any question
    compress_prepared():   the request part over a prepared set (compress_features is
                           compress_prepared over prepare(features))
    """

    def feature_fingerprint(self) -> str: ...

    def documents_features(
        self, documents: Sequence[str], scope: str | None = None
    ) -> list[ChunkFeatures]: ...

    def compress_features(self, documents, features, *, question, budget): ...

    def prepare(self, features: Sequence[ChunkFeatures]): ...

    def compress_prepared(self, documents, prepared, *, question, budget): ...

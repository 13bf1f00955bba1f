"""A document set's features arranged once for any question: the request part's fixed half.

`prepare` builds, once per document set, every array of the request part that depends on
the documents alone: the sentences' sums concatenated and normalised, the documents'
centroids, the WordPiece ids and their owners, the lengths, the span and count lists,
the unjudged flags. The proxy keeps the result per (tenant, document set) beside the
other analyses (cache/analysis.py), so a new question costs its own encoding, two
matrix-vector products, the BM25 of its few terms, the selection and the splice.
Why: docs/decisions/0001-request-path-at-gpu-speed.md.

Read-only after `prepare`: it is shared between requests and threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from compressors.fast_extractive import bm25
from compressors.fast_extractive.static_embed import unit
from compressors.features import ChunkFeatures


@dataclass(frozen=True, eq=False)
class PreparedSet:
    """The question-independent arrays of one document set, sentences in set order."""

    sizes: tuple[int, ...]  # sentences per document
    before: tuple[int, ...]  # target-model tokens per document
    doc_of: np.ndarray  # (s,) the document of each sentence
    vectors: np.ndarray  # (s, d) unit sentence vectors
    doc_vectors: np.ndarray  # (n, d) unit document vectors (sum of its sentences)
    ids: np.ndarray  # (m,) int64 WordPiece ids owned by sentences, in order
    owner: np.ndarray  # (m,) the sentence of each id
    lengths: np.ndarray  # (s,) float64 ids per sentence
    doc_lengths: np.ndarray  # (n,) float64 ids per document
    counts: tuple[list[int], ...]  # per document, target-model tokens per sentence
    spans: tuple[list[tuple[int, int]], ...]  # per document, sentence character spans
    unjudged: tuple[np.ndarray, ...]  # per document, bool: kept whatever its score
    any_unjudged: tuple[bool, ...]  # per document: whether `unjudged` holds a True
    norms: tuple[np.ndarray, np.ndarray]  # BM25's length norms: sentences', documents'
    terms: bm25.TermIndex  # the ids sorted once: a question's terms are looked up, not scanned
    cuts: tuple[tuple[int, int], ...]  # each document's first and end sentence

    @property
    def sentences(self) -> int:
        return len(self.doc_of)

    @property
    def nbytes(self) -> int:
        """What it holds, roughly (cache/analysis.py bounds its memo in bytes)."""
        arrays = (
            self.doc_of,
            self.vectors,
            self.doc_vectors,
            self.ids,
            self.owner,
            self.lengths,
            self.doc_lengths,
            self.terms.ids,
            self.terms.owner,
        )
        return sum(a.nbytes for a in arrays) + 120 * self.sentences + 200 * len(self.sizes)

    def split(self, values: np.ndarray) -> list[np.ndarray]:
        """Per-sentence `values` cut into one array (a view) per document."""
        return [values[a:b] for a, b in self.cuts]


def prepare(features: Sequence[ChunkFeatures]) -> PreparedSet:
    sizes = [f.sentences for f in features]
    doc_of = np.repeat(np.arange(len(features)), sizes)
    dim = features[0].sums.shape[1] if features and features[0].sums.ndim == 2 else 0
    sums = (
        np.concatenate([f.sums for f in features]).astype(np.float32, copy=False)
        if features
        else np.zeros((0, dim), np.float32)
    )
    lengths = (
        np.concatenate([f.lengths for f in features]).astype(np.float64)
        if features
        else np.zeros(0)
    )
    ids = np.concatenate([f.ids for f in features]).astype(np.int64) if features else doc_of[:0]
    owner = np.repeat(np.arange(len(doc_of)), lengths.astype(np.int64))
    ends = np.cumsum(sizes).tolist()
    doc_lengths = np.bincount(doc_of, lengths, len(features)).astype(np.float64)
    return PreparedSet(
        sizes=tuple(sizes),
        before=tuple(f.tokens for f in features),
        doc_of=doc_of,
        vectors=unit(sums),
        doc_vectors=unit(per_document(sums, sizes)),
        ids=ids,
        owner=owner,
        lengths=lengths,
        doc_lengths=doc_lengths,
        counts=tuple(f.counts.tolist() for f in features),
        spans=tuple(f.span_list() for f in features),
        unjudged=tuple(f.unjudged.astype(bool) for f in features),
        any_unjudged=_any_per_document(features, doc_of),
        norms=(bm25.length_norm(lengths), bm25.length_norm(doc_lengths)),
        terms=bm25.TermIndex.of(ids, owner),
        cuts=tuple(zip([0, *ends][:-1], ends, strict=True)),
    )


def per_document(rows: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Each document's sum of its sentences' rows: one reduceat (np.add.at: 0.15 ms/job)."""
    out = np.zeros((len(sizes), rows.shape[1]), dtype=rows.dtype)
    counts = np.asarray(sizes, dtype=np.int64)
    nonempty = counts > 0
    if nonempty.any():
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        out[nonempty] = np.add.reduceat(rows, starts[nonempty], axis=0)
    return out


def _any_per_document(features: Sequence[ChunkFeatures], doc_of: np.ndarray) -> tuple[bool, ...]:
    """Whether each document has an unjudged sentence (three array calls, not one per
    document)."""
    flags = np.concatenate([f.unjudged for f in features]) if features else doc_of[:0]
    holding = set(doc_of[np.flatnonzero(flags)].tolist())
    return tuple(d in holding for d in range(len(features)))

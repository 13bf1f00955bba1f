"""Okapi BM25 of a few query terms over spans of one token stream, in numpy.

Every request brings a new, small corpus (its sentences) and one query, scored on the
WordPiece tokens the static embeddings already need; nothing is indexed (why not `bm25s`:
docs/decisions/0012-fast-extractive-scoring-and-memos.md). The formula is bm25s's
(Robertson et al., "Okapi at TREC-3", 1994; idf as in Lucene / bm25s "lucene"):

    idf(t)      = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
    score(s, q) = Σ_t∈q idf(t) · tf(t,s)·(k1+1) / (tf(t,s) + k1·(1 − b + b·|s|/avg|s|))

N and df are counted over the spans themselves (the request's sentences), so words that
every sentence shares (a same-article topic, "the") weigh little.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

K1 = 1.2
B = 0.75


def term_counts(ids: np.ndarray, owner: np.ndarray, n: int, query: np.ndarray) -> np.ndarray:
    """tf matrix (n spans × len(query)): how often each query id occurs in each span.
    `query` is sorted and unique; `owner[k]` is the span of token k (-1: none)."""
    tf = np.zeros((n, len(query)), dtype=np.float64)
    if not len(query) or not n:
        return tf
    col = np.searchsorted(query, ids)
    col[col == len(query)] = 0
    hit = (query[col] == ids) & (owner >= 0)
    np.add.at(tf, (owner[hit], col[hit]), 1.0)
    return tf


@dataclass(frozen=True)
class TermIndex:
    """A token stream's ids sorted once (stable), with each one's span: a query's few
    terms are found by binary search instead of scanning every id per query."""

    ids: np.ndarray  # sorted
    owner: np.ndarray  # the span of each sorted id

    @classmethod
    def of(cls, ids: np.ndarray, owner: np.ndarray) -> TermIndex:
        small = len(ids) and int(ids.min()) >= 0 and int(ids.max()) < 1 << 16
        keys = ids.astype(np.uint16) if small else ids  # a vocabulary under 65,536 ids:
        order = np.argsort(keys, kind="stable")  # numpy's radix sort, ~12x faster at 16k
        return cls(ids[order], owner[order])

    def term_counts(self, n: int, query: np.ndarray) -> np.ndarray:
        """`term_counts(ids, owner, n, query)` over the indexed stream (owners >= 0)."""
        width = len(query)
        if not width or not n:
            return np.zeros((n, width), dtype=np.float64)
        lo = np.searchsorted(self.ids, query, "left")
        runs = np.searchsorted(self.ids, query, "right") - lo
        hits = int(runs.sum())
        cols = np.repeat(np.arange(width), runs)
        at = np.arange(hits) + np.repeat(lo - (np.cumsum(runs) - runs), runs)
        cells = np.bincount(self.owner[at] * width + cols, minlength=n * width)
        return cells.reshape(n, width).astype(np.float64)


def scores(tf: np.ndarray, lengths: np.ndarray, k1: float = K1, b: float = B) -> np.ndarray:
    """BM25 of every span (rows of `tf`) with `lengths` tokens each."""
    return normed_scores(tf, length_norm(lengths, k1, b), k1)


def length_norm(lengths: np.ndarray, k1: float = K1, b: float = B) -> np.ndarray:
    """Each span's `k1 · (1 − b + b·|s|/avg|s|)`: fixed by the spans, so a set's is made once."""
    if not len(lengths):
        return np.zeros(0)
    return k1 * (1 - b + b * lengths / max(1e-9, float(lengths.mean())))


def normed_scores(tf: np.ndarray, norm: np.ndarray, k1: float = K1) -> np.ndarray:
    """`scores` given the spans' `length_norm`."""
    n = tf.shape[0]
    if not n or not tf.shape[1]:
        return np.zeros(n)
    df = (tf > 0).sum(axis=0)
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    return (idf * tf * (k1 + 1) / (tf + norm[:, None])).sum(axis=1)

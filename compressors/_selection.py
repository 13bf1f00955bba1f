"""Which sentences fit the budget: best score first, greedily, original order kept.

Shared by the extractive compressors. Scores are compared as given (callers round them
so float noise cannot flip a choice); ties go to the earlier document, then the earlier
sentence. A sentence that does not fit is skipped and the next best is tried, so the
budget is filled as far as whole sentences allow.

- `pooled_keep`: one pool of `limit` tokens across all documents (`Budget.target_tokens`):
  a relevant document keeps more than a distractor;
- `per_document_keep`: `rate × tokens(document)` each, and at least `min_sentences` per
  non-empty document even when its best sentence alone is over budget.

Never empty: when no sentence fits the pooled budget (one long sentence, a small
target), the best one is kept anyway, over budget. Sentence splitting bounds the
overshoot (sentences.py: no unit but an atomic span is longer than `max_chars`). Why:
docs/decisions/0013-text-kept-whole-and-bounded-work.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from compressors.deadline import check


class Pool:
    """Every sentence of every document in one flat array, in (document, sentence) order:
    the pooled selections rank and fill it without a tuple per sentence."""

    def __init__(self, scores: Sequence[Sequence[float]], counts: Sequence[Sequence[int]]):
        parts = [np.asarray(s, dtype=np.float64) for s in scores]
        self.scores = np.concatenate(parts) if parts else np.zeros(0)
        self.counts = [c for per_doc in counts for c in per_doc]
        self.sizes = [len(c) for c in counts]
        # best first: a stable sort keeps ties in (document, sentence) order
        self.order: list[int] = np.argsort(-self.scores, kind="stable").tolist()

    def fill(self, order: Sequence[int], limit: float) -> set[int]:
        """`fill` over flat positions."""
        kept: set[int] = set()
        used, counts = 0, self.counts
        for k in order:
            if used + counts[k] <= limit:
                kept.add(k)
                used += counts[k]
        return kept

    def by_document(self) -> list[list[int]]:
        """Each document's positions, best first (ties in sentence order)."""
        owner = [d for d, size in enumerate(self.sizes) for _ in range(size)]
        out: list[list[int]] = [[] for _ in self.sizes]
        for k in self.order:
            out[owner[k]].append(k)
        return out

    def flags(self, kept: set[int]) -> list[list[bool]]:
        out, start = [], 0
        for size in self.sizes:
            out.append([k in kept for k in range(start, start + size)])
            start += size
        return out


def pooled_keep(scores, counts, limit: float) -> list[list[bool]]:
    check()
    pool = Pool(scores, counts)
    kept = pool.fill(pool.order, limit)
    if not kept and pool.order:
        kept = {pool.order[0]}
    return pool.flags(kept)


def per_document_keep(scores, counts, before, rate: float, min_sentences: int):
    check()
    pool = Pool(scores, counts)
    kept: set[int] = set()
    for doc, order in enumerate(pool.by_document()):
        mine = pool.fill(order, rate * before[doc])
        if len(mine) < min_sentences:
            mine |= set(order[:min_sentences])
        kept |= mine
    return pool.flags(kept)

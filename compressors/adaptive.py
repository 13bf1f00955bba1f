"""An adaptive budget: keep the sentences whose score clears a margin, not a fixed share.

The kept share follows the context. The threshold is relative (the scorers' scales
differ: BM25 scaled by the request's best, cosines): a sentence is kept when its score is
at least `margin` standard deviations above the mean of the request's sentence scores,
best first, within `min_rate` and `max_rate` of the context's tokens (one pool across the
documents, as `Budget.target_tokens`). The budget's `rate` is `max_rate`, so a compressor
without adaptive selection treats it as that fixed rate.
Why: docs/decisions/0012-fast-extractive-scoring-and-memos.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from compressors._selection import Pool
from compressors.base import Budget

AUTO = "auto"  # the request option (`rate: "auto"`) that asks for this budget


@dataclass(frozen=True)
class AdaptiveBudget(Budget):
    """Defaults chosen on SQuAD train cases of a seed bench.fidelity does not score."""

    rate: float = 1 / 3  # the most kept (the least compression)
    margin: float = 0.5
    min_rate: float = 0.05

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.min_rate <= self.rate:
            raise ValueError(f"need 0 <= min_rate <= rate (max), got {self.min_rate}")


def adaptive_keep(
    scores: Sequence[np.ndarray],
    counts: Sequence[Sequence[int]],
    before: Sequence[int],
    budget: AdaptiveBudget,
) -> list[list[bool]]:
    """Keep flags per document and sentence."""
    total = sum(before)
    pool = Pool(scores, counts)
    kept: set[int] = set()
    if pool.order:
        flat, values = pool.scores, pool.scores.tolist()
        cut = float(flat.mean() + budget.margin * flat.std())
        clear = [k for k in pool.order if values[k] >= cut]
        kept = pool.fill(clear, budget.rate * total)
    if sum(pool.counts[k] for k in kept) < budget.min_rate * total:
        kept = pool.fill(pool.order, budget.min_rate * total) | kept
    return pool.flags(kept)

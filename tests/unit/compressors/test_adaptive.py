"""The adaptive budget: a score margin over the request's distribution, within rates."""

import numpy as np
import pytest

from compressors import Budget
from compressors.adaptive import AdaptiveBudget, adaptive_keep


def test_keeps_what_clears_the_margin_within_min_and_max():
    scores = [np.array([0.9, 0.1, 0.1]), np.array([0.1, 0.8, 0.1, 0.1])]
    counts = [[10, 10, 10], [10, 10, 10, 10]]
    before = [30, 40]
    keep = adaptive_keep(scores, counts, before, AdaptiveBudget(rate=0.5, margin=1.0))
    assert keep == [[True, False, False], [False, True, False, False]]  # the two outliers
    capped = adaptive_keep(scores, counts, before, AdaptiveBudget(rate=0.15, margin=1.0))
    assert capped == [[True, False, False], [False, False, False, False]]  # max: 10 of 70
    floor = AdaptiveBudget(rate=0.5, margin=5.0, min_rate=0.3)  # nothing clears 5 sigma
    keep = adaptive_keep(scores, counts, before, floor)  # the min (21 of 70) best first
    assert keep == [[True, False, False], [False, True, False, False]]


def test_flat_scores_and_empty_requests():
    flat = [np.array([0.5, 0.5]), np.array([0.5])]
    keep = adaptive_keep(flat, [[5, 5], [5]], [10, 5], AdaptiveBudget(rate=1.0, margin=0.5))
    assert keep == [[True, True], [True]]  # std 0: all clear mean + 0, within the max
    assert adaptive_keep([], [], [], AdaptiveBudget()) == []
    with pytest.raises(ValueError):
        AdaptiveBudget(rate=0.2, min_rate=0.3)
    assert isinstance(AdaptiveBudget(), Budget)  # other compressors: a fixed rate

"""Selection under a budget: best first, greedy, and never empty (issue 23)."""

from compressors._selection import per_document_keep, pooled_keep


def test_pooled_budget_fills_best_first_in_order():
    scores = [[0.9, 0.1, 0.5], [0.7]]
    counts = [[10, 10, 10], [10]]
    assert pooled_keep(scores, counts, 20) == [[True, False, False], [True]]


def test_pooled_keeps_the_best_sentence_when_none_fits():
    """One long sentence over a small target: keeping nothing sent vLLM the question only."""
    assert pooled_keep([[0.2, 0.8]], [[400, 300]], 100) == [[False, True]]
    assert pooled_keep([[]], [[]], 10) == [[]]


def test_per_document_keeps_at_least_min_sentences():
    kept = per_document_keep([[0.2, 0.8], [0.5]], [[400, 300], [50]], [700, 50], 0.1, 1)
    assert kept == [[False, True], [True]]

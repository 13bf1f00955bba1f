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


def _tuple_pooled(scores, counts, limit):
    """The tuple-sorting selection the flat pool replaced (the reference)."""
    order = sorted((-float(scores[d][i]), d, i) for d in range(len(counts))
                   for i in range(len(scores[d])))  # fmt: skip
    kept, used = set(), 0
    for _, d, i in order:
        if used + counts[d][i] <= limit:
            kept.add((d, i))
            used += counts[d][i]
    if not kept and order:
        kept = {order[0][1:]}
    return [[(d, i) in kept for i in range(len(counts[d]))] for d in range(len(counts))]


def test_the_flat_pool_selects_as_tuple_sorting_ties_included():
    import random

    rng = random.Random(5)
    for _ in range(300):
        sizes = [rng.randint(0, 6) for _ in range(rng.randint(1, 5))]
        scores = [[rng.choice([0.0, -0.0, 0.5, 0.25, 1.0]) for _ in range(n)] for n in sizes]
        counts = [[rng.randint(1, 9) for _ in range(n)] for n in sizes]
        limit = rng.randint(0, 30)
        assert pooled_keep(scores, counts, limit) == _tuple_pooled(scores, counts, limit)


def _tuple_per_document(scores, counts, before, rate, min_sentences):
    """The per-document tuple sorting the flat pool replaced (the reference)."""
    kept = set()
    for doc in range(len(counts)):
        order = sorted((-float(s), doc, i) for i, s in enumerate(scores[doc]))
        mine, used = set(), 0
        for _, d, i in order:
            if used + counts[d][i] <= rate * before[doc]:
                mine.add((d, i))
                used += counts[d][i]
        if len(mine) < min_sentences:
            mine |= {(d, i) for _, d, i in order[:min_sentences]}
        kept |= mine
    return [[(d, i) in kept for i in range(len(counts[d]))] for d in range(len(counts))]


def test_per_document_selection_matches_tuple_sorting_ties_included():
    import random

    rng = random.Random(6)
    for _ in range(300):
        sizes = [rng.randint(0, 6) for _ in range(rng.randint(1, 5))]
        scores = [[rng.choice([0.0, -0.0, 0.5, 0.25, 1.0]) for _ in range(n)] for n in sizes]
        counts = [[rng.randint(1, 9) for _ in range(n)] for n in sizes]
        before = [sum(c) for c in counts]
        rate, least = rng.choice([0.0, 0.3, 0.5]), rng.randint(0, 2)
        got = per_document_keep(scores, counts, before, rate, least)
        assert got == _tuple_per_document(scores, counts, before, rate, least)

import math

import numpy as np

from compressors.fast_extractive import bm25


def test_term_counts_per_span():
    ids = np.array([5, 7, 5, 9, 7, 7, 3])
    owner = np.array([0, 0, 0, 1, 1, -1, 2])
    tf = bm25.term_counts(ids, owner, 3, np.array([5, 7]))
    assert tf.tolist() == [[2, 1], [0, 1], [0, 0]]  # the token outside every span is ignored
    assert bm25.term_counts(ids, owner, 3, np.array([], dtype=np.int64)).shape == (3, 0)


def test_scores_follow_okapi():
    tf = np.array([[2.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    lengths = np.array([4.0, 8.0, 4.0])
    got = bm25.scores(tf, lengths, k1=1.2, b=0.75)
    idf = math.log1p((3 - 1 + 0.5) / (1 + 0.5))
    avg = lengths.mean()
    first = idf * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 4 / avg))
    second = idf * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 8 / avg))
    assert np.allclose(got, [first, second, 0.0])
    everywhere = bm25.scores(np.ones((3, 1)), lengths)
    rare = bm25.scores(np.array([[1.0], [0.0], [0.0]]), lengths)
    assert everywhere[0] < rare[0]  # a word every sentence has weighs less


def test_the_term_index_counts_as_the_scan_does():
    rng = np.random.default_rng(3)
    for n in (1, 5, 40):
        ids = rng.integers(0, 30, size=400)
        owner = np.sort(rng.integers(0, n, size=400))
        index = bm25.TermIndex.of(ids, owner)
        for width in (0, 1, 4, 9):
            query = np.unique(rng.integers(0, 35, size=width))  # some ids absent
            scanned = bm25.term_counts(ids, owner, n, query)
            assert np.array_equal(index.term_counts(n, query), scanned)


def test_normed_scores_are_the_scores():
    rng = np.random.default_rng(4)
    tf = rng.integers(0, 3, size=(12, 4)).astype(np.float64)
    lengths = rng.integers(1, 30, size=12).astype(np.float64)
    got = bm25.normed_scores(tf, bm25.length_norm(lengths))
    assert np.array_equal(got, bm25.scores(tf, lengths))

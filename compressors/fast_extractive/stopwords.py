"""Which WordPiece tokens are content words (for BM25's query terms).

A query term is a vocabulary token made of letters or digits (after a `##` prefix) that
is not an English function word: question words and auxiliaries ("what", "did", "the")
match every sentence and would only add noise. The list is the closed-class core of
the common English stop lists (e.g. NLTK's), plus question words.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

_WORDS = """
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which
while who whom whose why will with would you your yours yourself yourselves also many much
one ones s t did does kind type name called named
"""
STOPWORDS = frozenset(_WORDS.split())


def content_mask(vocab: Mapping[str, int]) -> np.ndarray:
    """Boolean array indexed by token id: True for content-word tokens."""
    mask = np.zeros(max(vocab.values(), default=-1) + 1, dtype=bool)
    for token, index in vocab.items():
        word = token.removeprefix("##")
        mask[index] = word.isalnum() and word not in STOPWORDS
    return mask

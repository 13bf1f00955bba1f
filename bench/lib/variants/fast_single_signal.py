"""fast_extractive with one scoring signal: the candidates its mix was chosen against.

Why here and not a product option: the request path always scores with the mix of
compressors/fast_extractive/compressor.py (WEIGHTS: BM25 and static-embedding cosine,
of the sentence and of its document), chosen by measurement (issue-9a note);
bench.fidelity and bench.compress_cost keep these rows beside it so the choice stays
checked. Same code, only the weights differ, so their features are shared
(`feature_fingerprint` ignores the weights).
"""

from __future__ import annotations

from collections.abc import Mapping

from compressors import FastExtractiveCompressor, TokenCounter

SIGNALS: Mapping[str, Mapping[str, float]] = {"bm25": {"bm25": 1.0}, "static": {"cos": 1.0}}


class SingleSignalFastExtractive(FastExtractiveCompressor):
    """FastExtractiveCompressor scored by `signal` alone ("bm25" or "static")."""

    def __init__(self, count_tokens: TokenCounter | None = None, *, signal: str, **options):
        if signal not in SIGNALS:
            raise ValueError(f"signal must be one of {tuple(SIGNALS)}, got {signal!r}")
        if "weights" in options:
            raise TypeError("a single-signal variant takes no weights")
        super().__init__(count_tokens, weights=SIGNALS[signal], **options)
        self.signal = signal

"""Test doubles for the compressor contract (unit tests only)."""

import time
from collections.abc import Sequence

from compressors import Budget, CompressionResult, DocumentResult


class HalfWords:
    """Keeps the first `rate` share of each document's words; counts words as tokens."""

    name, version, question_aware = "halfwords", "1", False
    prior_ms_per_1k = 1.0  # a word split: about free

    def __init__(self, delay: float = 0.0, fail: bool = False):
        self.delay, self.fail, self.calls = delay, fail, 0

    def fingerprint(self) -> str:
        return "halfwords:v1"

    def compress(
        self, documents: Sequence[str], *, question: str, budget: Budget
    ) -> CompressionResult:
        self.calls += 1
        time.sleep(self.delay)
        if self.fail:
            raise RuntimeError("compressor exploded")
        out = []
        for doc in documents:
            words = doc.split()
            kept = words[: max(1, round(len(words) * budget.rate))]
            out.append(DocumentResult(" ".join(kept), len(words), len(kept)))
        return CompressionResult(self.name, tuple(out))

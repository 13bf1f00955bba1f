"""The identity compressor: returns every document unchanged (a baseline, and the
fallback when compression is off). Still counts tokens, so before == after."""

from __future__ import annotations

from collections.abc import Sequence

from compressors.base import Budget, CompressionResult, DocumentResult, TokenCounter
from compressors.tokens import ApproxTokenCounter, counter_name


class IdentityCompressor:
    name = "identity"
    version = "1"
    prior_ms_per_1k = 0.0  # ms per 1k cold tokens: it does nothing
    question_aware = False

    def __init__(self, count_tokens: TokenCounter | None = None) -> None:
        self.count_tokens = count_tokens or ApproxTokenCounter()

    def fingerprint(self) -> str:
        return f"{self.name}:v{self.version}:counter={counter_name(self.count_tokens)}"

    def compress(
        self, documents: Sequence[str], *, question: str, budget: Budget
    ) -> CompressionResult:
        results = []
        for doc in documents:
            n = self.count_tokens(doc)
            results.append(DocumentResult(doc, n, n))
        return CompressionResult(self.name, tuple(results))

"""The identity compressor: keeps every document as it is (a baseline and a switch)."""

from __future__ import annotations

from collections.abc import Sequence

from compressors.base import Budget, CompressionResult, DocumentResult, TokenCounter
from compressors.tokens import ApproxTokenCounter


class IdentityCompressor:
    name = "identity"
    version = "1"
    question_aware = False

    def __init__(self, count_tokens: TokenCounter | None = None):
        self.count_tokens = count_tokens or ApproxTokenCounter()

    def fingerprint(self) -> str:
        return f"{self.name}:v{self.version}:counter={getattr(self.count_tokens, 'name', '?')}"

    def compress(
        self, documents: Sequence[str], *, question: str, budget: Budget
    ) -> CompressionResult:
        docs = []
        for doc in documents:
            n = self.count_tokens(doc)
            docs.append(DocumentResult(doc, n, n))
        return CompressionResult(self.name, tuple(docs))

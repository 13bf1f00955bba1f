"""The compressor contract: documents in, a typed result out.

A compressor is synchronous, pure and deterministic: the same documents, question,
budget and settings give the same output bytes (vLLM's prefix cache and our chunk
memo both depend on it). The proxy moves calls off the event loop, memoizes per
document and enforces the timeout; a compressor never reads the environment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

TokenCounter = Callable[[str], int]


@dataclass(frozen=True)
class Budget:
    """How much to keep. `rate` is the share of tokens kept (0.33 ≈ 3× compression);
    `target_tokens`, when set, is the total kept across all documents and wins."""

    rate: float = 0.5
    target_tokens: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.rate <= 1.0:
            raise ValueError(f"rate must be in (0, 1], got {self.rate}")
        if self.target_tokens is not None and self.target_tokens < 0:
            raise ValueError("target_tokens must be >= 0")

    def keep_rate(self, total_tokens: int) -> float:
        """The share to keep of `total_tokens`: target_tokens when set, else rate."""
        if self.target_tokens is None:
            return self.rate
        return self.target_tokens / max(1, total_tokens)


@dataclass(frozen=True)
class DocumentResult:
    text: str
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True)
class CompressionResult:
    """`question_ms`: of the call's time, what the question's part took (its encoding and
    every step whose size grows with it), where the compressor can tell; 0 otherwise.
    The proxy learns a job's cost from the documents' part only (why:
    docs/decisions/0011-compressor-cost-and-calibration.md). Not part of the output: it
    is left out of equality, so the same input still compares equal."""

    compressor: str
    documents: tuple[DocumentResult, ...]
    question_ms: float = field(default=0.0, compare=False)

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(d.text for d in self.documents)

    @property
    def tokens_before(self) -> int:
        return sum(d.tokens_before for d in self.documents)

    @property
    def tokens_after(self) -> int:
        return sum(d.tokens_after for d in self.documents)

    @property
    def ratio(self) -> float:
        """Achieved compression ratio (before / after); 1.0 when nothing changed."""
        return self.tokens_before / self.tokens_after if self.tokens_after else 1.0


@runtime_checkable
class Compressor(Protocol):
    """One method does the work; the attributes make memo keys honest.

    name:            registry name ("llmlingua2", "extractive", ...)
    version:         bump when output for the same input may change
    question_aware:  True when the output depends on the question (memo key includes it)
    fingerprint():   stable string of every setting that changes the output
    prior_ms_per_1k: cost per 1k cold tokens the cost gate assumes until it has
                     measured this compressor (proxy/gate/decide.py): the compressor knows
                     its own cost, so no table of names elsewhere has to
    """

    name: str
    version: str
    question_aware: bool
    prior_ms_per_1k: float

    def fingerprint(self) -> str: ...

    def compress(
        self, documents: Sequence[str], *, question: str, budget: Budget
    ) -> CompressionResult: ...

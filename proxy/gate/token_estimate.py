"""The gate's token count of a context, estimated from its characters (an exact count
would run on the event loop), with characters per token learned: they depend on the
target tokenizer and the text (English ≈ 4, CJK ≈ 1).

It decides `skip:short-context`, and a skipped request teaches nothing, so a wrong value
would stick; why it is guarded: docs/decisions/0040-cost-gate-learned-laws.md. A sample is:

- the compressor's own count of documents it tokenized in this request (`Outcome.fresh`,
  memo hits excluded: a hit measures nothing, and replaying one is free);
- over visible characters: ASCII whitespace is not counted, on either side of the ratio's
  use, so padding (which tokenizers merge, or drop: WordPiece and the approximate
  counter give it no token at all) does not move it;
- clamped to `BAND` visible characters per token. 1: a CJK character is about one token
  in cl100k and Llama-3 (compressors/tokens.py), emoji and byte-fallback text are the
  only denser text, and counting them as 1 errs to the safe side (fewer tokens: skip);
  8: a BPE vocabulary covers about 6 letters of a word per token
  (compressors/tokens.py `_APPROX_WORD_CHARS`), and no natural text is sparser;
- learned per tenant and aged (proxy/gate/learning.py): one tenant's traffic never moves
  another's estimate, and its own returns to the prior `MAX_AGE_S` after its last sample.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from proxy.gate.learning import MAX_AGE_S, PerTenant, clamp, fresh

VISIBLE_PER_TOKEN = 3.5  # English prose, visible characters per BPE token, until measured
BAND = (1.0, 8.0)  # visible characters per token: the physical band (module docstring)
MIN_SAMPLE_TOKENS = 16  # fewer tokens say little about the ratio
WINDOW = 64  # samples kept per tenant (a median over them)


def visible_chars(texts: Sequence[str]) -> int:
    """Characters that are not ASCII whitespace (C-speed counts: ~1 ms per MB)."""
    total = 0
    for t in texts:
        total += len(t) - t.count(" ") - t.count("\n") - t.count("\t") - t.count("\r")
    return total


def visible_in(text: str) -> int:
    return visible_chars((text,))


@dataclass(frozen=True)
class Sizes:
    """One request's documents sized once: each one's visible characters, and the tenant's
    characters per token as the request found them (every price of the request reads
    these, so the documents are scanned and the median taken once per request)."""

    visible: tuple[int, ...]
    chars_per_token: float

    def of(self, which: Iterable[int]) -> Sizes:
        """The sizes of the documents `which` (indices), in that order."""
        return Sizes(tuple(self.visible[i] for i in which), self.chars_per_token)

    def chars(self, which: Iterable[int] | None = None) -> int:
        return sum(self.visible) if which is None else sum(self.visible[i] for i in which)

    def tokens(self) -> int:
        return round(self.chars() / self.chars_per_token)


class TokenEstimate:
    """Per-tenant median of visible characters per token, clamped and aged."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_age: float = MAX_AGE_S):
        self.clock, self.max_age = clock, max_age
        self.tenants: PerTenant[deque[tuple[float, float]]] = PerTenant(
            lambda: deque(maxlen=WINDOW)
        )

    def learn(self, tenant: str, chars: int, tokens: int) -> None:
        """`chars` visible characters of documents the compressor counted `tokens` in."""
        if tokens >= MIN_SAMPLE_TOKENS and chars > 0:
            ratio = clamp(chars / tokens, *BAND)
            self.tenants.get(tenant).append((ratio, self.clock()))

    def chars_per_token(self, tenant: str) -> float:
        samples = fresh(self.tenants.get(tenant), self.clock(), self.max_age)
        if not samples:
            return VISIBLE_PER_TOKEN
        return clamp(statistics.median(r for r, _ in samples), *BAND)

    def sizes(
        self, tenant: str, texts: Sequence[str], visible: Sequence[int] | None = None
    ) -> Sizes:
        """`visible`: each text's visible characters (a memo's; default: counted now)."""
        counts = tuple(map(visible_in, texts)) if visible is None else tuple(visible)
        return Sizes(counts, self.chars_per_token(tenant))

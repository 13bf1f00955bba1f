"""The cost gate: compress only when it makes the request faster ("never slower").

Inputs, all measured online:
- prefill cost per uncached prompt token, per backend: ms from observed TTFT and
  the usage vLLM reports (robust: median of the last samples; the conservative —
  fastest — backend is used, since routing happens after compression);
- compressor cost per cold token: from observed compressions (median), with a
  per-compressor prior until the first measurement;
- the memo: documents already compressed cost a lookup, not a compression.

Decision for `auto`: compress at the requested rate when
    saved  = context_tokens × (1 − rate) × prefill_ms_per_token
    cost   = uncached_context_tokens × compressor_ms_per_token
    saved > cost  and  cost ≤ max_added_ms  and  context_tokens ≥ min_context_tokens.
`always` compresses whenever a context is found; `never` never does.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass

from proxy.context import RequestContext

# ms per 1k cold tokens on 2 CPU cores before anything is measured (DESIGN.md figures).
COMPRESSOR_PRIOR_MS_PER_1K = {"identity": 0.0, "extractive": 120.0, "llmlingua2": 1640.0,
                              "longllmlingua": 3000.0}  # fmt: skip
MIN_SAMPLE_TOKENS = 64


@dataclass(frozen=True)
class Decision:
    action: str  # "compress" | "skip"
    rate: float | None
    reason: str


class RobustRate:
    """Median of the last `window` per-token costs (outliers cannot drag it)."""

    def __init__(self, window: int = 64):
        self.samples: deque[float] = deque(maxlen=window)

    def add(self, ms: float, tokens: int) -> None:
        if tokens >= MIN_SAMPLE_TOKENS and ms >= 0:
            self.samples.append(ms / tokens)

    def value(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None


class CostGate:
    def __init__(self, policy: str, *, compressor: str, min_context_tokens: int,
                 max_added_ms: float, prior_prefill_ms_per_token: float | None = None):  # fmt: skip
        self.policy = policy
        self.min_context_tokens = min_context_tokens
        self.max_added_ms = max_added_ms
        self.prior_prefill = prior_prefill_ms_per_token
        self.prefill: dict[str, RobustRate] = {}
        self.compress_cost = RobustRate()
        self.compressor_prior = COMPRESSOR_PRIOR_MS_PER_1K.get(compressor, 2000.0) / 1000

    # feedback -----------------------------------------------------------------
    def observe_prefill(self, backend: str, uncached_tokens: int, ttft_ms: float) -> None:
        self.prefill.setdefault(backend, RobustRate()).add(ttft_ms, uncached_tokens)

    def observe_compression(self, outcome) -> None:
        if outcome.misses and outcome.tokens_before:
            cold_tokens = outcome.tokens_before * outcome.misses / (outcome.hits + outcome.misses)
            self.compress_cost.add(outcome.ms, round(cold_tokens))

    # estimates ----------------------------------------------------------------
    def prefill_ms_per_token(self) -> float | None:
        measured = [r.value() for r in self.prefill.values() if r.value() is not None]
        return min(measured) if measured else self.prior_prefill

    def compressor_ms_per_token(self) -> float:
        measured = self.compress_cost.value()
        return self.compressor_prior if measured is None else measured

    # the decision -------------------------------------------------------------
    def decide(self, ctx: RequestContext, *, context_tokens: int, cached_docs: int,
               total_docs: int, rate: float) -> Decision:  # fmt: skip
        if self.policy == "never":
            return Decision("skip", None, "skip:policy-never")
        if self.policy == "always":
            return Decision("compress", rate, "compress:policy-always")
        if context_tokens < self.min_context_tokens:
            return Decision("skip", None, f"skip:short-context({context_tokens})")
        cold = context_tokens * (1 - cached_docs / total_docs) if total_docs else 0
        cost = cold * self.compressor_ms_per_token()
        prefill = self.prefill_ms_per_token()
        if prefill is None:
            if cold == 0:
                return Decision("compress", rate, "compress:warm-cache")
            return Decision("skip", None, "skip:no-prefill-measurement")
        saved = context_tokens * (1 - rate) * prefill
        detail = f"saved={saved:.0f}ms,cost={cost:.0f}ms"
        if cost > self.max_added_ms:
            return Decision("skip", None, f"skip:over-budget({detail})")
        if saved <= cost:
            return Decision("skip", None, f"skip:not-worth-it({detail})")
        return Decision("compress", rate, f"compress:auto({detail})")

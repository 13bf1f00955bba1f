"""`RequestOutcome`: what one request came to, filled in by the stages and the answer
hook, read by the headers hook, the access log, spans, accounting and tests.

    field                  written by                      read by
    template               segment stage                   headers, access log, spans
    prefix_key             canonicalize stage              headers, spans
    decision               compression service             headers, access log, metrics
    compression            compression service             headers, ledger, access log
    quota                  quota stage                     headers (x-ratelimit-*)
    answer                 answer hook (usage, backend)    ledger, access log, spans

Nothing here is a string made for a header: `proxy/outcome/render.py` makes those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from proxy.outcome.decision import Decision


@dataclass(frozen=True)
class Compression:
    """What the compressor (or a stored form) made of the context. Token counts are the
    compressor's, with the target model's tokenizer where it has one."""

    compressor: str
    tokens_before: int
    tokens_after: int
    ms: float | None = None  # added to the request: lookup, queue wait and work
    memo_hits: int | None = None  # documents the output memo held
    memo_lookups: int | None = None
    features_seen: int | None = None  # of the memo misses, documents with memoized features
    features_missed: int | None = None

    @property
    def removed(self) -> int:
        return max(0, self.tokens_before - self.tokens_after)


@dataclass(frozen=True)
class Usage:
    """The engine's own account (vLLM's `usage`): what it was sent, served from its
    prefix cache and generated."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    cached_reported: bool = False  # the backend sent prompt_tokens_details.cached_tokens

    @property
    def computed_tokens(self) -> int:
        """Prompt tokens the engine prefilled (not served from its cache)."""
        return max(0, self.prompt_tokens - self.cached_tokens)

    @classmethod
    def of(cls, usage: dict[str, Any] | None) -> Usage | None:
        """From a sane usage dict (proxy/response/usage_tap.py `sane_usage`)."""
        if usage is None:
            return None
        details = usage.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens")
        return cls(
            int(usage.get("prompt_tokens") or 0),
            int(cached or 0),
            int(usage.get("completion_tokens") or 0),
            cached is not None,
        )


@dataclass(frozen=True)
class Answer:
    """A finished generation's: the backend that answered and its usage (None: none
    reported). `raw` is the usage as sent, for readers that pass it on."""

    backend: str
    usage: Usage | None
    raw: dict[str, Any] | None = None


class QuotaVerdict(Protocol):
    """An admitted request's standing against its tenant's limits
    (proxy/tenancy/rate_limits.py `Verdict`)."""

    allowed: bool

    def headers(self) -> dict[str, str]: ...


@dataclass
class RequestOutcome:
    template: str | None = None
    prefix_key: str | None = None
    decision: Decision | None = None
    compression: Compression | None = None
    quota: QuotaVerdict | None = None
    answer: Answer | None = None

    @property
    def usage(self) -> Usage | None:
        return self.answer.usage if self.answer is not None else None

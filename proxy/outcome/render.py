"""The one place a request's outcome becomes `x-ragtrim-*` strings (the headers hook
sends them) and span attributes (the tracing's per-stage spans): one list of typed
items, written as `x-ragtrim-{name}: str(value)` and `ragtrim.{name}: value`."""

from __future__ import annotations

from proxy.outcome.request import RequestOutcome

# What shows a cache hit (the time taken, the memo's hits, the features already seen):
# the headers hook keeps these from clients when tenancy is on
# (docs/decisions/0041-tenancy-quotas-accounting-owners.md).
CACHE_TELLING = frozenset(
    {"x-ragtrim-compress-ms", "x-ragtrim-cache-hits", "x-ragtrim-features-seen"}
)
BACKEND = "x-ragtrim-backend"  # the replica that answered (tenancy.backend_header)
CACHED_TOKENS = "x-ragtrim-cached-tokens"  # vLLM's cached_tokens, on a JSON answer
Value = str | int | float


def items(outcome: RequestOutcome) -> list[tuple[str, Value]]:
    """What the outcome says, in pipeline order, by name (without a prefix)."""
    out: list[tuple[str, Value]] = []
    if outcome.template is not None:
        out.append(("template", outcome.template))
    if outcome.decision is not None:
        out.append(("decision", outcome.decision.reason))
    c = outcome.compression
    if c is not None:
        out += [
            ("compressor", c.compressor),
            ("tokens-before", c.tokens_before),
            ("tokens-after", c.tokens_after),
        ]
        if c.ms is not None:
            out.append(("compress-ms", round(c.ms, 1)))
        if c.memo_lookups is not None:
            out.append(("cache-hits", f"{c.memo_hits}/{c.memo_lookups}"))
        if c.features_missed is not None:
            out.append(("features-seen", f"{c.features_seen}/{c.features_missed}"))
    if outcome.prefix_key is not None:
        out.append(("prefix-key", outcome.prefix_key[:16]))
    return out


def headers(outcome: RequestOutcome) -> dict[str, str]:
    """The x-ragtrim-* (and the quota's x-ratelimit-*) headers of `outcome`."""
    out = {f"x-ragtrim-{name}": str(value) for name, value in items(outcome)}
    if outcome.quota is not None:
        out.update(outcome.quota.headers())
    return out


def attributes(outcome: RequestOutcome) -> dict[str, Value]:
    """Span attributes, typed: `ragtrim.decision`, `ragtrim.tokens-before` (an int), ..."""
    out: dict[str, Value] = {f"ragtrim.{name}": value for name, value in items(outcome)}
    if outcome.quota is not None:
        out |= {
            "ragtrim." + k.replace("x-ratelimit-", "ratelimit."): v
            for k, v in outcome.quota.headers().items()
        }
    return out

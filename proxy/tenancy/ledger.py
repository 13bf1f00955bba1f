"""The per-tenant token ledger: what one answered request cost the engine, from its
typed outcome (proxy/outcome/request.py).

    client_tokens    = prompt_tokens + tokens_removed   the client's prompt, as sent
                                                        uncompressed it would have been
    prompt_tokens    = cached_tokens + computed_tokens  vLLM's usage: what it was sent
    tokens_removed   compression's cut (the compressor's count, the target tokenizer's)
    cached_tokens    served from vLLM's prefix cache (prompt_tokens_details)
    computed_tokens  prefilled by the engine
    completion_tokens

So a follow-up's cached tokens, a compressed document's removed tokens and the computed
remainder add up to the client's prompt (tests/integration/test_ledger.py checks it
against vLLM's own count of the uncompressed prompt). `tokens_before`/`tokens_after`
are the context's, around compression. A backend that reports no `cached_tokens`
counts none cached: everything it was sent is computed.
"""

from __future__ import annotations

from proxy.outcome.request import RequestOutcome

FIELDS = (
    "requests",
    "client_tokens",
    "prompt_tokens",
    "tokens_before",
    "tokens_after",
    "tokens_removed",
    "cached_tokens",
    "computed_tokens",
    "completion_tokens",
)
MODEL_PREFIX = "model:"  # a hash field `model:{name}:{field}`: the same counts per model


def entry_of(outcome: RequestOutcome, requests: int = 1) -> dict[str, int]:
    """One answered body's increments; `requests`: what the body counts as (a batch: its
    conversations)."""
    squeezed, usage = outcome.compression, outcome.usage
    before = squeezed.tokens_before if squeezed else 0
    after = squeezed.tokens_after if squeezed else 0
    removed = squeezed.removed if squeezed else 0
    prompt = usage.prompt_tokens if usage else 0
    return {
        "requests": requests,
        "client_tokens": prompt + removed,
        "prompt_tokens": prompt,
        "tokens_before": before,
        "tokens_after": after,
        "tokens_removed": removed,
        "cached_tokens": usage.cached_tokens if usage else 0,
        "computed_tokens": usage.computed_tokens if usage else 0,
        "completion_tokens": usage.completion_tokens if usage else 0,
    }


def with_model(entry: dict[str, int], model: str) -> dict[str, int]:
    """`entry` and its copy under `model`'s fields (one hash per tenant and period)."""
    return entry | {f"{MODEL_PREFIX}{model}:{k}": v for k, v in entry.items()}


def split_models(raw: dict[str, str]) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """A stored hash as (the tenant's totals, per model totals)."""
    totals = {f: int(float(raw.get(f, 0))) for f in FIELDS}
    models: dict[str, dict[str, int]] = {}
    for key, value in raw.items():
        if key.startswith(MODEL_PREFIX):
            model, _, name = key[len(MODEL_PREFIX) :].rpartition(":")
            if name in FIELDS:
                models.setdefault(model, dict.fromkeys(FIELDS, 0))[name] = int(float(value))
    return totals, models

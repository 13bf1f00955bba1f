"""bench.litellm's measurement: RAG requests straight to ragtrim and through LiteLLM in
front of the same ragtrim, interleaved, each timed end to end; what each response says
about compression (ragtrim's headers, which LiteLLM returns as llm_provider-x-ragtrim-*)
and the prompt tokens vLLM counted.

Every request is a different SQuAD case (its own documents and question), so neither
path is served from ragtrim's memo or vLLM's prefix cache by the other's earlier call.
Rounds alternate which path goes first, so a slow moment of the shared CPU does not
always fall on the same path.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from dataclasses import dataclass

import httpx

from bench.lib.common import percentile

PROVIDER = "llm_provider-"  # LiteLLM's prefix on its backend's response headers
MAX_TOKENS = 8


@dataclass(frozen=True)
class Target:
    name: str
    url: str  # ends in /v1
    key: str
    header_prefix: str  # where ragtrim's x-ragtrim-* headers arrive


@dataclass(frozen=True)
class Sample:
    ms: float
    tokens_before: int
    tokens_after: int
    decision: str
    prompt_tokens: int
    overhead_ms: float | None  # LiteLLM's own x-litellm-overhead-duration-ms


def send(client: httpx.Client, target: Target, model: str, messages: list[dict]) -> Sample:
    body = {"model": model, "messages": messages, "max_tokens": MAX_TOKENS, "temperature": 0}
    headers = {"authorization": f"Bearer {target.key}"}
    start = time.perf_counter()
    response = client.post(f"{target.url}/chat/completions", json=body, headers=headers)
    ms = (time.perf_counter() - start) * 1000
    response.raise_for_status()
    h, p = response.headers, target.header_prefix
    before = int(h.get(f"{p}x-ragtrim-tokens-before") or 0)
    overhead = h.get("x-litellm-overhead-duration-ms")
    return Sample(
        ms=ms, tokens_before=before,
        tokens_after=int(h.get(f"{p}x-ragtrim-tokens-after") or before),
        decision=h.get(f"{p}x-ragtrim-decision", ""),
        prompt_tokens=response.json()["usage"]["prompt_tokens"],
        overhead_ms=float(overhead) if overhead else None,
    )  # fmt: skip


def interleaved(
    targets: tuple[Target, Target], model: str, requests: list[list[dict]], warmup: int,
    transport: httpx.BaseTransport | None = None,
) -> dict[str, list[Sample]]:  # fmt: skip
    """Two requests a round (one per target, the first target alternating); the first
    `warmup` rounds are not kept."""
    out: dict[str, list[Sample]] = {t.name: [] for t in targets}
    with httpx.Client(timeout=120, transport=transport) as client:
        for i in range(len(requests) // 2):
            order = targets if i % 2 == 0 else targets[::-1]
            for target, messages in zip(order, requests[2 * i : 2 * i + 2], strict=True):
                sample = send(client, target, model, messages)
                if i >= warmup:
                    out[target.name].append(sample)
    return out


def summary(samples: list[Sample]) -> dict:
    ms = [s.ms for s in samples]
    compressed = [s.tokens_after < s.tokens_before for s in samples]
    overheads = [s.overhead_ms for s in samples if s.overhead_ms is not None]
    return {
        "n": len(samples),
        "p50_ms": round(percentile(ms, 50), 2), "p90_ms": round(percentile(ms, 90), 2),
        "compressed": all(compressed), "compressed_share": sum(compressed) / len(samples),
        "decisions": dict(Counter(s.decision.split("(")[0] for s in samples)),
        "tokens_before_p50": statistics.median(s.tokens_before for s in samples),
        "tokens_after_p50": statistics.median(s.tokens_after for s in samples),
        "vllm_prompt_tokens_p50": statistics.median(s.prompt_tokens for s in samples),
        **({"litellm_reported_overhead_p50_ms": round(statistics.median(overheads), 2)}
           if overheads else {}),
    }  # fmt: skip


def paired_added_ms(base: list[Sample], hop: list[Sample]) -> float:
    """The median over rounds of (through LiteLLM - straight to ragtrim)."""
    return round(statistics.median(h.ms - b.ms for b, h in zip(base, hop, strict=True)), 2)

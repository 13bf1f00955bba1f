"""POST /v1/compress: compress documents ahead of time (at ingest) and warm the chunk
memo, so that at request time compression costs a cache lookup.

    {"documents": ["...", ...], "question": "...", "rate": 0.5}
 -> {"object": "ragtrim.compression", "compressor": ..., "documents": [{"text",
     "tokens_before", "tokens_after"}], "tokens_before", "tokens_after", "cache_hits"}

For question-agnostic compressors (llmlingua2) the warmed entries serve every later
question; question-aware ones (extractive) key on the question given here, and warm
their per-sentence embedding cache either way.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from proxy.engine import CompressionEngine
from proxy.errors import InvalidRequest, Overloaded
from proxy.protocol import parse_json


class CompressRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    documents: list[str] = Field(min_length=1)
    question: str = ""
    rate: float | None = Field(None, gt=0, le=1)


async def compress_documents(
    engine: CompressionEngine, raw: bytes, default_rate: float, tenant: str = ""
) -> dict:
    """`tenant` scopes the warmed memo entries: only that tenant's requests read them."""
    try:
        req = CompressRequest.model_validate(parse_json(raw))
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(p) for p in first["loc"]) or None
        raise InvalidRequest(f"{param}: {first['msg']}", param=param) from exc
    try:
        outcome = await engine.compress(
            req.documents, req.question, req.rate or default_rate, tenant
        )
    except Exception as exc:  # noqa: BLE001 - busy/timeout: ask the client to retry
        raise Overloaded(f"compression unavailable: {type(exc).__name__}") from exc
    entries = await engine.lookup(req.documents, req.question, req.rate or default_rate, tenant)
    return {
        "object": "ragtrim.compression",
        "compressor": engine.name,
        "documents": [
            {"text": e.text, "tokens_before": e.tokens_before, "tokens_after": e.tokens_after}
            for e in entries
            if e is not None
        ],
        "tokens_before": outcome.tokens_before,
        "tokens_after": outcome.tokens_after,
        "cache_hits": outcome.hits,
        "ms": round(outcome.ms, 1),
    }

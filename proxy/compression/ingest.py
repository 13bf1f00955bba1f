"""POST /v1/compress: compress documents ahead of time (at ingest) and warm the chunk
memo, so that at request time compression costs a cache lookup.

    {"documents": ["...", ...], "question": "...", "rate": 0.5}
 -> {"object": "ragtrim.compression", "compressor": ..., "documents": [{"text",
     "tokens_before", "tokens_after"}], "tokens_before", "tokens_after", "cache_hits"}

For question-agnostic compressors (llmlingua2) the warmed entries serve every later
question; question-aware ones (extractive) key on the question given here, and warm
their per-sentence embedding cache either way. For a compressor split in a document
and a request part (fast_extractive) the documents' question-independent
features are stored too (proxy/compression/features.py), with or without a question: every
later request with any question finds these documents seen (the ingest hook).

Bounded (docs/decisions/0044-compression-service-path.md): `Ingest.slot` admits at most
`compression.limits.ingest_concurrency` requests per tenant, before the body is read
(429 beyond); the documents are checked against the same limits as a request's
`ragtrim.documents` (400 too many, 413 too long) before any work; and a compression
that overruns its timeout stops in its worker (compressors/deadline.py). Documents the
scorer cannot judge are returned verbatim (compressors/verbatim.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from compressors import partition_verbatim
from proxy.compression.engine import CompressionEngine
from proxy.compression.limits import cap_question, check_documents
from proxy.errors import InvalidRequest, Overloaded
from proxy.settings import CompressionLimitSettings


class CompressRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    documents: list[str] = Field(min_length=1)
    question: str = ""
    rate: float | None = Field(None, gt=0, le=1)


class Ingest:
    """The /v1/compress work of one process: its per-tenant admission and its limits."""

    def __init__(
        self,
        engine: CompressionEngine,
        default_rate: float,
        limits: CompressionLimitSettings,
        max_question_chars: int,
    ):
        self.engine = engine
        self.default_rate = default_rate
        self.limits = limits
        self.max_question_chars = max_question_chars  # requests.max_question_chars
        self._in_flight: dict[str, int] = {}  # tenant -> requests admitted, not finished

    @contextmanager
    def slot(self, tenant: str) -> Iterator[None]:
        """Admit one request of `tenant`, or raise Overloaded (429) before any work."""
        if self._in_flight.get(tenant, 0) >= self.limits.ingest_concurrency:
            raise Overloaded(
                f"/v1/compress: {self.limits.ingest_concurrency} requests of this tenant in "
                "flight already (compression.limits.ingest_concurrency)"
            )
        self._in_flight[tenant] = self._in_flight.get(tenant, 0) + 1
        try:
            yield
        finally:
            left = self._in_flight[tenant] - 1
            if left:
                self._in_flight[tenant] = left
            else:
                del self._in_flight[tenant]

    async def compress(self, raw: bytes, tenant: str = "") -> dict:
        """`tenant` scopes the warmed memo entries: only that tenant's requests read them."""
        req = _parse(raw)
        check_documents(req.documents, self.limits, "documents")
        # the chat path's cap: the same scoring question, so the same memo keys,
        # and a 900k-character question never holds the worker's GIL for long
        req.question = cap_question(req.question, self.max_question_chars)
        return await compress_documents(self.engine, req, req.rate or self.default_rate, tenant)


def _parse(raw: bytes) -> CompressRequest:
    """orjson alone (~8 ms per MB): protocol.parse_json also scans the raw bytes for
    integers above 64 bits, which cost ~50 ms per MB on the event loop, and this body
    carries none that matter (`rate` is a float)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"request body is not valid JSON: {exc}") from exc
    try:
        return CompressRequest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(p) for p in first["loc"]) or None
        raise InvalidRequest(f"{param}: {first['msg']}", param=param) from exc


async def compress_documents(
    engine: CompressionEngine, req: CompressRequest, rate: float, tenant: str = ""
) -> dict:
    # the others are kept verbatim, never compressed (~20 ms per MB: off the loop)
    chosen = await asyncio.to_thread(partition_verbatim, req.documents)
    docs = [req.documents[i] for i in chosen]
    try:
        outcome = await engine.compress(docs, req.question, rate, tenant) if docs else None
    except Exception as exc:  # noqa: BLE001 - busy/timeout: ask the client to retry
        raise Overloaded(f"compression unavailable: {type(exc).__name__}") from exc
    # the outcome's own texts: a small seen set is computed without a memo entry, so a
    # lookup after it would find none (that document was then missing from the answer)
    done = zip(outcome.texts, outcome.sizes, strict=True) if outcome else ()
    found = dict(zip(chosen, done, strict=True))
    out = []
    for i, text in enumerate(req.documents):
        if i not in found:  # kept verbatim: the compressor never saw it, so no counts
            out.append(
                {"text": text, "tokens_before": None, "tokens_after": None, "verbatim": True}
            )
            continue
        kept, (before, after) = found[i]
        out.append({"text": kept, "tokens_before": before, "tokens_after": after})
    return {
        "object": "ragtrim.compression",
        "compressor": engine.name,
        "documents": out,
        "tokens_before": outcome.tokens_before if outcome else 0,
        "tokens_after": outcome.tokens_after if outcome else 0,
        "cache_hits": outcome.hits if outcome else 0,
        "ms": round(outcome.ms, 1) if outcome else 0.0,
    }

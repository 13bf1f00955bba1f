"""Compression: the compressor, its budget and cost gate, the input caps, and the
canonicalisation of the static prefix."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from cache.analysis import ANALYSIS_BYTES
from cache.features import FEATURE_CACHE_BYTES
from cache.forwarded import FORWARDED_BYTES, FORWARDED_TTL_S
from cache.memo import MEMO_TTL_S
from cache.stable_forms import MAX_QUESTIONS, STABLE_FORM_TTL_S
from proxy.config.compressor_options import check_options
from proxy.config.section import Section
from proxy.prompt.segment.patterns import DEFAULT_TIMEOUT_S


class CompressionLimitSettings(Section):
    """Bounds on the work one request's context can cause: every step that
    grows with the context (locating documents, segmentation, patterns, protected spans,
    the compressor) is linear, and these caps bound its size. Documents named in the
    request's `ragtrim` field or sent to /v1/compress beyond them are refused (400 too
    many, 413 too long); a context found by a recogniser beyond them is forwarded
    uncompressed (`x-ragtrim-decision: skip:limits`)."""

    max_documents: int = Field(
        1024,
        ge=1,
        description="Most context documents per request (a template's context counts one per "
        "blank-line-separated piece).",
    )
    max_document_chars: int = Field(
        262_144, ge=1, description="Most characters in one context document."
    )
    max_request_chars: int = Field(
        1_048_576, ge=1, description="Most characters of context documents per request, in all."
    )
    pattern_timeout_ms: float = Field(
        DEFAULT_TIMEOUT_S * 1000,
        gt=0,
        description="Time limit of the operator `patterns` on one request.",
    )
    offload_bytes: int = Field(
        65_536,
        ge=0,
        description="Request bodies larger than this (bytes) are segmented in a worker thread "
        "(smaller ones on the event loop, where a thread hop would cost more than the work).",
    )
    ingest_concurrency: int = Field(
        2, ge=1, description="/v1/compress requests in flight per tenant (429 beyond)."
    )


class StableSettings(Section):
    """Cache-aware compression: price only the tokens a backend has not cached,
    and reuse a document set's compressed form byte for byte (proxy/compression/stable.py)."""

    enabled: bool = Field(
        True,
        description="Price compression against what each backend holds in its prefix cache "
        "and reuse (and grow) a document set's compressed form on later turns; false: every "
        "request is priced and compressed on its own.",
    )
    block_size: int = Field(
        16,
        ge=1,
        description="The backends' KV block size in tokens (vLLM: 16 on GPU, 128 on CPU): the "
        "unit the record of forwarded prompts counts cached prefixes in.",
    )
    record_bytes: int = Field(
        FORWARDED_BYTES,
        ge=0,
        description="Bytes the record of what was forwarded to each backend may hold "
        "(about 384 per block, least recently used out).",
    )
    record_ttl_s: float = Field(
        FORWARDED_TTL_S, gt=0, description="Longest a forwarded block counts as cached."
    )
    form_ttl_s: float = Field(
        STABLE_FORM_TTL_S,
        gt=0,
        description="A compressed form is kept this long after its last use.",
    )
    max_questions: int = Field(
        MAX_QUESTIONS, ge=1, description="Questions remembered per compressed form."
    )


class CompressionSettings(Section):
    enabled: bool = Field(
        True,
        description="Find and compress retrieved context; false: the one switch that turns "
        "compression off (only a request that asks a rate, x-ragtrim-rate or ragtrim.rate, "
        "is then compressed).",
    )
    compressor: str = Field(
        "fast_extractive",
        description="fast_extractive | extractive | llmlingua2 | longllmlingua | identity "
        "(fast_extractive: BM25 + static MiniLM embeddings, no model forward; "
        "bench.compress_cost measures its cold cost per 1k tokens; extractive runs "
        "all-MiniLM-L6-v2).",
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto",
        description="Where the torch compressors (extractive, llmlingua2, longllmlingua) run; "
        "auto = cuda when torch sees a GPU. Passed to the compressor with its options.",
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="Constructor options of the compressor (JSON/YAML)."
    )
    rate: float = Field(0.5, gt=0, le=1, description="Share of context tokens kept by default.")
    policy: Literal["auto", "always"] = Field(
        "auto",
        description="auto: compress only when predicted to lower TTFT; always: whenever a "
        "context is found (off: compression.enabled=false).",
    )
    min_context_tokens: int = Field(
        200, ge=0, description="Contexts shorter than this are never compressed."
    )
    max_added_ms: float = Field(
        2500.0, ge=0, description="Most compression time the cost gate may add to a request."
    )
    timeout_s: float = Field(5.0, gt=0, description="Seconds a compression may take (fail open).")
    workers: int = Field(1, ge=1, description="Compression worker threads.")
    torch_threads: int = Field(
        1,
        ge=0,
        description="torch intra-op threads for compression (0 = torch's default); "
        "1 leaves the other cores to the request path and a co-located vLLM.",
    )
    ready_wait_s: float = Field(
        60.0,
        ge=0,
        description="/readyz answers 503 until the compressor has loaded and been measured, "
        "for at most this long after start (then ready, compressing once loaded); 0 = ready "
        "with a healthy backend alone. Requests that arrived during the load were slowed by "
        "it (2k-token first turns +6-10 ms p50, +29-114 ms p90, on 2 cores).",
    )
    recalibrate_s: float = Field(
        30.0,
        ge=0,
        description="While the cost gate skips for cost and no compression has taught it "
        "for this long, the start-up calibration runs again in a worker "
        "(proxy/compression/recalibration.py); 0 = never.",
    )
    gil_switch_ms: float = Field(
        5.0,
        gt=0,
        description="The server process's GIL switch interval (sys.setswitchinterval), ms; "
        "5 is CPython's own. Compressions run in threads beside the event loop, which gets "
        "the GIL back at most every interval: 0.5 cut the loop's lag during a compression "
        "(p99 5-7 ms to 1.3-1.6) but made concurrent compressions twice as slow "
        "(bench.ttft_sim, reuse cell at c=4: 29.4 ms p50 against 13.9).",
    )
    tokenizer: str = Field(
        "",
        description="Tokenizer dir of the target model for token counts; empty = the "
        "backend model's own dir when local, else an approximation.",
    )
    patterns: list[str] = Field(
        default_factory=list,
        description="Regexes with a named group `context` (and optional `question`).",
    )
    memo_ttl_s: float = Field(MEMO_TTL_S, gt=0, description="Seconds a compressed chunk is kept.")
    feature_cache_bytes: int = Field(
        FEATURE_CACHE_BYTES,
        ge=0,
        description="In-process byte cap of the per-chunk feature cache (question-independent "
        "compressor features, also kept in the shared store for memo_ttl_s); 0 = off.",
    )
    analysis_bytes: int = Field(
        ANALYSIS_BYTES,
        ge=0,
        description="In-process byte cap of the per-document analyses (scripts judged, "
        "sentences split: cache/analysis.py), by tenant; 0 = computed on every request.",
    )
    prefill_metrics: bool = Field(
        True,
        description="Learn each backend's prefill cost from its vLLM /metrics after responses "
        "(non-streamed traffic gives no TTFT).",
    )
    prefill_scrape_interval_s: float = Field(
        0.5, gt=0, description="Fewest seconds between two /metrics reads of one backend."
    )
    limits: CompressionLimitSettings = Field(default_factory=CompressionLimitSettings)
    stable: StableSettings = Field(default_factory=StableSettings)

    @model_validator(mode="after")
    def _options(self) -> CompressionSettings:
        check_options(self.compressor, self.options)
        return self


class CanonicalSettings(Section):
    normalize_newlines: bool = Field(
        False, description="CRLF/CR to LF in the static prefix (opt-in: changes client bytes)."
    )
    strip_trailing_whitespace: bool = Field(
        False, description="Strip trailing spaces per line in the static prefix (opt-in)."
    )
    sort_tools: bool = Field(
        True,
        description="Sort the tools list by (type, name) so its order does not change the "
        "prefix; each tool's own keys and property order are never changed (they are "
        "part of the prompt and steer the order the model writes arguments in).",
    )
    move_volatile: bool = Field(
        False, description="Move dates, times and UUIDs out of the static prefix (opt-in)."
    )
    extra_volatile: list[str] = Field(
        default_factory=list, description="More regexes of volatile text to move."
    )

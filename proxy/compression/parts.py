"""The compression service's long-lived parts, built from settings: the engine, its
feature cache, the cost gate and the cache-aware path. proxy/components.py
assembles them with the rest; the LangChain runtime builds its own engine here too."""

from __future__ import annotations

import os
from collections.abc import Callable

from cache.analysis import DocumentAnalyses
from cache.features import FeatureCache
from cache.forwarded import ForwardedRecord
from cache.memo import ChunkMemo
from cache.stable_forms import StableForms
from cache.store import KVStore, MemoryStore, RedisStore
from compressors import Compressor, build_compressor
from proxy.backends.endpoint import EndpointPool
from proxy.compression.cache_view import CacheView
from proxy.compression.engine import CompressionEngine
from proxy.compression.recalibration import Recalibration
from proxy.compression.service import CompressionService
from proxy.compression.stable import StableCompression
from proxy.compression.token_counter import TargetTokenCounter
from proxy.gate.decide import CostGate
from proxy.gate.exported import GateLawCollector
from proxy.metrics import Metrics
from proxy.settings import CompressionSettings, Settings


def make_engine(
    c: CompressionSettings,
    store: KVStore,
    counter,
    compressor: Compressor | None = None,
    metrics: Metrics | None = None,
    analyses: DocumentAnalyses | None = None,
) -> CompressionEngine:
    compressor = compressor or build_compressor(
        c.compressor, {"count_tokens": counter, "device": c.device, **c.options}
    )
    return CompressionEngine(
        compressor,
        ChunkMemo(store, c.memo_ttl_s),
        timeout=c.timeout_s,
        workers=c.workers,
        count=counter,
        features=make_feature_cache(c, store, metrics),
        analyses=analyses,
    )


def make_feature_cache(
    c: CompressionSettings, store: KVStore, metrics: Metrics | None
) -> FeatureCache | None:
    """Per-chunk features, question-independent: in-process, then shared."""
    if not c.feature_cache_bytes:
        return None
    if metrics is None:
        return FeatureCache(store, max_bytes=c.feature_cache_bytes, ttl=c.memo_ttl_s)
    lookups, written = metrics.feature_lookups, metrics.feature_bytes_written
    cache = FeatureCache(
        store,
        max_bytes=c.feature_cache_bytes,
        ttl=c.memo_ttl_s,
        on_lookup=lambda result, n: lookups.labels(result).inc(n),
        on_write=written.inc,
    )
    metrics.feature_cache_bytes.set_function(lambda: cache.local.bytes)
    return cache


def make_gate(c: CompressionSettings, compressor: Compressor, pool: EndpointPool) -> CostGate:
    """The compressor's own cost prior decides until its start-up measurement lands."""
    return CostGate(
        c.policy,
        pool=pool,
        prior_ms_per_1k=compressor.prior_ms_per_1k,
        min_context_tokens=c.min_context_tokens,
        max_added_ms=c.max_added_ms,
        prior_seen_ms_per_1k=getattr(compressor, "prior_seen_ms_per_1k", None),
        cores=len(os.sched_getaffinity(0)),
    )


def make_stable(
    c: CompressionSettings,
    store: KVStore,
    gate: CostGate,
    metrics: Metrics,
    engine: CompressionEngine,
    analyses: DocumentAnalyses | None = None,
) -> StableCompression | None:
    """Cache-aware compression (compression.stable): the record of forwarded prompts,
    in-process and bounded in bytes, and the stable forms in the shared store."""
    s = c.stable
    if not s.enabled:
        return None
    record = ForwardedRecord(max_bytes=s.record_bytes, ttl=s.record_ttl_s)
    forms = StableForms(
        store,
        ttl=s.form_ttl_s,
        max_questions=s.max_questions,
        on_error=lambda op, exc: metrics.store_errors.labels(op).inc(),
    )
    gate.pool.on_removed.append(lambda ep: record.forget(ep.url))  # it left: nothing held
    view = CacheView(record, gate.pool, s.block_size, analyses)
    return StableCompression(view, forms, gate, metrics, engine.fingerprint, analyses)


def make_store(
    settings: Settings, on_error: Callable[[str, Exception], None] | None = None
) -> KVStore:
    """Both bounded in bytes (settings.store.memory_bytes): the in-process store, or
    Redis with its outage fallback. The one recipe for the proxy and the LangChain
    runtime (proxy/integrations/langchain/runtime.py)."""
    local = MemoryStore(max_bytes=settings.store.memory_bytes)
    if not settings.redis.url:
        return local
    return RedisStore(
        settings.redis.url,
        timeout=settings.redis.timeout_s,
        on_error=on_error,
        fallback=local,
    )


def make_compression(
    settings: Settings,
    store: KVStore,
    pool: EndpointPool,
    metrics: Metrics,
    compressor: Compressor | None = None,
) -> CompressionService:
    """The compression service the compress stage calls: engine, gate, the prefix cache's
    say and the re-measurement, from `settings.compression`."""
    c = settings.compression
    analyses = DocumentAnalyses(c.analysis_bytes) if c.analysis_bytes else None
    counter = TargetTokenCounter(pool, c.tokenizer)
    engine = make_engine(c, store, counter, compressor, metrics, analyses)
    gate = make_gate(c, engine.compressor, pool)
    metrics.registry.register(GateLawCollector(gate))  # its cost laws in /metrics
    stable = make_stable(c, store, gate, metrics, engine, analyses)
    recalibration = Recalibration(engine, gate, c.recalibrate_s)
    return CompressionService(
        engine, gate, metrics, settings.log_prompts, c.limits, recalibration, stable, analyses
    )

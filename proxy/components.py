"""Every long-lived part of one ragtrim instance, built from settings in one place.

No globals: `build()` returns a `Components`; create_app and the LangChain
integration each own one. The request pipeline's order is the `stages` list here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from cache.prefixes import PrefixRegistry
from cache.store import KVStore
from cache.writes import BackgroundWrites
from compressors import Compressor
from proxy.backends.discovery import Discovery
from proxy.backends.endpoint import EndpointPool
from proxy.backends.health import HealthChecker
from proxy.backends.parts import make_discovery, make_health, make_pool
from proxy.backends.scrape import MetricsScraper
from proxy.backends.warmup import Warmer
from proxy.compression.ingest import Ingest
from proxy.compression.parts import make_compression, make_store
from proxy.compression.service import CompressionService
from proxy.compression.stable import StableCompression
from proxy.gate.decide import CostGate
from proxy.http.principal import EdgeIdentity
from proxy.metrics import Metrics
from proxy.outcome.render import CACHE_TELLING
from proxy.prompt.segment import Segmenter
from proxy.request.admission import Admission
from proxy.request.forward import Forwarder
from proxy.request.parse import RequestParser
from proxy.request.pipeline import Pipeline, Stage
from proxy.response.feedback import Feedback
from proxy.response.hooks import (
    FeedbackHook,
    HeadersHook,
    OwnerHook,
    PrefixRecordHook,
    TimingHook,
    UsageHook,
)
from proxy.response.path import ResponsePath
from proxy.response.points import Hook
from proxy.response.quota_settle import QuotaSettleHook
from proxy.routing.kv.service import KvRouting, build_kv
from proxy.routing.registry import build_router
from proxy.settings import CompressionSettings, Settings
from proxy.stages.ask_usage import UsageStage
from proxy.stages.canonicalize import CanonicalizeStage
from proxy.stages.compress import CompressStage
from proxy.stages.options import OptionsStage
from proxy.stages.quota import QuotaCheck, QuotaStage
from proxy.stages.segment import SegmentStage
from proxy.stages.tenant import TenantStage
from proxy.telemetry.accesslog import AccessLog, access_logger
from proxy.telemetry.tracing import build_tracing
from proxy.telemetry.wrap import Operations
from proxy.tenancy.accounting import labelled_tenants
from proxy.tenancy.policy import Tenancy, make_tenancy
from proxy.upstream.transport import AiohttpTransport, Transport

log = logging.getLogger("ragtrim")


def _nothing() -> None:
    pass


@dataclass
class Components:
    settings: Settings
    metrics: Metrics
    pool: EndpointPool
    health: HealthChecker
    store: KVStore
    compression: CompressionService  # the gate, the engine and the prefix cache's say
    prefixes: PrefixRegistry
    feedback: Feedback
    forwarder: Forwarder
    transport: Transport
    identity: EdgeIdentity  # who asks, resolved once per request at the edge
    ingest: Ingest
    ops: Operations  # tracing, the access log, the telemetry middleware
    tenancy: Tenancy  # identity, limits, accounting, response owners
    discovery: Discovery | None = None
    kv: KvRouting | None = None  # KV-event routing (proxy/routing/kv/)
    on_loaded: Callable[[], None] = _nothing  # after a long-lived load (proxy/server/heap.py)
    _warming: asyncio.Task[None] | None = None
    _ready_by: float = 0.0  # monotonic: /readyz waits for the warm-up until then

    async def start(self) -> None:
        if self.discovery is not None:
            await self.discovery.start()  # first look-up before the first health round
        await self.health.start()
        if self.kv is not None:
            await self.kv.start()
        self._ready_by = time.monotonic() + self.settings.compression.ready_wait_s
        self._warming = asyncio.create_task(self._warm_engine())

    def warmed(self) -> bool:
        """The compressor's warm-up is over (loaded and measured, or failed), or readiness
        has waited `compression.ready_wait_s` for it: traffic sent before would share
        the CPU with the load."""
        done = self._warming is not None and self._warming.done()
        return done or time.monotonic() >= self._ready_by

    async def _warm_engine(self) -> None:
        try:
            await self.compression.warm(self.settings.compression.torch_threads)
            self.on_loaded()  # the model lives as long as the process (proxy/server/heap.py)
        except Exception as exc:  # noqa: BLE001 - logged; requests fail open
            log.warning("compressor %s failed to load: %r", self.compression.name, exc)

    async def stop(self) -> None:
        if self._warming is not None:
            self._warming.cancel()
        if self.discovery is not None:
            await self.discovery.stop()
        await self.health.stop()
        if self.kv is not None:
            await self.kv.stop()
        await self.feedback.drain()
        await self.compression.drain()
        await self.transport.aclose()
        await self.ops.aclose()  # its writes drained before the tenancy's stores close
        await self.tenancy.aclose()
        await self.store.aclose()
        self.compression.engine.close()


def make_stages(settings: Settings, tenant: TenantStage, compression: CompressionService,
                metrics: Metrics, quota: QuotaStage | None = None) -> list[Stage]:  # fmt: skip
    c = settings.compression
    segmenter = Segmenter(c.patterns, pattern_timeout=c.limits.pattern_timeout_ms / 1000)
    rate = c.rate if c.enabled else None
    compress = CompressStage(compression, rate)
    return [  # THE pipeline order (canonicalize after compress: see its module)
        tenant,
        OptionsStage(),
        *([QuotaCheck(quota, rate)] if quota else []),  # before any expensive work
        SegmentStage(segmenter, c.limits, settings.requests),
        compress,
        CanonicalizeStage(settings.canonical, metrics, c.limits.offload_bytes),
        *([quota] if quota else []),  # after compression: compression buys quota
        UsageStage(),
    ]


def make_feedback(c: CompressionSettings, metrics: Metrics, gate: CostGate,
                  prefixes: PrefixRegistry, transport: Transport) -> Feedback:  # fmt: skip
    scraper = None
    if c.prefill_metrics:
        scraper = MetricsScraper(gate.pool, transport, metrics,
                                 min_interval=c.prefill_scrape_interval_s)  # fmt: skip
    return Feedback(metrics, gate, prefixes, gate.pool, scraper)


def make_operations(settings: Settings, metrics: Metrics, identity: EdgeIdentity,
                    tenancy: Tenancy) -> Operations:  # fmt: skip
    """The operators' parts (docs/decisions/0042-telemetry-operations.md); each is None
    when its settings turn it off."""
    limiter = tenancy.limiter
    settles = limiter is not None and settings.tenancy.quotas.charge == "computed"
    return Operations(
        metrics,
        tracing=build_tracing(settings.tracing, settings.telemetry),
        access_log=AccessLog(access_logger(), settings.log_prompts, settings.telemetry)
        if settings.access_log.enabled else None,
        accounting=tenancy.accounting, vouches=identity.vouches,
        settle=QuotaSettleHook(limiter, BackgroundWrites()) if settles and limiter else None,
    )  # fmt: skip


def make_quota(settings: Settings, metrics: Metrics, tenancy: Tenancy) -> QuotaStage | None:
    """The quota stage over the tenancy's limiter (None: no limits configured)."""
    if tenancy.limiter is None:
        return None
    known = labelled_tenants(settings.tenancy)  # metric labels: none unless asked
    return QuotaStage(tenancy.limiter, metrics, known, settings.compression.limits.offload_bytes)


def make_hooks(settings: Settings, metrics: Metrics, feedback, owners, ops: Operations,
               stable: StableCompression | None = None) -> list[Hook]:  # fmt: skip
    """THE response hooks, in order (proxy/response/): usage first, which the others read."""
    return [
        UsageHook(metrics, settings.upstream.backend_forces_usage),
        HeadersHook(
            settings.tenancy.shows_backend(),
            CACHE_TELLING if settings.tenancy.api_keys else frozenset(),
        ),
        TimingHook(metrics),
        FeedbackHook(feedback),
        *ops.hooks(),  # the answer, for the telemetry record: after feedback, as it was
        OwnerHook(owners),
        *([PrefixRecordHook(stable.view)] if stable is not None else []),
    ]


def make_forwarder(settings: Settings, pool: EndpointPool, router, transport: Transport,
                   pipeline: Pipeline, metrics: Metrics, feedback: Feedback,
                   identity: EdgeIdentity, ops: Operations, tenancy: Tenancy,
                   quota: QuotaStage | None,
                   stable: StableCompression | None = None) -> Forwarder:  # fmt: skip
    """The data plane gets the traced router and transport, and the answer hook; the
    control plane (health, scrapes, warm-up) the bare ones."""
    hooks = make_hooks(settings, metrics, feedback, tenancy.owners, ops, stable)
    response = ResponsePath(ops.wrap_transport(transport), settings.timeouts, metrics,
                            settings.upstream, hooks)  # fmt: skip
    return Forwarder(pool, ops.wrap_router(router), pipeline, response,
                     Admission(settings.admission, metrics), identity,
                     settings.max_body_bytes, log_prompts=settings.log_prompts,
                     parser=RequestParser(settings.requests,
                                          settings.compression.limits.offload_bytes),
                     owners=tenancy.owners, telemetry=settings.telemetry,
                     quota=quota)  # fmt: skip


def build(
    settings: Settings,
    *,
    transport: Transport | None = None,
    store: KVStore | None = None,
    compressor: Compressor | None = None,
    on_loaded: Callable[[], None] | None = None,
) -> Components:
    metrics = Metrics()
    pool, dns_targets = make_pool(settings, metrics)
    transport = transport or AiohttpTransport(settings.timeouts.connect_s)
    if store is None:
        store = make_store(settings, lambda op, _: metrics.store_errors.labels(op).inc())
    tenancy, c = make_tenancy(settings, store, metrics), settings.compression
    identity, quota = EdgeIdentity(tenancy.identity), make_quota(settings, metrics, tenancy)
    ops = make_operations(settings, metrics, identity, tenancy)
    compression = make_compression(settings, store, pool, metrics, compressor)
    stages = make_stages(settings, TenantStage(tenancy.identity), compression, metrics, quota)
    pipeline = Pipeline(stages, metrics, settings.log_prompts, ops.tracing)
    on_loaded = on_loaded or _nothing
    kv = build_kv(settings.routing.kv_events, pool, metrics, c.tokenizer, on_loaded)
    router = build_router(settings.routing, metrics, panic=settings.health.panic, kv=kv,
                          retry_after_s=settings.admission.retry_after_s)  # fmt: skip
    prefixes = PrefixRegistry(store, ttl=settings.store.prefix_ttl_s,
                              hot_keep=settings.store.hot_prefixes)  # fmt: skip
    feedback = make_feedback(c, metrics, compression.gate, prefixes, transport)
    forwarder = make_forwarder(settings, pool, router, transport, pipeline, metrics, feedback,
                               identity, ops, tenancy, quota, compression.stable)  # fmt: skip
    warmer = Warmer(settings.warmup, pool, prefixes, transport, metrics, router)
    health = make_health(settings, pool, transport, warmer, kv.warm if kv else None)
    discovery = make_discovery(settings, dns_targets, pool, metrics, health)
    ingest = Ingest(compression.engine, c.rate, c.limits, settings.requests.max_question_chars)
    return Components(
        settings=settings, metrics=metrics, pool=pool, health=health, store=store,
        compression=compression, prefixes=prefixes, feedback=feedback, forwarder=forwarder,
        transport=transport, identity=identity, ops=ops, discovery=discovery, ingest=ingest,
        tenancy=tenancy,
        kv=kv, on_loaded=on_loaded,
    )  # fmt: skip

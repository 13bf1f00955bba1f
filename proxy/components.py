"""Every long-lived part of one ragtrim instance, built from settings in one place.

No globals: `build()` returns a `Components`; create_app and the LangChain
integration each own one. The request pipeline's order is the `stages` list here.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx

from cache.memo import ChunkMemo
from cache.prefixes import PrefixRegistry
from cache.store import KVStore, MemoryStore, RedisStore
from compressors.base import Compressor
from compressors.registry import build_compressor
from proxy.admission import Admission
from proxy.compression import CompressionEngine
from proxy.feedback import Feedback
from proxy.forward import Forwarder
from proxy.gate import CostGate
from proxy.metrics import Metrics
from proxy.pipeline import Pipeline
from proxy.prefill import PrefillScraper
from proxy.routing.affinity import PrefixAffinity
from proxy.routing.bounded import BoundedLoad
from proxy.routing.discovery import Discovery, make_resolver, split_backends
from proxy.routing.endpoint import EndpointPool
from proxy.routing.health import HealthChecker
from proxy.routing.load import LeastLoaded
from proxy.routing.router import Router, Weighted
from proxy.routing.scorers import RoundRobin
from proxy.settings import CompressionSettings, RoutingSettings, Settings, TimeoutSettings
from proxy.stages.canonicalize import CanonicalizeStage
from proxy.stages.compress import CompressStage
from proxy.stages.segment import SegmentStage
from proxy.stages.tenant import TenantStage
from proxy.tokens import TargetTokenCounter
from proxy.upstream.transport import AiohttpTransport, Transport
from proxy.warmup import Warmer

log = logging.getLogger("ragtrim")


@dataclass
class Components:
    settings: Settings
    metrics: Metrics
    pool: EndpointPool
    client: httpx.AsyncClient
    health: HealthChecker
    store: KVStore
    engine: CompressionEngine
    gate: CostGate
    prefixes: PrefixRegistry
    feedback: Feedback
    forwarder: Forwarder
    transport: Transport
    tenant: TenantStage
    discovery: Discovery | None = None
    _warming: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self.discovery is not None:
            await self.discovery.start()  # first look-up before the first health round
        await self.health.start()
        self._warming = asyncio.create_task(self._warm_engine())

    async def _warm_engine(self) -> None:
        try:
            await self.engine.warm(self.settings.compression.torch_threads)
        except Exception as exc:  # noqa: BLE001 - logged; requests fail open
            log.warning("compressor %s failed to load: %r", self.engine.name, exc)

    async def stop(self) -> None:
        if self._warming is not None:
            self._warming.cancel()
        if self.discovery is not None:
            await self.discovery.stop()
        await self.health.stop()
        await self.feedback.drain()
        await self.client.aclose()
        await self.transport.aclose()
        await self.store.aclose()
        self.engine.close()


def make_control_client(timeouts: TimeoutSettings) -> httpx.AsyncClient:
    """For health checks and warm-up (not the data plane): it never stores cookies."""
    timeout = httpx.Timeout(
        connect=timeouts.connect, read=None, write=timeouts.connect, pool=timeouts.connect
    )
    jar = CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))
    return httpx.AsyncClient(timeout=timeout, cookies=jar)


def make_store(settings: Settings, metrics: Metrics) -> KVStore:
    if not settings.redis_url:
        return MemoryStore()
    return RedisStore(
        settings.redis_url, on_error=lambda op, exc: metrics.store_errors.labels(op).inc()
    )


def make_engine(
    c: CompressionSettings, store: KVStore, counter, compressor: Compressor | None = None
) -> CompressionEngine:
    compressor = compressor or build_compressor(
        c.compressor, {"count_tokens": counter, "device": c.device, **c.options}
    )
    return CompressionEngine(
        compressor, ChunkMemo(store, c.memo_ttl), timeout=c.timeout, workers=c.workers,
        count=counter,
    )  # fmt: skip


def make_gate(c: CompressionSettings) -> CostGate:
    return CostGate(c.policy, compressor=c.compressor, min_context_tokens=c.min_context_tokens,
                    max_added_ms=c.max_added_ms)  # fmt: skip


def make_router(r: RoutingSettings) -> Router:
    if r.policy == "roundrobin":
        return Router([Weighted(RoundRobin(), 1.0)])
    scorers = [
        Weighted(PrefixAffinity(), r.affinity_weight),
        Weighted(LeastLoaded(), r.load_weight),
    ]
    return Router(scorers, BoundedLoad(r.epsilon))


def build(
    settings: Settings,
    *,
    transport: Transport | None = None,
    store: KVStore | None = None,
    compressor: Compressor | None = None,
) -> Components:
    metrics = Metrics()
    static_backends, dns_targets = split_backends(settings.backends)
    pool = EndpointPool.from_urls(static_backends)
    metrics.watch_pool(pool)
    transport = transport or AiohttpTransport(settings.timeouts.connect)
    client = make_control_client(settings.timeouts)
    store = store if store is not None else make_store(settings, metrics)
    c = settings.compression
    counter = TargetTokenCounter(pool, c.tokenizer)
    engine = make_engine(c, store, counter, compressor)
    gate = make_gate(c)
    tenant = TenantStage(settings.tenancy)
    stages = [  # THE pipeline order (canonicalize after compress: see its module)
        tenant,
        SegmentStage(c.patterns),
        CompressStage(engine, gate, metrics, c.rate if c.enabled else None, settings.log_prompts),
        CanonicalizeStage(settings.canonical, metrics),
    ]
    router = make_router(settings.routing)
    prefixes = PrefixRegistry(store)
    feedback = Feedback(metrics, gate, prefixes)
    if c.prefill_metrics:
        feedback.prefill = PrefillScraper(client, feedback.prefill_sample,
                                          min_interval=c.prefill_scrape_interval)  # fmt: skip
    pipeline = Pipeline(stages, metrics, settings.log_prompts)
    forwarder = Forwarder(pool, router, transport, settings.timeouts, pipeline,
                          metrics, feedback, Admission(settings.limits, metrics),
                          tenant.authenticate, settings.max_body_bytes, settings.health.panic,
                          settings.log_prompts)  # fmt: skip
    health = HealthChecker(pool, client, settings.health)
    health.on_healthy.append(Warmer(settings.warmup, pool, prefixes, client, metrics))
    discovery = None
    if dns_targets:  # joiners are health-checked at once; on_healthy warms them
        resolver = make_resolver(settings.discovery)
        discovery = Discovery(dns_targets, pool, resolver, settings.discovery, metrics,
                              health.check)  # fmt: skip
    return Components(
        settings=settings, metrics=metrics, pool=pool, client=client, health=health,
        store=store, engine=engine, gate=gate, prefixes=prefixes, feedback=feedback,
        forwarder=forwarder, transport=transport, tenant=tenant,
        discovery=discovery,
    )  # fmt: skip

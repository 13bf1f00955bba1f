"""Recipes for the parts that look after backends, for the composition root
(proxy/components.py): the static pool, the health loop with what a backend that turns
healthy gets, and DNS discovery."""

from __future__ import annotations

from proxy.backends.discovery import Discovery, DnsTarget, make_resolver, split_backends
from proxy.backends.endpoint import EndpointPool
from proxy.backends.health import HealthChecker, OnHealthy
from proxy.metrics import Metrics
from proxy.settings import Settings
from proxy.upstream.transport import Transport


def make_pool(settings: Settings, metrics: Metrics) -> tuple[EndpointPool, list[DnsTarget]]:
    """The static backends' pool (watched by the metrics) and the DNS names to discover."""
    static_backends, dns_targets = split_backends(settings.backends)
    pool = EndpointPool.from_urls(static_backends)
    metrics.watch_pool(pool)
    return pool, dns_targets


def make_health(settings: Settings, pool: EndpointPool, transport: Transport,
                warmer: OnHealthy, kv_warm: OnHealthy | None) -> HealthChecker:  # fmt: skip
    """The health loop, and what a backend that turns healthy gets: the warm-up replays
    and (KV events on) the chat tokenizer, loaded off the loop."""
    health = HealthChecker(pool, transport, settings.health)
    health.on_healthy.append(warmer)
    if kv_warm is not None:
        health.on_healthy.append(kv_warm)
    return health


def make_discovery(settings: Settings, dns_targets: list[DnsTarget], pool: EndpointPool,
                   metrics: Metrics, health: HealthChecker) -> Discovery | None:  # fmt: skip
    """DNS discovery of dns+http:// backends; joiners are health-checked at once, and
    the health checker's on_healthy hook warms them."""
    if not dns_targets:
        return None
    resolver = make_resolver(settings.discovery)
    return Discovery(dns_targets, pool, resolver, settings.discovery, metrics, health.check)

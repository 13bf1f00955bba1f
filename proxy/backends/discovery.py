"""Replica discovery: a backend given as `dns+http://name:port` is the DNS name of a
Kubernetes headless Service, resolved on an interval to its pods' addresses.

Why DNS: a headless Service (`clusterIP: None`) answers A/AAAA queries with one record
per ready pod, so the pod set is visible without RBAC or a Kubernetes client (the
vLLM production-stack router reads EndpointSlices instead, which needs a Role).
Source: kubernetes.io/docs/concepts/services-networking/dns-pod-service/.

Each refresh diffs the answer against the replicas this name brought before:
- a new address joins the pool unhealthy and is health-checked at once, so it takes
  traffic in the same refresh, and the health checker's `on_healthy` hook replays the
  hot prefixes it now owns (warm-up);
- a vanished address leaves the pool for new picks only; requests already relaying
  hold their Endpoint and finish on it. Everything else known about it goes with its
  record: the gate's samples, hit totals, the scrape cursor, its metric series
  (proxy/backends/endpoint.py, EndpointPool.remove);
- a failed look-up or an empty answer keeps the last good set (counted), so a DNS
  outage never empties the pool. Rendezvous hashing then moves only the keys of the
  replicas that joined or left (proxy/routing/affinity.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from proxy.backends.endpoint import Endpoint, EndpointPool
from proxy.metrics import Metrics
from proxy.settings import DiscoverySettings

log = logging.getLogger("ragtrim.discovery")
SCHEME_PREFIX = "dns+"
OnAdded = Callable[[Endpoint], Awaitable[None]]


class ResolveError(Exception):
    """The name could not be looked up (server unreachable, timeout, SERVFAIL)."""


@dataclass(frozen=True)
class DnsTarget:
    """`dns+http://vllm-headless.ns.svc:8000` split into what a look-up needs."""

    source: str
    scheme: str
    host: str
    port: int

    def url_for(self, address: str) -> str:
        host = f"[{address}]" if ipaddress.ip_address(address).version == 6 else address
        return f"{self.scheme}://{host}:{self.port}"


def parse_target(url: str) -> DnsTarget | None:
    """The DnsTarget of a `dns+http(s)://host:port` backend; None for a plain URL."""
    if not url.startswith(SCHEME_PREFIX):
        return None
    parts = urlsplit(url[len(SCHEME_PREFIX) :])
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url}: expected dns+http://name:port")
    if parts.path not in ("", "/"):
        raise ValueError(f"{url}: a discovered backend takes no path")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return DnsTarget(url, parts.scheme, parts.hostname, port)


def split_backends(urls: Sequence[str]) -> tuple[list[str], list[DnsTarget]]:
    """Static backend URLs and the DNS targets among `urls`, each in the given order."""
    static, targets = [], []
    for url in urls:
        target = parse_target(url)
        if target is None:
            static.append(url)
        else:
            targets.append(target)
    return static, targets


class Resolver(Protocol):
    async def resolve(self, host: str, port: int) -> list[str]:
        """Addresses of `host`; [] when the name has none; ResolveError when unknown."""
        ...


class SystemResolver:
    """The OS resolver (getaddrinfo: /etc/resolv.conf, search domains, ndots)."""

    async def resolve(self, host: str, port: int) -> list[str]:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            if exc.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", -5)):
                return []
            raise ResolveError(f"{host}: {exc}") from exc
        return sorted({info[4][0] for info in infos})


def parse_nameserver(value: str) -> tuple[str, int]:
    """`10.0.0.10`, `127.0.0.1:5353`, `[::1]:5353` → (address, port)."""
    if value.startswith("["):
        address, _, rest = value[1:].partition("]")
        return address, int(rest.lstrip(":") or 53)
    if value.count(":") == 1:
        address, port = value.split(":")
        return address, int(port)
    return value, 53


class NameserverResolver:
    """Asks one DNS server directly (dnspython), A and AAAA; no cache, no search list."""

    def __init__(self, nameserver: str, timeout: float):
        import dns.asyncresolver

        address, port = parse_nameserver(nameserver)
        self._resolver = dns.asyncresolver.Resolver(configure=False)
        self._resolver.nameservers = [address]
        self._resolver.port = port
        self._resolver.timeout = self._resolver.lifetime = timeout

    async def resolve(self, host: str, port: int) -> list[str]:
        import dns.exception
        import dns.resolver

        addresses: set[str] = set()
        errors: list[str] = []
        for rdtype in ("A", "AAAA"):
            try:
                answer = await self._resolver.resolve(host, rdtype, search=False)
            except (dns.resolver.NoAnswer, dns.resolver.NXDOMAIN):
                continue
            except dns.exception.DNSException as exc:
                errors.append(f"{rdtype}: {type(exc).__name__}: {exc}")
                continue
            addresses.update(record.address for record in answer)
        if errors and not addresses:  # one family answering is a good answer
            raise ResolveError(f"{host}: " + "; ".join(errors))
        return sorted(addresses)


def make_resolver(settings: DiscoverySettings) -> Resolver:
    if settings.nameserver:
        return NameserverResolver(settings.nameserver, settings.timeout_s)
    return SystemResolver()


class Discovery:
    """Keeps the pool's share of each DNS target equal to its last good answer."""

    def __init__(
        self,
        targets: Sequence[DnsTarget],
        pool: EndpointPool,
        resolver: Resolver,
        settings: DiscoverySettings,
        metrics: Metrics,
        on_added: OnAdded,
    ):
        self.targets = list(targets)
        self.pool = pool
        self.resolver = resolver
        self.settings = settings
        self.metrics = metrics
        self.on_added = on_added
        self.static = {ep.url for ep in pool.endpoints}
        self.owned: dict[DnsTarget, set[str]] = {t: set() for t in self.targets}
        self._task: asyncio.Task[None] | None = None

    async def refresh(self) -> None:
        await asyncio.gather(*(self._refresh(target) for target in self.targets))

    async def _lookup(self, target: DnsTarget) -> list[str] | None:
        """The answer, or None (counted) when the last good set must stay."""
        try:
            async with asyncio.timeout(self.settings.timeout_s):
                addresses = await self.resolver.resolve(target.host, target.port)
        except (ResolveError, TimeoutError, OSError) as exc:
            self.metrics.discovery_refreshes.labels(target.source, "error").inc()
            log.warning(
                "%s: look-up failed, keeping %d replicas: %s",
                target.source,
                len(self.owned[target]),
                exc,
            )
            return None
        if not addresses:
            self.metrics.discovery_refreshes.labels(target.source, "empty").inc()
            log.warning(
                "%s: no addresses, keeping %d replicas", target.source, len(self.owned[target])
            )
            return None
        self.metrics.discovery_refreshes.labels(target.source, "ok").inc()
        return addresses

    async def _refresh(self, target: DnsTarget) -> None:
        addresses = await self._lookup(target)
        if addresses is None:
            return
        urls = {target.url_for(address) for address in addresses}
        before = self.owned[target]
        self.owned[target] = urls
        wanted = self.static.union(*self.owned.values())
        for url in sorted(before - urls):
            if url not in wanted:
                self.pool.remove(url)
                self.metrics.discovery_changes.labels(target.source, "left").inc()
                log.info("%s: replica %s left", target.source, url)
        joined = [self.pool.add(url) for url in sorted(urls - before) if not self.pool.get(url)]
        for ep in joined:
            self.metrics.discovery_changes.labels(target.source, "joined").inc()
            log.info("%s: replica %s joined", target.source, ep.url)
        self.metrics.discovery_endpoints.labels(target.source).set(len(urls))
        await asyncio.gather(*(self.on_added(ep) for ep in joined))

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.interval_s)
            try:
                await self.refresh()
            except Exception:  # noqa: BLE001 - the next round tries again
                log.exception("discovery refresh failed")

    async def start(self) -> None:
        await self.refresh()
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

"""Discovery against a scripted resolver (the real-DNS test is tests/integration/
test_discovery.py): joins, leaves, outages, and what they do to routing."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest

from cache.prefixes import PrefixRegistry
from cache.store import MemoryStore
from proxy.backends.discovery import (
    Discovery,
    ResolveError,
    SystemResolver,
    parse_nameserver,
    parse_target,
    split_backends,
)
from proxy.backends.endpoint import Endpoint, EndpointPool
from proxy.backends.health import HealthChecker
from proxy.backends.warmup import Warmer
from proxy.context import RequestContext
from proxy.metrics import Metrics
from proxy.routing.affinity import PrefixAffinity
from proxy.routing.registry import build_router
from proxy.settings import (
    DiscoverySettings,
    HealthSettings,
    RoutingSettings,
    Settings,
    WarmupSettings,
)
from tests.support.compressor_doubles import HandlerTransport
from tests.support.rendezvous import rendezvous_order
from tests.support.resolvers import ScriptedResolver

TARGET = parse_target("dns+http://vllm-headless.ns.svc:8000")
KEYS = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(3000)]


def make(answer, static: list[str] | None = None, **settings):
    pool = EndpointPool.from_urls(static or [])
    added: list[Endpoint] = []

    async def on_added(ep: Endpoint) -> None:
        ep.healthy, ep.checked = True, True
        added.append(ep)

    resolver, metrics = ScriptedResolver(answer), Metrics()
    disc = Discovery([TARGET], pool, resolver, DiscoverySettings(**settings), metrics, on_added)
    return disc, pool, resolver, metrics, added


def urls(pool: EndpointPool) -> list[str]:
    return sorted(ep.url for ep in pool.endpoints)


def sample(metrics: Metrics, name: str, **labels) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


def test_parse_target_and_split():
    assert (TARGET.scheme, TARGET.host, TARGET.port) == ("http", "vllm-headless.ns.svc", 8000)
    assert parse_target("http://a:8000") is None
    assert parse_target("dns+https://v.ns").port == 443
    with pytest.raises(ValueError):
        parse_target("dns+ftp://v:1")
    with pytest.raises(ValueError):
        parse_target("dns+http://v:1/v1")
    static, targets = split_backends(["http://a:1", "dns+http://b:2", "http://c:3"])
    assert static == ["http://a:1", "http://c:3"] and [t.host for t in targets] == ["b"]


def test_urls_bracket_ipv6_and_nameserver_forms():
    assert TARGET.url_for("10.1.2.3") == "http://10.1.2.3:8000"
    assert TARGET.url_for("fd00::7") == "http://[fd00::7]:8000"
    assert parse_nameserver("10.96.0.10") == ("10.96.0.10", 53)
    assert parse_nameserver("127.0.0.1:5353") == ("127.0.0.1", 5353)
    assert parse_nameserver("[::1]:5353") == ("::1", 5353)


def test_settings_keep_dns_backends_and_read_discovery_env(monkeypatch):
    monkeypatch.setenv("RAGTRIM_DISCOVERY__NAMESERVER", "127.0.0.1:5353")
    monkeypatch.setenv("RAGTRIM_DISCOVERY__INTERVAL_S", "1.5")
    s = Settings(backends="dns+http://vllm-headless.ns.svc:8000,http://x:1")
    assert s.backends == ["dns+http://vllm-headless.ns.svc:8000", "http://x:1"]
    assert s.discovery.nameserver == "127.0.0.1:5353" and s.discovery.interval_s == 1.5


async def test_join_then_leave_drops_the_replica_for_new_picks_only():
    disc, pool, resolver, metrics, added = make(["10.0.0.1", "10.0.0.2"])
    await disc.refresh()
    assert urls(pool) == ["http://10.0.0.1:8000", "http://10.0.0.2:8000"]
    assert [ep.url for ep in added] == urls(pool)  # each joiner checked at once
    leaving = pool.get("http://10.0.0.2:8000")
    leaving.in_flight = 1  # a request is relaying to it
    resolver.answer = ["10.0.0.1", "10.0.0.3"]
    await disc.refresh()
    assert urls(pool) == ["http://10.0.0.1:8000", "http://10.0.0.3:8000"]
    assert leaving not in pool.endpoints and leaving.in_flight == 1
    leaving.in_flight -= 1  # the request finishes on the object it holds
    assert sample(metrics, "ragtrim_discovery_changes_total", target=TARGET.source,
                  change="left") == 1  # fmt: skip
    assert sample(metrics, "ragtrim_discovery_endpoints", target=TARGET.source) == 2


@pytest.mark.parametrize("failure", [ResolveError("SERVFAIL"), TimeoutError(), []])
async def test_outage_or_empty_answer_keeps_the_last_good_set(failure):
    disc, pool, resolver, metrics, _ = make(["10.0.0.1", "10.0.0.2"])
    await disc.refresh()
    before = list(pool.endpoints)
    resolver.answer = failure
    await disc.refresh()
    await disc.refresh()
    assert pool.endpoints == before and len(pool.healthy()) == 2
    result = "empty" if failure == [] else "error"
    assert sample(metrics, "ragtrim_discovery_refreshes_total", target=TARGET.source,
                  result=result) == 2  # fmt: skip
    resolver.answer = ["10.0.0.2"]
    await disc.refresh()  # DNS back: the answer rules again
    assert urls(pool) == ["http://10.0.0.2:8000"]


async def test_a_slow_resolver_counts_as_an_outage():
    class Hanging:
        async def resolve(self, host, port):
            await asyncio.sleep(10)

    disc, pool, _, metrics, _ = make(["10.0.0.1"], timeout_s=0.05)
    await disc.refresh()
    disc.resolver = Hanging()
    await disc.refresh()
    assert urls(pool) == ["http://10.0.0.1:8000"]
    assert sample(metrics, "ragtrim_discovery_refreshes_total", target=TARGET.source,
                  result="error") == 1  # fmt: skip


async def test_static_backend_survives_a_dns_answer_that_drops_it():
    disc, pool, resolver, _, added = make(["10.0.0.9"], static=["http://10.0.0.9:8000"])
    await disc.refresh()
    assert urls(pool) == ["http://10.0.0.9:8000"] and added == []  # already known
    resolver.answer = ["10.0.0.1"]
    await disc.refresh()
    assert urls(pool) == ["http://10.0.0.1:8000", "http://10.0.0.9:8000"]


def owners(pool: EndpointPool) -> dict[str, str]:
    scorer = PrefixAffinity()
    out = {}
    for key in KEYS:
        ctx = RequestContext("r", "chat", b"", {"model": "m"}, {}, prefix_key=key)
        scores = scorer.score(ctx, pool.healthy())
        out[key] = max(scores, key=scores.get).url
    return out


async def test_rendezvous_moves_only_the_keys_of_the_replica_that_joined_or_left():
    disc, pool, resolver, _, _ = make(["10.0.0.1", "10.0.0.2", "10.0.0.3"])
    await disc.refresh()
    before = owners(pool)
    resolver.answer = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]
    await disc.refresh()
    joined = owners(pool)
    moved = [k for k in KEYS if joined[k] != before[k]]
    assert 0.15 <= len(moved) / len(KEYS) <= 0.35  # about 1/4
    assert {joined[k] for k in moved} == {"http://10.0.0.4:8000"}
    resolver.answer = ["10.0.0.1", "10.0.0.3", "10.0.0.4"]
    await disc.refresh()
    left = owners(pool)
    moved = [k for k in KEYS if left[k] != joined[k]]
    assert moved and {joined[k] for k in moved} == {"http://10.0.0.2:8000"}


async def test_system_resolver_reads_the_hosts_file():
    assert "127.0.0.1" in await SystemResolver().resolve("localhost", 80)
    assert await SystemResolver().resolve("no-such-host.invalid", 80) == []


async def test_a_joining_replica_gets_the_warmup_replays_it_owns():
    replays: list[tuple[str, str]] = []

    async def backend(method, url, headers, body):
        if url.endswith("/v1/models"):
            return 200, json.dumps({"data": [{"id": "m"}]}).encode()
        replays.append((url.split("/v1/")[0], json.loads(body)["messages"][0]["content"]))
        return 200, b'{"choices": []}'

    prefixes = PrefixRegistry(MemoryStore())
    keys = KEYS[:40]
    for key in keys:
        await prefixes.record(key, model="m", replica="x", prompt_tokens=1, cached_tokens=0)
        body = {"model": "m", "messages": [{"role": "system", "content": key}], "max_tokens": 1}
        await prefixes.remember_replay(key, body)
    pool, metrics, transport = EndpointPool(), Metrics(), HandlerTransport(backend)
    health = HealthChecker(pool, transport, HealthSettings())
    router = build_router(RoutingSettings(), metrics, panic=True)
    warmer = Warmer(WarmupSettings(top_n=64), pool, prefixes, transport, metrics, router)
    health.on_healthy.append(warmer)
    resolver = ScriptedResolver(["10.0.0.1", "10.0.0.2", "10.0.0.3"])
    disc = Discovery([TARGET], pool, resolver, DiscoverySettings(), metrics, health.check)
    await disc.refresh()
    await asyncio.gather(*health._spawned)
    replays.clear()
    resolver.answer = [*resolver.answer, "10.0.0.4"]
    await disc.refresh()
    await asyncio.gather(*health._spawned)
    new = "http://10.0.0.4:8000"
    owned = {k for k in keys if rendezvous_order(k, [ep.url for ep in pool.endpoints])[0] == new}
    assert owned and {k for url, k in replays if url == new} == owned
    assert all(url == new for url, _ in replays)  # the others are not re-warmed

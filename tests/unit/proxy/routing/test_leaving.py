"""Issue 21: a pod that leaves discovery leaves no state behind. Everything ragtrim
knew about it (pool entry, the gate's prefill law and queue readings, hit totals, the
scrape cursor and a read in progress, every Prometheus series labelled with it) goes
with its record, and the cost gate decides as if it had never been there."""

from __future__ import annotations

import asyncio

from cache.prefixes import PrefixRegistry
from cache.store import MemoryStore
from proxy.backends.discovery import Discovery, parse_target
from proxy.backends.endpoint import Endpoint, EndpointPool
from proxy.backends.scrape import MetricsScraper
from proxy.context import RequestContext
from proxy.gate.decide import CostGate
from proxy.metrics import Metrics
from proxy.outcome.decision import Why
from proxy.response.feedback import Feedback
from proxy.settings import DiscoverySettings
from tests.support.compressor_doubles import HandlerTransport
from tests.support.resolvers import ScriptedResolver

TARGET = parse_target("dns+http://vllm-headless.ns.svc:8000")
SLOW, FAST = "http://10.0.0.1:8000", "http://10.0.0.2:8000"
# one request of 2000 computed tokens each: 1 ms per token on SLOW, 0.03 on FAST
PREFILL_S, WAITING = {SLOW: 2.0, FAST: 0.06}, {SLOW: 5, FAST: 0}


def vllm_page(url: str) -> bytes:
    return f"""vllm:request_prefill_time_seconds_sum{{engine="0"}} {PREFILL_S[url]}
vllm:request_prefill_time_seconds_count{{engine="0"}} 1.0
vllm:request_prefill_kv_computed_tokens_sum{{engine="0"}} 2000.0
vllm:request_prefill_kv_computed_tokens_count{{engine="0"}} 1.0
vllm:num_requests_waiting{{engine="0"}} {WAITING[url]}
vllm:num_requests_running{{engine="0"}} 1
""".encode()


class Fleet:
    """Two discovered pods and every per-backend part, wired as components.build does."""

    def __init__(self) -> None:
        self.stalled = asyncio.Event()  # set: the next /metrics read never answers
        self.metrics, self.pool = Metrics(), EndpointPool()
        self.metrics.watch_pool(self.pool)
        self.gate = CostGate("auto", prior_ms_per_1k=120.0, min_context_tokens=0,
                             max_added_ms=1e6, pool=self.pool)  # fmt: skip
        self.scraper = MetricsScraper(self.pool, HandlerTransport(self.answer), self.metrics,
                                      min_interval=0.0)  # fmt: skip
        self.feedback = Feedback(self.metrics, self.gate, PrefixRegistry(MemoryStore()),
                                 prefill=self.scraper)  # fmt: skip
        self.resolver = ScriptedResolver(["10.0.0.1", "10.0.0.2"])
        self.discovery = Discovery([TARGET], self.pool, self.resolver, DiscoverySettings(),
                                   self.metrics, self.joined)  # fmt: skip

    async def joined(self, ep: Endpoint) -> None:
        ep.check_passed(({"id": "m"},))

    async def answer(self, method, url, headers, body):
        if self.stalled.is_set():
            await asyncio.sleep(3600)
        return 200, vllm_page(url.removesuffix("/metrics"))

    async def traffic(self, url: str) -> None:
        """What one answered request leaves: feedback, a scrape, the exchange's series."""
        ctx = RequestContext(request_id="r", route="chat", raw=b"{}", body={}, headers={})
        usage = {"prompt_tokens": 2100, "prompt_tokens_details": {"cached_tokens": 100}}
        self.feedback.observe(ctx, url, usage, ttft_ms=None)
        await self.scraper.scrape(self.pool.get(url))
        m = self.metrics
        m.upstream_ttft.labels(url).observe(0.1)
        m.upstream_tpot.labels(url).observe(0.01)
        m.upstream_errors.labels(url, "timeout").inc()
        m.upstream_bad_responses.labels(url, "status").inc()
        m.upstream_bad_usage.labels(url).inc()
        m.route_spills.labels(url).inc()


def decide(gate: CostGate):
    return gate.decide(context_tokens=2000, cached_docs=0, total_docs=4, rate=0.33)


async def test_a_pod_that_leaves_discovery_leaves_no_state_behind():
    fleet = Fleet()
    await fleet.discovery.refresh()
    for url in (SLOW, FAST):
        await fleet.traffic(url)
    fast = fleet.pool.get(FAST)
    assert fast.prefill.value() is not None and fast.queue and fast.prompt_tokens == 2100
    assert FAST in fleet.metrics.render().decode()
    # with FAST in the pool: 0.03 ms a token saves 40 ms, compressing costs 240: skip
    assert decide(fleet.gate).why is Why.NOT_WORTH_IT
    fleet.stalled.set()
    fleet.scraper.poke(FAST)  # a read of FAST in progress when it leaves
    await asyncio.sleep(0.01)
    reading = fast.scrape.task
    assert reading is not None and not reading.done()

    fleet.resolver.answer = ["10.0.0.1"]
    await fleet.discovery.refresh()
    await asyncio.sleep(0)

    assert [ep.url for ep in fleet.pool.endpoints] == [SLOW]
    assert reading.cancelled()
    rendered = fleet.metrics.render().decode()
    assert FAST not in rendered and SLOW in rendered  # every series labelled FAST is gone
    # the gate: SLOW's 1 ms a token and its queue of 5 decide alone now
    assert fleet.gate.prefill_ms_per_token() == 1.0 and fleet.gate.queue.waiting() == 5
    assert decide(fleet.gate).action == "compress"
    # an answer from FAST that was still relaying reports afterwards: nothing comes back
    fleet.stalled.clear()
    ctx = RequestContext(request_id="late", route="chat", raw=b"{}", body={}, headers={})
    fleet.feedback.observe(ctx, FAST, {"prompt_tokens": 10}, ttft_ms=50.0)
    fleet.gate.observe_prefill(FAST, 2000, 60.0)
    fleet.scraper.poke(FAST)  # a scrape ended after it left writes into no record (scrape)
    assert FAST not in fleet.metrics.render().decode()
    assert fleet.gate.prefill_ms_per_token() == 1.0 and fleet.gate.queue.waiting() == 5
    assert fleet.pool.get(FAST) is None and fast.scrape.task is None  # no new read for it
    await fleet.feedback.drain()


async def test_a_pod_that_rejoins_starts_from_a_clean_record():
    fleet = Fleet()
    await fleet.discovery.refresh()
    await fleet.traffic(FAST)
    fleet.resolver.answer = ["10.0.0.1"]
    await fleet.discovery.refresh()
    fleet.resolver.answer = ["10.0.0.1", "10.0.0.2"]
    await fleet.discovery.refresh()
    back = fleet.pool.get(FAST)
    assert back.prefill.value() is None and not back.queue and back.prompt_tokens == 0
    assert back.scrape.last is None and back.in_flight == 0
    await fleet.feedback.drain()

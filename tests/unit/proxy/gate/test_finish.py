"""The gate charges a compression's work after its job (issue 43, item 6): the merge, the
stored form's settling and growth, the blocks of what is sent. Learned per tenant from
what compressing requests spent (CompressionService.decide_and_run), added to the cost."""

from tests.unit.proxy.gate.test_seen import gate


def cost_of(decision) -> float:
    return round(decision.figures.cost_ms)


def test_a_measured_finish_is_added_to_the_cost_for_its_tenant_only():
    g = gate()
    ask = {"context_tokens": 2000, "cached_docs": 0, "total_docs": 4, "rate": 0.33,
           "seen_docs": 4}  # fmt: skip
    before = g.decide(**ask, tenant="a")
    assert g.finish_ms(2000, "a") == 0.0  # nothing measured: nothing charged
    for tokens, ms in [(1000, 6.0), (2000, 11.0), (4000, 21.0)] * 3:
        g.observe_finish(ms, tokens, "a")
    assert abs(g.finish_ms(2000, "a") - 11.0) < 0.5
    after = g.decide(**ask, tenant="a")
    assert cost_of(after) - cost_of(before) in (10.0, 11.0, 12.0)
    assert cost_of(g.decide(**ask, tenant="b")) == cost_of(before)  # another tenant's own


def test_the_finish_law_is_exported_for_the_default_tenant():
    from proxy.gate.exported import GateLawCollector

    g = gate()
    for tokens, ms in [(1000, 1.0), (2000, 1.5), (4000, 2.5)] * 3:
        g.observe_finish(ms, tokens)
    rate, fixed = GateLawCollector(g).laws()["finish"]
    assert abs(rate - 0.5) < 0.01 and abs(fixed - 0.5) < 0.01


def test_a_compressing_request_teaches_its_finish():
    """Through the service, with a real engine: the time after the job is observed."""
    import asyncio

    from cache.memo import ChunkMemo
    from cache.store import MemoryStore
    from proxy.backends.endpoint import EndpointPool
    from proxy.compression.engine import CompressionEngine
    from proxy.compression.service import CompressionService
    from proxy.gate.decide import CostGate
    from proxy.metrics import Metrics
    from proxy.outcome.request import RequestOutcome
    from proxy.settings import CompressionLimitSettings
    from tests.support.compressor_doubles import HalfWords

    class Ctx:
        tenant = "acme"
        outcome = RequestOutcome()

    engine = CompressionEngine(HalfWords(), ChunkMemo(MemoryStore()), timeout=5, workers=1)
    g = CostGate("always", prior_ms_per_1k=10.0, min_context_tokens=0, max_added_ms=1e4,
                 pool=EndpointPool())  # fmt: skip
    service = CompressionService(engine, g, Metrics(), False, CompressionLimitSettings())
    docs = ["Paris is the capital of France. " * 20, "The Seine flows through Paris. " * 20]
    out = asyncio.run(service.decide_and_run(Ctx(), docs, "What is the capital?", 0.5))
    assert out != docs  # compressed
    assert len(g.laws.get("acme").finish.samples) == 1 and not g.laws.get("").finish.samples

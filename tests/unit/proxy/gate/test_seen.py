"""The gate prices a request's real mix (issue 18): memo hits free, seen documents at the
seen rate, unseen at the cold rate, all scaled by the compressions in flight per core."""

from proxy.backends.endpoint import EndpointPool
from proxy.gate.decide import CostGate
from tests.support.jobs import job


def Out(tokens_before: int, hits: int, misses: int, **fields):  # noqa: N802
    return job(tokens_before, hits=hits, misses=misses, **fields)


def gate(**kw) -> CostGate:
    args = {"prior_ms_per_1k": 10.0, "min_context_tokens": 0, "max_added_ms": 1e9,
            "prior_prefill_ms_per_token": 0.03, "prior_seen_ms_per_1k": 1.0,
            "cores": 2, "pool": EndpointPool()}  # fmt: skip
    return CostGate("auto", **{**args, **kw})


def test_seen_documents_make_compression_pay_where_cold_does_not():
    g = gate()
    # 2000 tokens at 0.03 ms/token, keep 0.33: saves ~40 ms; cold costs 20 ms, seen 2
    cold = g.decide(context_tokens=2000, cached_docs=0, total_docs=4, rate=0.33)
    seen = g.decide(context_tokens=2000, cached_docs=0, total_docs=4, rate=0.33, seen_docs=4)
    assert g.work_ms(2000, 0, 4, 4) == 2.0 and g.work_ms(2000, 0, 0, 4) == 20.0
    assert g.work_ms(2000, 0, 2, 4) == 11.0 and g.work_ms(2000, 2, 2, 4) == 1.0
    assert cold.action == "compress" and seen.action == "compress"
    g = gate(prior_prefill_ms_per_token=0.012)  # saves ~16 ms: only the seen mix pays
    assert g.decide(context_tokens=2000, cached_docs=0, total_docs=4, rate=0.33).action == "skip"
    assert g.decide(context_tokens=2000, cached_docs=0, total_docs=4, rate=0.33,
                    seen_docs=4).action == "compress"  # fmt: skip


def test_contention_scales_the_cost_and_is_divided_out_of_samples():
    g = gate()
    assert g.contention(1) == g.contention(2) == 1.0 and g.contention(4) == 2.0
    assert g.work_ms(2000, 0, 0, 4, in_flight=4) == 40.0
    ask = {"context_tokens": 2000, "cached_docs": 0, "total_docs": 4, "rate": 0.4}
    assert g.decide(**ask).action == "compress"  # 20 ms of work < 36 ms saved
    assert g.decide(**ask, in_flight=4).action == "skip"  # 40 ms under contention
    g.observe_compression(Out(1000, 0, 2, work_ms=16.0, in_flight=4))  # 8 ms solo
    assert abs(g.compressor_ms_per_token() - 0.008) < 1e-12
    g.observe_compression(Out(1000, 0, 2, work_ms=0.5, seen=2))  # all seen: the seen rate
    assert g.seen_ms_per_token() == 0.0005
    g.observe_compression(Out(1000, 0, 2, work_ms=4.5, seen=1))  # 4 ms of it the cold half
    g.observe_compression(Out(1000, 0, 2, work_ms=4.5, seen=1))
    # seen parts of 1000, 500, 500 tokens each took 0.5 ms: a fixed cost, none per token
    assert g.laws.get("").seen.fixed_ms == 0.5 and g.seen_ms_per_token() == 0.0
    assert g.work_ms(2000, 0, 4, 4) == 0.5
    assert abs(g.compressor_ms_per_token() - 0.008) < 1e-12  # a mix never moves the cold rate


def test_seen_rate_never_above_cold():
    g = gate(prior_seen_ms_per_1k=50.0)
    assert g.seen_ms_per_token() == g.compressor_ms_per_token() == 0.01

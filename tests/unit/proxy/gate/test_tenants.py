"""The gate's job laws learn what no request can inflate, per tenant (issue 33).

A job's sample is its context's cost: the question's part, timed by the compressor
(`question_ms`), is taken out; the tokens are the compressor's own count of the
documents it compressed (`fresh_tokens`), memo hits excluded. Each tenant's jobs price
its own requests; a tenant without fresh ones is priced by the calibration runs' law,
then the prior."""

import pytest

from proxy.backends.endpoint import EndpointPool
from proxy.gate.decide import CostGate
from proxy.gate.learning import PerTenant
from tests.support.jobs import job

Out = job  # a cold job over 4 documents


def gate() -> CostGate:
    return CostGate("auto", prior_ms_per_1k=10.0, min_context_tokens=0, max_added_ms=1e9,
                    prior_prefill_ms_per_token=0.1, pool=EndpointPool())  # fmt: skip


def test_the_questions_part_is_not_the_contexts_cost():
    g = gate()
    for tokens in (500, 1000, 2000):  # 2 ms + 0.005 ms per token, and a 300 ms question
        g.observe_compression(Out(tokens, ms=302 + 0.005 * tokens, question_ms=300), "a")
    assert g.laws.get("a").cold.fixed_ms == pytest.approx(2)
    assert g.compressor_ms_per_token("a") == pytest.approx(0.005)


def test_memo_hits_teach_nothing_and_the_compressors_count_prices_the_rest():
    g = gate()
    g.observe_compression(Out(4000, ms=0.5, hits=4, misses=0), "a")  # all hits: no job
    assert g.laws.get("a").cold.per_token is None
    # 3 hits of 3,000 tokens and one fresh document of 500: its 5 ms are 500 tokens' cost
    g.observe_compression(Out(3500, ms=5.0, hits=3, misses=1, fresh_tokens=500), "a")
    assert g.compressor_ms_per_token("a") == pytest.approx(0.01)


def test_one_tenants_jobs_never_price_another():
    g = gate()
    for tokens in (500, 1000, 2000):
        g.observe_compression(Out(tokens, ms=tokens * 1.0), "acme")  # 1 ms per token
    assert g.compressor_ms_per_token("acme") == pytest.approx(1.0)
    assert g.compressor_ms_per_token("globex") == pytest.approx(0.01)  # the prior
    ask = {"context_tokens": 2000, "cached_docs": 0, "total_docs": 4, "rate": 0.5}
    assert g.decide(**ask, tenant="acme").action == "skip"
    assert g.decide(**ask, tenant="globex").action == "compress"


def test_a_tenant_without_fresh_jobs_is_priced_by_the_calibration_runs():
    g = gate()
    g.observe_calibration(Out(450, ms=9.0))  # 0.02 ms per token, measured by the proxy
    assert g.compressor_ms_per_token("anyone") == pytest.approx(0.02)
    g.observe_compression(Out(1000, ms=5.0), "anyone")
    assert g.compressor_ms_per_token("anyone") == pytest.approx(0.005)  # its own, once fresh


def test_per_tenant_records_are_bounded():
    made = PerTenant(list, limit=2)
    first = made.get("a")
    made.get("b")
    made.get("a")  # used: "b" is now the least recently used
    made.get("c")
    assert len(made) == 2 and made.get("a") is first

"""The gate prices a compression job's fixed part (proxy/gate/job_cost.py): a small context at
GPU speed does not pay for the hand-off, splitting and splicing every job costs, while a
big one still does. Measured by the issue-18 rerun: a 450–650-token job took 19 ms where
a per-token rate predicted ~7."""

import pytest

from proxy.backends.endpoint import EndpointPool
from proxy.gate.decide import CostGate
from tests.support.jobs import job

Out = job  # a cold job over 4 documents


def gate() -> CostGate:
    return CostGate("auto", prior_ms_per_1k=10.0, min_context_tokens=0, max_added_ms=1e9,
                    prior_prefill_ms_per_token=0.03, cores=2, pool=EndpointPool())  # fmt: skip


def learned() -> CostGate:
    g = gate()
    for tokens in (450, 1000, 2000, 3600):  # 12 ms per job + 3 ms per 1k cold tokens
        g.observe_compression(Out(tokens, ms=12 + 0.003 * tokens, work_ms=0.003 * tokens))
    return g


def decide(g: CostGate, tokens: int, **kw):
    return g.decide(context_tokens=tokens, cached_docs=0, total_docs=4, rate=0.33, **kw)


def test_a_small_context_skips_a_big_one_compresses():
    g = learned()
    assert g.laws.get("").cold.fixed_ms == pytest.approx(12) and g.compressor_ms_per_token() == (
        pytest.approx(0.003)
    )
    small = decide(g, 550)  # saves 550 × 0.67 × 0.03 ≈ 11 ms, costs 12 + 1.65
    assert small.action == "skip" and round(small.figures.fixed_ms) == 12, small
    big = decide(g, 3000)  # saves ≈ 60 ms, costs 21
    assert big.action == "compress" and round(big.figures.fixed_ms) == 12, big


def test_what_a_job_added_is_learned_not_only_its_worker_time():
    g = gate()
    g.observe_compression(Out(1000, ms=20.0, work_ms=8.0, wait_ms=5.0))  # 15 ms added
    assert g.compressor_ms_per_token() == pytest.approx(0.015)
    g = gate()
    g.observe_compression(Out(1000, ms=0.0, work_ms=8.0))  # a double with worker time only
    assert g.compressor_ms_per_token() == pytest.approx(0.008)


def test_fixed_part_is_scaled_by_contention_and_absent_without_a_job():
    g = learned()
    solo = g.work_ms(2000, 0, 0, 4)
    assert solo == pytest.approx(18) and g.work_ms(2000, 0, 0, 4, in_flight=4) == (
        pytest.approx(36)
    )
    assert g.work_ms(2000, 4, 0, 4) == 0.0  # all in the memo: no job, no fixed part
    assert not g.decide(context_tokens=2000, cached_docs=4, total_docs=4,
                        rate=0.33).figures.fixed_ms  # fmt: skip


def test_seen_jobs_learn_their_own_fixed_part_and_never_cost_more_than_cold():
    g = learned()
    for tokens in (500, 1000, 2000):  # all seen: 2 ms per job + 0.5 ms per 1k
        g.observe_compression(Out(tokens, ms=2 + 0.0005 * tokens, seen=4))
    assert g.laws.get("").seen.fixed_ms == pytest.approx(2) and g.seen_ms_per_token() == (
        pytest.approx(0.0005)
    )
    assert g.work_ms(2000, 0, 4, 4) == pytest.approx(3)
    assert g.work_ms(2000, 0, 2, 4) == pytest.approx(2 + 0.5 + 3)  # seen half + cold half
    assert decide(g, 550, seen_docs=4).action == "compress"  # 2.3 ms against ~11 saved
    dear = learned()  # a seen law dearer than cold: the cold price holds
    for tokens in (500, 1000, 2000):
        dear.observe_compression(Out(tokens, ms=45 + 0.0005 * tokens, seen=4))
    assert dear.laws.get("").seen.fixed_ms == pytest.approx(45)
    assert dear.work_ms(2000, 0, 4, 4) == pytest.approx(18)

"""bench.load's parts: the reuse mix and Poisson schedule, the open-loop generator
against the step-loop simulator, and the levels/ratios it reports."""

from __future__ import annotations

import asyncio
import random
import statistics

from bench.lib.load_report import crossing, headline, held
from bench.lib.load_run import Row, closed_loop, level_figures, open_loop
from bench.lib.load_workload import Arrival, draw, poisson, question_variants, reuse_share
from bench.lib.squad import RagCase
from tests.doubles.sched_sim import Scheduler, SchedVllm, StepLaw
from tests.support.servers import serving


def case(k: int) -> RagCase:
    docs = tuple(f"doc {k}.{j} " + "word " * 40 for j in range(3))
    return RagCase(f"q{k}?", ("word",), docs[0], docs, f"c{k}", titles=("a", "b", "c"))


POOL = [[case(k)] for k in range(20)]


def test_zipf_draws_are_skewed_deterministic_and_reuse_documents():
    a = draw(POOL, 400, random.Random(1), zipf=1.0)
    assert a == draw(POOL, 400, random.Random(1), zipf=1.0)
    top = sum(x.case.case_id == "c0" for x in a) / len(a)
    assert 0.15 < top < 0.4  # 1/H_20 ≈ 0.28
    assert 0.9 < reuse_share(a) < 1  # 20 topics in 400 requests
    uniform = draw(POOL, 400, random.Random(1), zipf=0.0)
    assert sum(x.case.case_id == "c0" for x in uniform) / 400 < 0.1


def test_other_questions_keep_the_documents_in_another_order():
    base = case(1)
    qas = {base.gold: (("1", "other question?", ("word",)), ("2", "no answer?", ("zebra",)))}
    variants = question_variants(base, qas)
    assert [v.question for v in variants] == ["q1?", "other question?"]  # "zebra" not in gold
    moved = variants[1]
    assert set(moved.documents) == set(base.documents) and moved.gold == base.gold
    assert dict(zip(moved.documents, moved.titles, strict=True)) == dict(
        zip(base.documents, base.titles, strict=True)
    )


def test_poisson_schedule_has_the_offered_rate():
    arrivals = [Arrival(0.0, case(0), "llamaindex")] * 2000
    timed = poisson(arrivals, 50.0, random.Random(2))
    gaps = [b.at - a.at for a, b in zip(timed, timed[1:], strict=False)]
    assert timed[0].at == 0 and abs(statistics.mean(gaps) - 0.02) < 0.002


def row(ttft, error="", decision="compress:auto", at=1.0) -> Row:
    return Row(ttft_ms=ttft, error=error, decision=decision, done_at=at)


def test_level_figures_and_held_levels():
    rows = [row(100.0 + i, at=i / 10) for i in range(10)] + [row(None, error="http 502")]
    f = level_figures(rows, offered=10.0, slo_ms=105.0)
    assert f["errors"] == 1 and not f["meets_slo"]  # a failed request fails the level
    assert f["ttft_p50_ms"] == 104.0 and f["goodput_rps"] == round(6 / 0.9, 3)
    ok = level_figures(rows[:10], offered=10.0, slo_ms=200.0)
    assert ok["meets_slo"] and ok["compressed_share"] == 1.0

    def level(m, d, r):
        fig = {"meets_slo": True, "ttft_p50_ms": 1.0, "ttft_p90_ms": 2.0, "errors": 0}
        return {"multiple": m, "direct": {**fig, "meets_slo": d},
                "ragtrim": {**fig, "meets_slo": r, "gold_retention": 1.0}}  # fmt: skip

    levels = [level(0.25, True, True), level(0.5, True, True), level(0.8, False, True),
              level(1.0, True, True), level(1.5, False, False),
              level(2.0, False, True)]  # fmt: skip
    assert held(levels, "direct") == 0.5  # 1.0 held again, but 0.8 was not
    assert held(levels, "ragtrim") == 1.0
    h = headline(levels, slo_ms=3.0)
    assert h["capacity_ratio"] == 2.0 and h["p90_ratio_at_0.8"] == 1.0 and h["errors"] == 0


def test_open_loop_measures_queueing_on_the_simulator():
    law = StepLaw(per_prefill_token_ms=0.2, base_ms=2.0, per_seq_ms=0.0, max_num_batched_tokens=256)

    def body(k: int) -> dict:  # distinct first words: no prefix-cache hits between them
        return {"model": "m", "max_tokens": 2, "stream": True,
                "messages": [{"role": "user", "content": f"r{k} " + "word " * 200}]}  # fmt: skip

    with serving(SchedVllm("m", Scheduler(law))) as stub:
        alone = asyncio.run(open_loop(stub.url, [(0.0, body(0))], 10))[0]
        burst = asyncio.run(open_loop(stub.url, [(0.0, body(k)) for k in range(1, 7)], 10))
        rps = asyncio.run(closed_loop(stub.url, [body(k) for k in range(10, 22)], 4, 10))
    assert not alone.error and alone.ttft_ms >= 40  # ~210 tokens at 0.2 ms
    assert max(r.ttft_ms for r in burst) > 3 * alone.ttft_ms  # the last waits behind five
    assert 5 < rps < 25  # ~one 256-token step of ~53 ms per request


def test_crossing_interpolates_where_p90_meets_the_slo():
    def level(m, p90, errors=0):
        figures = {"meets_slo": p90 <= 100 and not errors, "ttft_p90_ms": p90, "errors": errors}
        return {"multiple": m, "direct": figures}

    levels = [level(0.25, 50), level(0.5, 80), level(1.0, 320)]
    assert crossing(levels, "direct", 100.0) == round(0.5 + 0.5 * 0.16096, 3)  # log 1.25 / log 4
    failed = [level(0.25, 50), level(0.5, 80), level(1.0, 90, errors=1)]
    assert crossing(failed, "direct", 100.0) == 0.5  # a level lost to errors is not interpolated
    assert crossing([level(0.25, 500)], "direct", 100.0) == 0.0

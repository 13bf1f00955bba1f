"""bench.load's traffic (bench/lib/load_workload.py): the Zipf reuse mix, other questions
on the same documents, and the Poisson schedule at the offered rate."""

from __future__ import annotations

import random
import statistics

from bench.lib.load_workload import Arrival, draw, poisson, question_variants, reuse_share
from bench.lib.squad import RagCase


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

"""bench.ttft_sim's reuse regime: Zipf-popular documents, no question ever repeats."""

from collections import Counter

from bench.lib.reuse_workload import ReuseDraw
from compressors import ApproxTokenCounter


def test_popular_chunks_repeat_questions_never_do():
    draw = ReuseDraw(seed=3, count=ApproxTokenCounter(), corpus=300)
    cases = [draw.request(min_tokens=600) for _ in range(120)]
    questions = [c.question for c in cases]
    assert len(set(zip(questions, [c.gold for c in cases], strict=True))) == len(cases)
    docs = Counter(d for c in cases for d in c.documents)
    top = draw.chunks[0].text  # rank 1: the most popular chunk
    assert docs[top] == max(docs.values()) and docs[top] > 30  # in most requests
    assert len(docs) < 300  # the tail is rarely (if ever) retrieved
    for c in cases:
        assert c.gold in c.documents and len(set(c.documents)) == len(c.documents)
        assert sum(ApproxTokenCounter()(d) for d in c.documents) >= 600 or len(c.documents) == 24
    again = ReuseDraw(seed=3, count=ApproxTokenCounter(), corpus=300)
    assert [again.request(min_tokens=600) for _ in range(5)] == cases[:5]  # seeded

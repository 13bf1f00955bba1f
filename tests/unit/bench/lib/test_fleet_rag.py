"""bench.fleet's RAG regime: Zipf-popular documents, a new question each time."""

import itertools
import random
from collections import Counter

from bench.lib.fleet_rag import rag, zipf_draw
from bench.lib.squad import Paragraph


def _corpus(n: int) -> list[Paragraph]:
    return [Paragraph(f"T{i}", f"Document {i} says fact {i}.",
                      tuple((f"q{i}-{j}", f"What does {i} say, part {j}?", (f"fact {i}",))
                            for j in range(2)))
            for i in range(n)]  # fmt: skip


def test_zipf_draw_gives_distinct_ranks_and_favours_the_popular():
    cumulative = list(itertools.accumulate(1 / (r + 1) for r in range(100)))
    rng = random.Random(3)
    draws = [zipf_draw(rng, cumulative, 5) for _ in range(2000)]
    assert all(len(set(d)) == 5 for d in draws)
    first = Counter(d[0] for d in draws)
    assert first[0] > 1.5 * first[1] and first[0] > 10 * first[50]  # weight 1/(r+1)
    assert sorted(zipf_draw(rng, cumulative[:3], 5)) == [0, 1, 2]  # k above the corpus


def test_each_request_holds_k_documents_and_asks_the_first_ones_question():
    corpus = _corpus(40)
    schedule = rag(corpus, rate=50.0, duration=2.0, k=4, seed=1)
    assert len(schedule) > 50
    for a in schedule:
        system, user = a.body["messages"]
        assert system["role"] == "system" and user["role"] == "user"
        context, query = user["content"].split("Query: ")
        found = [p.text for p in corpus if p.text in context]
        assert len(found) == 4
        assert corpus[a.tenant].text in context
        assert query.startswith(f"What does {a.tenant} say")
        assert "title:" not in context  # one paragraph a document, as indexed
    sets = Counter(a.body["messages"][1]["content"].split("Query: ")[0] for a in schedule)
    assert max(sets.values()) < 5  # sets of documents mostly new
    asked = [a.body["messages"][1]["content"] for a in schedule if a.tenant == 0]
    assert any("part 0" in q for q in asked) and any("part 1" in q for q in asked)

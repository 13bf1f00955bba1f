"""bench.fleet's RAG regime: Zipf-popular documents, a new question each time (issue 30).

A corpus of `documents` SQuAD v1.1 *train* paragraphs (bench/lib/squad.py; usable ones,
in a seeded order) is ranked by popularity: the document of rank r is retrieved with
weight 1 / r^s (Zipf, `s` 1 by default). Each arrival (Poisson at `rate` a second)
retrieves `k` distinct documents drawn by that weight, in the order drawn (the
retriever's: the first is the question's own), and asks one of the first document's
SQuAD questions, rendered in LlamaIndex's text_qa template (bench/lib/squad_render.py;
nodes without metadata, so each document is one paragraph as the application indexed
it), the context in the user message after a fixed system prompt. So popular documents
recur, but a request's set of documents (its prompt after the first document) is
almost always new: a prefix cache holds the system prompt and, on the right replica,
the first document; the rest of the context is prefilled on every request. That is
where compression saves GPU time that prefix caching cannot, and where
cache-aware compression (issue 29) must not spend what the cache already saves.
"""

from __future__ import annotations

import itertools
import random
from bisect import bisect_left

from bench.lib.fleet_workload import Arrival, _body
from bench.lib.squad import Paragraph, RagCase, load_squad, usable
from bench.lib.squad_render import render_llamaindex


def squad_corpus(documents: int, seed: int = 0) -> list[Paragraph]:
    """`documents` usable SQuAD train paragraphs with a question, in a seeded order (the
    popularity ranking)."""
    paragraphs = [p for a in load_squad("train") for p in a.paragraphs
                  if usable(p.text) and p.qas]  # fmt: skip
    random.Random(seed).shuffle(paragraphs)
    return paragraphs[:documents]


def zipf_draw(rng: random.Random, cumulative: list[float], k: int) -> list[int]:
    """`k` distinct ranks (0-based), each drawn with weight 1/(rank+1)^s, in draw order."""
    picked: list[int] = []
    while len(picked) < min(k, len(cumulative)):
        rank = bisect_left(cumulative, rng.random() * cumulative[-1])
        if rank not in picked:
            picked.append(rank)
    return picked


def rag(corpus: list[Paragraph], rate: float, duration: float, k: int = 12, s: float = 1.0,
        output_tokens: int = 16, seed: int = 0) -> list[Arrival]:  # fmt: skip
    """The schedule: Poisson arrivals over `duration` seconds; `tenant` is the rank of
    the first (the question's) document."""
    rng = random.Random(seed)
    cumulative = list(itertools.accumulate(1 / (r + 1) ** s for r in range(len(corpus))))
    asked = [0] * len(corpus)
    out, now = [], 0.0
    while True:
        now += rng.expovariate(rate)
        if now >= duration:
            return out
        ranks = zipf_draw(rng, cumulative, k)
        first = corpus[ranks[0]]
        _, question, answers = first.qas[asked[ranks[0]] % len(first.qas)]
        asked[ranks[0]] += 1
        docs = tuple(corpus[r].text for r in ranks)
        case = RagCase(question, answers, first.text, docs, f"rag-{len(out)}",
                       tuple(corpus[r].title for r in ranks))  # fmt: skip
        out.append(
            Arrival(now, ranks[0], _body(render_llamaindex(case, metadata=False), output_tokens))
        )

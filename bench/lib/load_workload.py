"""bench.load's traffic: SQuAD RAG requests with a skewed document-reuse mix, on an
open-loop Poisson schedule shared by both paths.

Reuse mix: retrieval over a corpus is skewed — a few passages are retrieved for many
queries (RAGCache, Jin et al. 2024, arXiv 2404.12457: the top 3 % of Wikipedia
passages take ~60 % of retrievals for MMLU/Natural Questions). Each level draws its
requests from its own pool of topics (a SQuAD gold paragraph with its distractors,
bench/lib/squad.py), sized in proportion to its request count (so the reuse share barely
moves with the load), topic k with probability
∝ 1/(k+1)^`zipf`; a topic drawn again is, half the time, the same question asked
again (an FAQ: the same request) and otherwise another of the gold paragraph's SQuAD
questions, which retrieves the same documents ranked differently (an order seeded by
the question: vLLM's prefix cache then serves a repeat only up to the first document
that moved). Pools are disjoint across levels, so no level finds another's documents
in ragtrim's memo or vLLM's prefix cache; within a level direct and ragtrim get the
same arrival times and the same requests (each path its own `cache_salt`).

Sizes are approximate token counts (compressors/tokens.py; with a tokenizer, building
~500 cases takes minutes). Rendering: half LlamaIndex's text_qa chat template, half
LangChain's stuff prompt (bench/lib/squad_render.py), chosen per topic.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from bench.lib.squad import RagCase, answer_retained, build_cases, load_squad
from bench.lib.squad_render import render_langchain, render_llamaindex
from compressors import ApproxTokenCounter


@dataclass(frozen=True)
class Arrival:
    at: float  # seconds after the level starts
    case: RagCase
    template: str  # "llamaindex" | "langchain"


def question_variants(case: RagCase, paragraphs: dict[str, tuple]) -> list[RagCase]:
    """The case and its gold paragraph's other answerable questions (same documents)."""
    out = [case]
    for _, question, answers in paragraphs.get(case.gold, ()):
        if question != case.question and answer_retained(case.gold, answers):
            docs = list(case.documents)
            random.Random(question).shuffle(docs)
            out.append(replace(case, question=question, answers=answers, documents=tuple(docs),
                               titles=_reordered(case, docs)))  # fmt: skip
    return out


def _reordered(case: RagCase, docs: list[str]) -> tuple[str, ...]:
    """The titles in the documents' new order (LlamaIndex renders each node's title)."""
    if not case.titles:
        return ()
    title = dict(zip(case.documents, case.titles, strict=True))
    return tuple(title[d] for d in docs)


def build_pools(sizes: list[int], *, seed: int, min_tokens: int, max_tokens: int,
                articles=None) -> list[list[list[RagCase]]]:  # fmt: skip
    """Disjoint pools of `sizes` topics (each topic: its question variants)."""
    articles = articles if articles is not None else load_squad("train")
    qas = {p.text: p.qas for a in articles for p in a.paragraphs}
    cases = build_cases(sum(sizes), seed=seed, min_tokens=min_tokens, max_tokens=max_tokens,
                        articles=articles, count_tokens=ApproxTokenCounter())  # fmt: skip
    variants = [question_variants(c, qas) for c in cases]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return [variants[s : s + n] for s, n in zip(starts, sizes, strict=True)]


def draw(pool: list[list[RagCase]], n: int, rng: random.Random, zipf: float) -> list[Arrival]:
    """`n` requests from a pool, Zipf-popular topics; arrival times left at 0."""
    weights = [1 / (k + 1) ** zipf for k in range(len(pool))]
    seen: dict[int, int] = {}
    out = []
    for _ in range(n):
        k = rng.choices(range(len(pool)), weights)[0]
        variants = pool[k]
        repeat = seen.get(k)
        if repeat is None or len(variants) == 1 or rng.random() < 0.5:
            idx = 0 if repeat is None else repeat
        else:
            idx = rng.randrange(len(variants))
        seen[k] = idx
        template = "llamaindex" if k % 2 == 0 else "langchain"
        out.append(Arrival(0.0, variants[idx], template))
    return out


def poisson(arrivals: list[Arrival], rate: float, rng: random.Random) -> list[Arrival]:
    """Open loop: exponential gaps at `rate` requests/s, whatever the responses do."""
    at, out = 0.0, []
    for a in arrivals:
        out.append(replace(a, at=at))
        at += rng.expovariate(rate)
    return out


def messages(arrival: Arrival) -> list[dict]:
    render = render_llamaindex if arrival.template == "llamaindex" else render_langchain
    return render(arrival.case)


def reuse_share(arrivals: list[Arrival]) -> float:
    """Share of requests whose documents an earlier request of the level already sent."""
    seen, again = set(), 0
    for a in arrivals:
        key = frozenset(a.case.documents)
        again += key in seen
        seen.add(key)
    return again / len(arrivals) if arrivals else 0.0

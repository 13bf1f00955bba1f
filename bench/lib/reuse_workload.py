"""bench.ttft_sim's reuse regime (issue 18): popular documents, every question new.

In RAG it is the documents that repeat across requests (popular chunks, the same pages
of a manual) while each question is new, so an output memo keyed by question + document
set never hits, and only memoized per-chunk features can make compression cheap.

Workload: a corpus of `CORPUS` SQuAD train paragraphs (usable ones, seeded order), each
with its own SQuAD questions. A request draws its gold paragraph by Zipf popularity
(P(rank r) ∝ r^-s, s = `ZIPF_S` = 1.1) and asks that paragraph's next unused question
(a paragraph whose questions are all used is drawn again: no question is ever asked
twice); its other documents are more Zipf draws (distinct, popular chunks are retrieved
as distractors too) until the context holds `MIN_TOKENS`, in a seeded order.

Warm-up: `WARMUP` requests drawn the same way send their documents to /v1/compress
without a question (what the ingest hooks do: the LangChain document compressor, the
LlamaIndex transform), so the feature memo has seen the corpus the way traffic reaches
it: popular chunks, not all of it. Then each measured request goes to the backend
directly and through ragtrim (one cache_salt per path), in pairs, c=1 and c=4.
"""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

from bench.lib.squad import RagCase, load_squad, usable
from bench.lib.stream import stream_chat
from bench.lib.ttft_cells import documents_of, request, summarize_path

CORPUS = 2000
ZIPF_S = 1.1
MIN_TOKENS = 1800  # the headline's 2-4k-token contexts
MAX_DOCS = 24
WARMUP = 300
PATHS = ("direct", "reuse")


class ReuseDraw:
    """Seeded requests over one Zipf-popular corpus; no question repeats."""

    def __init__(self, seed: int, count, corpus: int = CORPUS, s: float = ZIPF_S):
        paragraphs = [p for a in load_squad("train") for p in a.paragraphs
                      if usable(p.text) and p.qas]  # fmt: skip
        self.rng = random.Random(seed)
        self.chunks = self.rng.sample(paragraphs, corpus)
        self.weights = [1 / (rank + 1) ** s for rank in range(corpus)]
        self.asked = [0] * corpus  # questions used per chunk
        self.count = count
        self.s = s
        self.n = 0

    def _zipf(self) -> int:
        return self.rng.choices(range(len(self.chunks)), self.weights)[0]

    def request(self, min_tokens: int = MIN_TOKENS) -> RagCase:
        gold = self._zipf()
        while self.asked[gold] >= len(self.chunks[gold].qas):
            gold = self._zipf()
        _, question, answers = self.chunks[gold].qas[self.asked[gold]]
        self.asked[gold] += 1
        picked, tokens = [gold], self.count(self.chunks[gold].text)
        while tokens < min_tokens and len(picked) < MAX_DOCS:
            other = self._zipf()
            if other not in picked:
                picked.append(other)
                tokens += self.count(self.chunks[other].text)
        self.rng.shuffle(picked)
        self.n += 1
        docs = tuple(self.chunks[i].text for i in picked)
        titles = tuple(self.chunks[i].title for i in picked)
        return RagCase(question, answers, self.chunks[gold].text, docs, f"reuse-{self.n}", titles)

    @staticmethod
    def describe_static() -> dict:
        return {"corpus_chunks": CORPUS, "zipf_s": ZIPF_S, "min_tokens": MIN_TOKENS,
                "max_docs": MAX_DOCS, "questions": "each request a new SQuAD question of its "
                "gold chunk; no question repeats", "warmup": "Zipf-drawn requests' documents "
                "sent to /v1/compress without a question"}  # fmt: skip


def warm_up(client, proxy: str, draw: ReuseDraw, n: int = WARMUP) -> None:
    for _ in range(n):
        docs, _ = documents_of(draw.request())
        resp = client.post(f"{proxy}/v1/compress", json={"documents": docs}, timeout=300)
        resp.raise_for_status()


def run_reuse_cells(client, urls: dict, draw: ReuseDraw, per_cell: int, model: str) -> list:
    """One cell per concurrency: `per_cell` requests (at least 4 at c=4), each on both
    paths (direct first, then ragtrim), `concurrency` at a time."""
    cells = []
    for concurrency in (1, 4):
        n = max(per_cell, 4)
        rows = {p: [] for p in PATHS}
        for _ in range(0, n, concurrency):
            batch = [draw.request() for _ in range(concurrency)]
            with ThreadPoolExecutor(concurrency) as pool:
                for path in PATHS:
                    url = urls[path]
                    timings = pool.map(
                        lambda c, p=path, u=url: stream_chat(client, u, request(c, p, model)),
                        batch,
                    )
                    rows[path] += list(zip(timings, batch, strict=True))
        cell = {"direct": summarize_path(rows["direct"], None),
                "reuse": summarize_path(rows["reuse"], rows["direct"]),
                "context_tokens": [MIN_TOKENS, None], "concurrency": concurrency}  # fmt: skip
        seen = [t.headers.get("x-ragtrim-features-seen", "") for t, _ in rows["reuse"]]
        cell["reuse"]["features_seen"] = seen
        cells.append(cell)
        print(f"  reuse c={concurrency}: direct {cell['direct']['ttft_p50_ms']} ms, "
              f"reuse x{cell['reuse']['ratio_p50']}")  # fmt: skip
    return cells

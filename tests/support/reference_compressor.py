# ruff: noqa
"""FROZEN copy of compressors/fast_extractive.py (now fast_extractive/compressor.py) before the issue-18 split (git show
a42256d:compressors/fast_extractive.py): the reference test_features.py compares the
split compressor against, byte for byte. Do not edit.

Request-path extractive compression: the `extractive` contract at ~1/50 of its cost.

Why: against a GPU-speed backend (≈ 0.03-0.1 ms prefill per prompt token) a compressor
must cost ≲ 10 ms per 1k context tokens cold to pay (issue 9); a MiniLM forward costs
300-500 ms per 1k tokens on one CPU thread. Here no model runs at request time:

- sentences and protected spans exactly as `extractive` (sentences.py, protect.py);
- each document is tokenized once with all-MiniLM-L6-v2's WordPiece (with offsets);
  tokens are assigned to sentences by position;
- scores (scorer="hybrid", the default, chosen by measurement: issue-9a note) mix
  * BM25 of the question's content words over the request's sentences (bm25.py),
  * cosine of the sentence's static embedding (static_embed.py: MiniLM distilled into
    one row per token, model2vec's recipe) to the question's,
  * the same two signals for the sentence's whole document (a sentence of the
    document that answers is worth more than a look-alike elsewhere),
  each BM25 divided by the request's best so the weights mean the same for any
  question; scorer="bm25" or "static" keeps one signal (for comparison);
- selection as `extractive` (selection.py): best first while the budget has room, one
  pool across documents for `Budget.target_tokens`, per document for `Budget.rate`;
  kept sentences are re-emitted byte-identical, in order (sentences.render_kept).

Deterministic: integer counts, float32 sums in a fixed order, scores rounded to
`score_decimals`, ties to the earlier sentence. The static model is built at setup time
(`make setup`: deploy/local/build_static_minilm.py); if it is missing at load and
`build_missing` is true, it is distilled then (torch, ~20 s, once).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from compressors.fast_extractive import bm25
from compressors import Budget, CompressionResult, DocumentResult, TokenCounter
from compressors import Protector
from compressors._selection import per_document_keep, pooled_keep
from compressors import MAX_SENTENCE_CHARS, render_kept, split_sentences
from compressors.fast_extractive.static_embed import (
    StaticEmbedder,
    Tokens,
    default_static_path,
    unit,
)
from compressors.fast_extractive.stopwords import content_mask
from compressors import ApproxTokenCounter, count_spans, counter_name

# signal -> weight; tuned on SQuAD *dev* (never on the train cases bench.fidelity scores)
SCORERS: Mapping[str, Mapping[str, float]] = {
    "hybrid": {"bm25": 1.0, "cos": 1.0, "doc_bm25": 0.5, "doc_cos": 0.5},
    "bm25": {"bm25": 1.0},
    "static": {"cos": 1.0},
}


class ReferenceFastExtractive:
    name = "fast_extractive"
    version = "1"
    prior_ms_per_1k = 10.0  # ms per 1k cold tokens until measured (its target)
    question_aware = True

    def __init__(
        self,
        count_tokens: TokenCounter | None = None,
        *,
        model_path: str | Path | None = None,
        scorer: str = "hybrid",
        weights: Mapping[str, float] | None = None,
        protector: Protector | None = None,
        min_sentences: int = 1,
        max_sentence_chars: int = MAX_SENTENCE_CHARS,
        score_decimals: int = 4,
        build_missing: bool = True,
    ) -> None:
        if scorer not in SCORERS:
            raise ValueError(f"scorer must be one of {tuple(SCORERS)}, got {scorer!r}")
        self.weights = dict(SCORERS[scorer] if weights is None else weights)
        unknown = set(self.weights) - set(SCORERS["hybrid"])
        if unknown:
            raise ValueError(f"unknown weights {sorted(unknown)}")
        self.scorer = scorer if weights is None else "custom"
        self.count_tokens = count_tokens or ApproxTokenCounter()
        self.model_path = Path(model_path) if model_path else default_static_path()
        self.embedder = StaticEmbedder(self.model_path)
        self.protector = protector or Protector()
        self.min_sentences = min_sentences
        self.max_sentence_chars = max_sentence_chars
        self.score_decimals = score_decimals
        self.build_missing = build_missing
        self._content: np.ndarray | None = None
        self._lock = threading.Lock()

    def fingerprint(self) -> str:
        weights = ",".join(f"{k}={v:g}" for k, v in sorted(self.weights.items()))
        return (
            f"{self.name}:v{self.version}:model={self.model_path.name}:weights={weights}:"
            f"counter={counter_name(self.count_tokens)}:min={self.min_sentences}:max_chars="
            f"{self.max_sentence_chars}:round={self.score_decimals}:"
            f"{self.protector.fingerprint()}"
        )

    # -- model -------------------------------------------------------------------------

    def load(self) -> ReferenceFastExtractive:
        with self._lock:
            if self._content is None:
                if not (self.model_path / "model.safetensors").exists():
                    self._build()
                tokenizer = self.embedder.load().tokenizer
                self._content = content_mask(tokenizer.get_vocab())
        return self

    def _build(self) -> None:
        if not self.build_missing:
            raise FileNotFoundError(f"{self.model_path}: run deploy/local/build_static_minilm.py")
        from compressors.extractive import default_model_path
        from compressors.fast_extractive.static_distill import build_atomically

        build_atomically(self.model_path, default_model_path())

    # -- scoring -----------------------------------------------------------------------

    def _tokens(self, docs: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]):
        """All documents' tokens, each tagged with its global sentence (-1: none)."""
        ids, owners, offset = [], [], 0
        for doc, doc_spans in zip(docs, spans, strict=True):
            tokens = self.embedder.tokens(doc)
            starts = np.fromiter((s for s, _ in doc_spans), np.int64, len(doc_spans))
            ends = np.fromiter((e for _, e in doc_spans), np.int64, len(doc_spans))
            owner = np.searchsorted(starts, tokens.starts, side="right") - 1
            inside = (owner >= 0) & (tokens.starts < ends[np.maximum(owner, 0)])
            ids.append(tokens.ids)
            owners.append(np.where(inside, owner + offset, -1))
            offset += len(doc_spans)
        return Tokens(np.concatenate(ids), np.zeros(0, np.int64)), np.concatenate(owners)

    def _signals(self, docs, spans, question: str) -> dict[str, np.ndarray]:
        tokens, owner = self._tokens(docs, spans)
        sizes = [len(s) for s in spans]
        doc_of = np.repeat(np.arange(len(docs)), sizes)
        sums = self.embedder.span_sums(tokens, owner, len(doc_of))
        doc_sums = np.zeros((len(docs), sums.shape[1]), dtype=np.float32)
        np.add.at(doc_sums, doc_of, sums)
        vectors, doc_vectors = unit(sums), unit(doc_sums)
        asked = question.strip()
        if not asked:  # no question: closeness to the document's own centroid
            return {"cos": np.einsum("ij,ij->i", vectors, doc_vectors[doc_of])}
        query = self.embedder.tokens(asked)
        target = unit(self.embedder.span_sums(query, np.zeros(len(query.ids), np.int64), 1))[0]
        terms = np.unique(query.ids[self._content[query.ids]])
        tf = bm25.term_counts(tokens.ids, owner, len(doc_of), terms)
        lengths = np.bincount(owner[owner >= 0], minlength=len(doc_of)).astype(np.float64)
        doc_tf = np.zeros((len(docs), len(terms)))
        np.add.at(doc_tf, doc_of, tf)
        doc_bm25 = _scaled(bm25.scores(doc_tf, np.bincount(doc_of, lengths, len(docs))))
        return {
            "bm25": _scaled(bm25.scores(tf, lengths)),
            "cos": vectors @ target,
            "doc_bm25": doc_bm25[doc_of],
            "doc_cos": (doc_vectors @ target)[doc_of],
        }

    def scores(self, docs, spans, question: str) -> list[np.ndarray]:
        """Each document's sentence scores (rounded), in sentence order."""
        if not any(spans):  # no sentence anywhere: nothing to score
            return [np.zeros(0) for _ in spans]
        if self._content is None:
            self.load()
        signals = self._signals(docs, spans, question)
        total = sum(w * signals[k] for k, w in self.weights.items() if k in signals)
        if isinstance(total, int):  # no weighted signal applies (blank question, bm25 only)
            total = signals["cos"]
        total = np.round(total, self.score_decimals)
        cuts = np.cumsum([len(s) for s in spans])[:-1]
        return np.split(total, cuts) if len(spans) else []

    # -- compress ----------------------------------------------------------------------

    def compress(
        self, documents: Sequence[str], *, question: str, budget: Budget
    ) -> CompressionResult:
        docs = list(documents)
        if budget.target_tokens is None and budget.rate >= 1.0:
            results = (DocumentResult(d, n, n) for d in docs for n in [self.count_tokens(d)])
            return CompressionResult(self.name, tuple(results))
        spans = [split_sentences(d, self.protector.spans(d), self.max_sentence_chars) for d in docs]
        counted = [count_spans(self.count_tokens, d, s) for d, s in zip(docs, spans, strict=True)]
        before, counts = [c[0] for c in counted], [c[1] for c in counted]
        scores = self.scores(docs, spans, question)
        if budget.target_tokens is not None:
            keep = pooled_keep(scores, counts, budget.target_tokens)
        else:
            keep = per_document_keep(scores, counts, before, budget.rate, self.min_sentences)
        out = [render_kept(d, s, k) for d, s, k in zip(docs, spans, keep, strict=True)]
        results = (
            DocumentResult(o, n, self.count_tokens(o)) for o, n in zip(out, before, strict=True)
        )
        return CompressionResult(self.name, tuple(results))


def _scaled(values: np.ndarray) -> np.ndarray:
    """`values` divided by their maximum (all zero stays zero)."""
    top = float(values.max()) if len(values) else 0.0
    return values / top if top > 0 else values

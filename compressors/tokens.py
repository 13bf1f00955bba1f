"""Token counters: `str -> int` callables for the before/after figures and budgets.

Every counter carries a `name` so a compressor's fingerprint can say which one it used
(a budget in target-model tokens depends on the counter).

- `HFTokenCounter(path)`: the target model's own tokenizer (a local Hugging Face folder),
  counted without special tokens. The truth for what vLLM will see.
- `ApproxTokenCounter()`: no dependencies, a regex estimate (words, numbers and
  punctuation; long words count as several tokens). Within ~15% of BPE tokenizers on
  English prose; use it only when no tokenizer is at hand. Scripts written without
  spaces count per character: a run of Han, kana, Hangul or Thai is not one "word"
  (v1 counted 1,440 Chinese characters as 240 tokens; cl100k and Llama-3 give about one
  token per CJK character), and other non-Latin letters (Cyrillic, Greek, Arabic, ...)
  count 2 characters a token, as BPE vocabularies trained mostly on English split them.
- cl100k_base counts (llmlingua's own budget arithmetic) are a bench counter:
  bench/lib/variants/tiktoken_counter.py.

`count_spans(counter, text, spans)` counts a text and each of its sentences in one
tokenizer pass where the counter can (HFTokenCounter: a token belongs to the first span it
overlaps, as the model sees it in context), else one call per span.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from compressors._chunked_tokens import ChunkedTokenizer, Encoded
from compressors.base import TokenCounter
from compressors.deadline import check

_PER_CHAR = "\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_APPROX_PIECES = re.compile(
    rf"[{_PER_CHAR}]|[a-zA-Z\u00c0-\u024f]+|[^\W\d_{_PER_CHAR}]+|\d+|[^\w\s]|_+", re.UNICODE
)
_APPROX_OTHER_CHARS = 2  # non-Latin letters per token
_APPROX_WORD_CHARS = 6  # a BPE vocabulary covers ~6 letters of a word per token
_APPROX_DIGITS = 3  # cl100k / Llama-3 split numbers in groups of up to three digits


class ApproxTokenCounter:
    """Regex approximation of a BPE token count; deterministic and dependency-free."""

    name = "approx-v2"

    def __call__(self, text: str) -> int:
        check()
        total = 0
        for piece in _APPROX_PIECES.findall(text):
            if piece.isalpha():
                per = _APPROX_WORD_CHARS if piece[0] <= "\u024f" else _APPROX_OTHER_CHARS
                total += 1 + (len(piece) - 1) // per
            elif piece.isdigit():
                total += 1 + (len(piece) - 1) // _APPROX_DIGITS
            else:
                total += 1
        return total


class HFTokenCounter:
    """Counts with a local Hugging Face tokenizer (loaded lazily, once, under a lock)."""

    def __init__(self, path: str | Path, *, name: str | None = None) -> None:
        self.path = str(path)
        self.name = name or f"hf:{Path(self.path).name}"
        self._lock = threading.Lock()
        self._tokenizer = None
        self._chunked: ChunkedTokenizer | None = None

    def _load(self):
        with self._lock:
            if self._tokenizer is None:
                from transformers import AutoTokenizer

                tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
                backend = getattr(tokenizer, "backend_tokenizer", None)
                if backend is not None:
                    # A private copy without the folder's padding/truncation settings
                    # (sentence-transformers folders pad to a fixed length).
                    backend = type(backend).from_str(backend.to_str())
                    backend.no_padding()
                    backend.no_truncation()
                    tokenizer = backend
                    self._chunked = ChunkedTokenizer(backend)
                self._tokenizer = tokenizer
        return self._tokenizer

    def __call__(self, text: str) -> int:
        tokenizer = self._tokenizer or self._load()
        if hasattr(tokenizer, "get_vocab_size"):  # a `tokenizers.Tokenizer`
            return len(tokenizer.encode(text, add_special_tokens=False).ids)
        return len(tokenizer.encode(text, add_special_tokens=False))

    def count_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> tuple[int, list[int]]:
        """Tokens of `text`, and of each sorted, disjoint span, from one encode."""
        return self.count_spans_many([text], [spans])[0]

    def count_spans_many(
        self,
        texts: Sequence[str],
        spans: Sequence[Sequence[tuple[int, int]]],
        scope: str | None = None,
    ):
        """count_spans of each text, from its tokens' offsets (_chunked_tokens.py: memoized
        per chunk where that is exact, learnt for `scope` alone, else one batch encode)."""
        if self._tokenizer is None:
            self._load()
        if self._chunked is None:  # a slow (Python) tokenizer: one call per span
            pairs = zip(texts, spans, strict=True)
            return [(self(t), [self(t[a:b]) for a, b in s]) for t, s in pairs]
        encoded = self._chunked.encode_many(texts, scope)
        return [_per_span(e, s) for e, s in zip(encoded, spans, strict=True)]


def _per_span(tokens: Encoded, spans: Sequence[tuple[int, int]]) -> tuple[int, list[int]]:
    """(tokens, tokens overlapping each sorted, disjoint span, a token in the first it
    overlaps) from token offsets."""
    n = len(tokens.ids)
    if not spans or not n:
        return n, [0] * len(spans)
    starts = np.fromiter((s for s, _ in spans), np.int64, len(spans))
    ends = np.fromiter((e for _, e in spans), np.int64, len(spans))
    first = np.searchsorted(ends, tokens.starts, side="right")  # first span ending after
    hit = first < len(spans)
    hit[hit] &= starts[first[hit]] < tokens.ends[hit]
    return n, np.bincount(first[hit], minlength=len(spans)).tolist()


def counter_name(count_tokens: TokenCounter) -> str:
    """A stable name for any counter (for fingerprints)."""
    name = getattr(count_tokens, "name", None)
    if isinstance(name, str):
        return name
    return getattr(count_tokens, "__qualname__", type(count_tokens).__qualname__)


def make_token_counter(tokenizer_path: str | Path | None = None) -> TokenCounter:
    """The target model's tokenizer when a path is given, else the regex approximation."""
    if tokenizer_path:
        return HFTokenCounter(tokenizer_path)
    return ApproxTokenCounter()


def count_spans(
    count_tokens: TokenCounter, text: str, spans: Sequence[tuple[int, int]]
) -> tuple[int, list[int]]:
    """(tokens of `text`, tokens of each span): one pass where the counter offers it."""
    check()
    method = getattr(count_tokens, "count_spans", None)
    if method is not None:
        return method(text, spans)
    return count_tokens(text), [count_tokens(text[s:e]) for s, e in spans]


def count_spans_many(
    count_tokens: TokenCounter,
    texts: Sequence[str],
    spans: Sequence[Sequence[tuple[int, int]]],
    scope: str | None = None,
) -> list[tuple[int, list[int]]]:
    """count_spans of each text: one batch where the counter offers it (`scope`: whose
    texts its memo may learn from, HFTokenCounter)."""
    check()
    method = getattr(count_tokens, "count_spans_many", None)
    if method is not None:
        return method(texts, spans) if scope is None else method(texts, spans, scope=scope)
    return [count_spans(count_tokens, t, s) for t, s in zip(texts, spans, strict=True)]

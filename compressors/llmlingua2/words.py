"""LLMLingua-2's word rule, model-free: chunking, token → word merging, keep threshold.

Mirrors llmlingua 0.2.2 (`PromptCompressor.__chunk_context`, `__merge_token_to_word`,
`__compress`) in our own code, so our fast engine and llmlingua decide alike; only the
classifier's probabilities come from elsewhere (compressor.py runs the model).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from compressors.protect import Span


@dataclass(frozen=True)
class WordDecisions:
    """The model's verdict on one document: word spans and keep flags (no protection)."""

    spans: tuple[Span, ...]
    keep: tuple[bool, ...]


@dataclass
class Chunk:
    ids: list[int]
    words: list[list[int]]  # token positions (within ids) of each word
    spans: list[Span]
    texts: list[str]  # word strings as llmlingua builds them (for cl100k counts)
    forced: list[bool]  # first token is a force token


def model_kind(path: str) -> str:
    if "bert-base-multilingual-cased" in path:
        return "bert"
    if "xlm-roberta-large" in path:
        return "xlmr"
    raise ValueError(
        f"{path!r}: llmlingua-2 needs 'bert-base-multilingual-cased' or "
        "'xlm-roberta-large' in the model path"
    )


class WordChunker:
    """Tokenization, chunking and token→word grouping, as llmlingua-2 does them."""

    def __init__(
        self, tokenizer, kind: str, force: Sequence[str], ends: Sequence[str], max_seq_len: int
    ) -> None:
        backend = type(tokenizer.backend_tokenizer).from_str(tokenizer.backend_tokenizer.to_str())
        backend.no_padding()
        backend.no_truncation()
        self.backend, self.kind, self.max_seq_len = backend, kind, max_seq_len
        self.force, self.ends = set(force), set(ends)
        for token in self.force:
            if len(tokenizer.tokenize(token)) != 1:
                raise ValueError(f"force token {token!r} is not a single token")
        special = tokenizer.special_tokens_map.items()
        self.special = {v for k, v in special if k != "additional_special_tokens"}
        self.cls = tokenizer.convert_tokens_to_ids("[CLS]")  # as llmlingua's dataset does
        self.sep = tokenizer.convert_tokens_to_ids("[SEP]")

    def _new_word(self, token: str) -> bool:
        if self.kind == "bert":
            return token.lstrip("#") in self.force or not token.startswith("##")
        return token in string.punctuation or token in self.force or token.startswith("▁")

    def _pure(self, token: str) -> str:
        return token.lstrip("#") if self.kind == "bert" else token.lstrip("▁")

    def _bounds(self, tokens: list[str]) -> list[tuple[int, int]]:
        size, n, start, out = self.max_seq_len - 2, len(tokens), 0, []
        while start < n:
            if start + size > n - 1:
                out.append((start, n))
                break
            end = start + size
            for back in range(end - start):
                if tokens[end - back] in self.ends:
                    end -= back
                    break
            out.append((start, end + 1))
            start = end + 1
        return out

    def chunks(self, text: str) -> list[Chunk]:
        enc = self.backend.encode(text, add_special_tokens=False)
        out = []
        for lo, hi in self._bounds(enc.tokens):
            ids = ([self.cls, *enc.ids[lo:hi], self.sep])[: self.max_seq_len]
            chunk = Chunk(ids, [], [], [], [])
            for pos, token in enumerate(enc.tokens[lo:hi][: self.max_seq_len - 1], start=1):
                start, end = enc.offsets[lo + pos - 1]
                if token in self.special:
                    continue
                if self._new_word(token) or not chunk.words:
                    chunk.words.append([pos])
                    chunk.spans.append((start, end))
                    chunk.texts.append(token)
                    chunk.forced.append(self._pure(token) in self.force)
                else:
                    chunk.words[-1].append(pos)
                    chunk.spans[-1] = (chunk.spans[-1][0], end)
                    chunk.texts[-1] += self._pure(token)
            out.append(chunk)
        return out


def keep_flags(probs: list, counts: list[int], rate: float) -> list[bool]:
    """llmlingua-2's per-chunk rule. `probs` holds np.float32 means, or the Python float
    1.0 for a lone force token, exactly as llmlingua's lists do: the percentile's dtype
    (float32 or float64) follows from that mix."""
    if not probs:
        return []
    reduce_rate = max(0, 1 - rate)
    repeated = [p for p, n in zip(probs, counts, strict=True) for _ in range(n)]
    threshold = np.percentile(repeated, int(100 * reduce_rate + 1))
    return [bool(p > threshold or (threshold == 1.0 and p == threshold)) for p in probs]

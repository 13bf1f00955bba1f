"""Text a sentence scorer cannot judge is kept whole, never cut blind.

A scorer ranks sentences by the words it knows (BM25 terms, embedding rows). A base64
blob, a long URL or a fenced code block gives it nothing to rank; nor do Thai, Lao,
Khmer, Myanmar and emoji text (all-MiniLM's WordPiece reads each word of them as [UNK]);
and a table or a JSON value is one unit, not sentences.
Why: docs/decisions/0013-text-kept-whole-and-bounded-work.md.

A document is *opaque* (kept verbatim, never handed to a compressor) when at least
OPAQUE_SHARE of its non-space characters lie in

- runs of OPAQUE_RUN or more characters without whitespace (base64, URLs, hashes,
  minified JSON, paths), not counting letters of scripts the scorer reads that are
  written without spaces (Han, kana, Hangul: their sentences are runs too);
- text the scorer cannot read (`unread_spans`): letters and marks of every script but
  those it reads (Latin, Greek, Cyrillic, Hebrew, Arabic, Devanagari, Han, kana,
  Hangul, Bopomofo), emoji and other pictographic symbols, with the digits,
  punctuation and spaces between them. A whitelist, so a script nobody thought of
  (Sinhala, Ethiopic, Cherokee, Braille, ...) counts as unread, not as read;
- fenced code blocks (``` ... ```), tables (_tables.py) and JSON values that open a
  line, of any size (`json_blocks`).

Inside a document that is not opaque, `keep_unjudged` marks the units (sentences) a
compressor must keep whatever their score: those at least OPAQUE_SHARE unread or in
opaque runs. Tables, JSON and code are atomic units there (protect.py), judged whole.

`partition` says which documents go to the compressor; `merge` puts the compressed
ones back between the verbatim ones, in order. Linear in the text (regex scans in C,
~60 ms per MB of non-ASCII prose); the compress stage runs it in a thread for big
contexts (`compression.limits.offload_bytes`).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Sequence

import regex

from compressors._tables import table_spans
from compressors.protect import Span, merge_spans

OPAQUE_RUN = 32
OPAQUE_SHARE = 0.5
# CJK symbols and kana, Han, Hangul, compatibility ideographs, full-width forms
_SPACELESS = "\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\uffef"
_RUN = re.compile(rf"[^\s{_SPACELESS}]{{{OPAQUE_RUN},}}")
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_JSON_LINE = re.compile(r"^[ \t]*[{\[]", re.MULTILINE)
_DECODER = json.JSONDecoder()
JSON_WORK_FACTOR = 4
JSON_WINDOW = 256
_READ = (
    r"\p{Latin}\p{Greek}\p{Cyrillic}\p{Hebrew}\p{Arabic}\p{Devanagari}\p{Han}"
    r"\p{Hiragana}\p{Katakana}\p{Hangul}\p{Bopomofo}\p{Inherited}[\p{Common}--\p{So}]"
)
_UNREAD = rf"[[\p{{L}}\p{{M}}\p{{So}}\p{{Co}}]--[{_READ}]]"
_BETWEEN = r"[\s\p{N}\p{P}\p{Cf}\p{Inherited}]"  # disjoint from _UNREAD: no backtracking
_UNREAD_SPAN = regex.compile(rf"{_UNREAD}(?:{_BETWEEN}*{_UNREAD})*", regex.VERSION1)


def unread_spans(text: str) -> list[Span]:
    """Stretches of text the scorer cannot read (module docstring)."""
    if text.isascii():  # ASCII is Latin, digits, punctuation: all read (1 ms per MB)
        return []
    return [m.span() for m in _UNREAD_SPAN.finditer(text)]


def _solid(text: str, start: int = 0, end: int | None = None) -> int:
    """Non-space characters of text[start:end]."""
    return sum(map(len, text[start:end].split()))


def _covered(text: str, spans: Sequence[Span]) -> int:
    return sum(_solid(text, a, b) for a, b in spans)


def _unjudged_spans(text: str, longest: int | None = None) -> list[Span]:
    """What no sentence scorer can judge, as a unit: opaque runs and unread text.
    `longest`: the longest whitespace-free word, when the caller split the text."""
    if longest is None:
        longest = max(map(len, text.split()), default=0)
    runs = [m.span() for m in _RUN.finditer(text)] if longest >= OPAQUE_RUN else []
    return merge_spans([*runs, *unread_spans(text)])


def _structured_spans(text: str) -> list[Span]:
    spans = [m.span() for m in _FENCE.finditer(text)] + table_spans(text)
    if "{" in text or "[" in text:
        spans += json_blocks(text)
    return spans


def json_blocks(text: str) -> list[Span]:
    """JSON values that open a line (pretty-printed or not), of any size.

    Not protect.json_spans: that one walks every brace in Python (20k `{` held the loop
    120 ms here, where this runs for small contexts). The C decoder reads each candidate
    instead, in a window that doubles while the value may go on past it (a decoding
    error's line number costs a count from the start of what it decodes, so never the
    whole text); the characters handed to it over all candidates are capped at
    JSON_WORK_FACTOR × len(text): linear on any input."""
    spans: list[Span] = []
    left = JSON_WORK_FACTOR * len(text)
    found = _JSON_LINE.search(text)
    while found is not None and left > 0:
        start = found.end() - 1
        end, cost = _json_end(text, start, left)
        left -= cost
        if end is None:
            found = _JSON_LINE.search(text, start + 1)
        else:
            spans.append((start, end))
            found = _JSON_LINE.search(text, end)
    return spans


def _json_end(text: str, start: int, left: int) -> tuple[int | None, int]:
    """Where the JSON value opening at `start` ends (None: it does not parse), and the
    characters decoded to find out."""
    window, cost = JSON_WINDOW, 0
    while cost < left:
        piece = text[start : start + window]
        cost += len(piece)
        try:
            return start + _DECODER.raw_decode(piece)[1], cost
        except json.JSONDecodeError as exc:
            cut = exc.pos >= len(piece) - 1 or exc.msg.startswith("Unterminated string")
            if not cut or start + window >= len(text):
                return None, cost
        except RecursionError:  # nested deeper than the decoder goes: not judged as JSON
            return None, cost
        window *= 2
    return None, cost


def is_opaque(text: str) -> bool:
    """Whether the scorer has nothing to judge `text` by (module docstring). A run is
    part of one whitespace-free word, so prose whose longest word is short has none:
    the run scan (C, but tried at every character) is skipped."""
    words = text.split()
    solid = sum(map(len, words))
    if solid == 0:
        return False
    longest = max(map(len, words))
    del words  # a hostile text's 100k words need not outlive the count
    spans = merge_spans([*_unjudged_spans(text, longest), *_structured_spans(text)])
    return _covered(text, spans) >= OPAQUE_SHARE * solid


def keep_unjudged(text: str, units: Sequence[Span], keep: Sequence[bool]) -> list[bool]:
    """`keep` with every unit the scorer cannot judge set (module docstring)."""
    spans = _unjudged_spans(text)
    if not spans:
        return list(keep)
    starts = [a for a, _ in spans]
    out = list(keep)
    for i, (start, end) in enumerate(units):
        if out[i]:
            continue
        first = max(0, bisect.bisect_right(starts, start) - 1)
        last = bisect.bisect_left(starts, end)
        inside = [(max(a, start), min(b, end)) for a, b in spans[first:last] if b > start]
        out[i] = _covered(text, inside) >= OPAQUE_SHARE * max(1, _solid(text, start, end))
    return out


def partition(texts: Sequence[str]) -> list[int]:
    """Indices of the documents to compress (the others are kept verbatim)."""
    return [i for i, text in enumerate(texts) if not is_opaque(text)]


def merge(texts: Sequence[str], compressed: Sequence[int], new: Sequence[str]) -> list[str]:
    """`texts` with texts[compressed[k]] replaced by new[k]."""
    out = list(texts)
    for i, text in zip(compressed, new, strict=True):
        out[i] = text
    return out

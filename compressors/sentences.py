"""Sentence spans of a text, and re-joining the spans a compressor kept.

`split_sentences` returns character spans (no surrounding whitespace) that together
cover every non-whitespace character. A sentence ends after . ! ? or … (plus closing
quotes or brackets) when whitespace and a character that is not a lowercase letter
follow — except after common abbreviations and single-letter initials — and at a line
break unless the next line goes on in lowercase (a blank line always ends one). No
boundary falls inside an `atomic` span (code blocks, JSON, URLs: see protect.py).

Scripts written without spaces or without Latin punctuation are split too (why:
docs/decisions/0013-text-kept-whole-and-bounded-work.md): a sentence also ends after
CJK, Devanagari, Arabic, Ethiopic, Burmese, Tibetan and Armenian full stops
(。！？ । ؟ ۔ ። ။ ། ։, closing quotes or brackets included) with or without whitespace
after, and at a space between two Thai characters (Thai marks a sentence or clause end
with a space). Khmer's ។ ៕ end one too.
A line that ends with a colon goes on into the next line (a label and its value, "-
Owner:" then "Alice", stay one sentence), unless a blank line follows. A sentence longer
than `max_chars` is cut at its last whitespace within `max_chars`; a window without any
(a run of CJK without punctuation, base64, a hash) is cut every `max_chars // 5`
characters (CJK is ≈ 1 token a character: ~240 tokens, a long English sentence),
never inside an atomic span. So no unit is larger than that except an atomic one.

`render_kept` rebuilds a text from kept units (sentences or words) using only bytes of
the source: between two units that were adjacent in the source, the original gap
verbatim; where units were dropped in between, the gap with the most line breaks among
those dropped-over gaps (its whitespace only), or a single space. The source's leading
and trailing whitespace is kept; a text with nothing kept renders as "".
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from compressors.deadline import check
from compressors.protect import Span

# fmt: off
ABBREVIATIONS = frozenset({
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "al", "fig", "figs", "eq",
    "eqs", "no", "nos", "vol", "pp", "inc", "ltd", "co", "corp", "dept", "approx", "est", "min",
    "max", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "e.g", "i.e", "cf", "resp", "gen", "col", "lt", "sgt", "rev", "hon",
})
# fmt: on
_TERMINAL = re.compile(r"[.!?\u2026]+[\"'\u201d\u2019)\]]*(?=\s)")
_FULL_STOP = re.compile(
    "[\u3002\uff01\uff1f\uff61\u0964\u0965\u061f\u06d4\u1362\u104b\u0f0d\u0589\u17d4\u17d5]+"
    "[\"'\u201d\u2019)\\]\u300d\u300f\uff09\u3011\u3009\u300b]*"
)
_THAI_BREAK = re.compile("[\u0e00-\u0e7f]([ \t]+)(?=[\u0e00-\u0e7f])")  # no lookbehind: a scan
_LINE_BREAK = re.compile(r"\n")
_COLON_BEFORE = re.compile(r"[:\uff1a][ \t]*$")
_WORD_BEFORE = re.compile(r"([\w.]+)$")
_NEXT_CHAR = re.compile(r"\s*(\S)")
_WHITESPACE = re.compile(r"\s*")
_WHITESPACE_RUN = re.compile(r"\s+")
MAX_SENTENCE_CHARS = 1200
_ABBREVIATION_WINDOW = 32


def _next_char(text: str, pos: int) -> str:
    match = _NEXT_CHAR.match(text, pos)
    return match.group(1) if match else ""


def _is_abbreviation(text: str, end: int) -> bool:
    # a window, not the whole prefix: searching from 0 made every call O(len(text)); a run
    # longer than the window is no abbreviation either way
    match = _WORD_BEFORE.search(text, max(0, end - _ABBREVIATION_WINDOW), end)
    if match is None:
        return False
    word = match.group(1).rstrip(".").lower()
    return word in ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def _boundaries(text: str) -> set[int]:
    cuts: set[int] = set()
    for m in _TERMINAL.finditer(text):
        if _next_char(text, m.end()).islower():
            continue
        plain_period = m.group().rstrip("\"'\u201d\u2019)]") == "."
        if plain_period and _is_abbreviation(text, m.start()):
            continue
        cuts.add(m.end())
    if not text.isascii():  # every full stop and Thai letter is non-ASCII (a flag: O(1))
        cuts.update(m.end() for m in _FULL_STOP.finditer(text))
        cuts.update(m.start(1) for m in _THAI_BREAK.finditer(text))
    for m in _LINE_BREAK.finditer(text):
        paragraph = "\n" in _WHITESPACE.match(text, m.end()).group()
        label = _COLON_BEFORE.search(text, max(0, m.start() - _ABBREVIATION_WINDOW), m.start())
        if paragraph or not (label or _next_char(text, m.end()).islower()):
            cuts.add(m.start())
    return cuts


def _inside(spans: Sequence[Span], pos: int) -> bool:
    """Whether `pos` falls strictly inside one of the sorted, merged spans."""
    i = bisect.bisect_right(spans, (pos, float("inf"))) - 1
    return i >= 0 and spans[i][0] < pos < spans[i][1]


def _trimmed(text: str, start: int, end: int) -> Span | None:
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return None
    left = start + len(piece) - len(piece.lstrip())
    return (left, left + len(stripped))


def _cut_long(text: str, span: Span, atomic: Sequence[Span], max_chars: int) -> list[Span]:
    start, end = span
    pieces: list[Span] = []
    while (cut := _cut_point(text, start, end, atomic, max_chars)) is not None:
        pieces.append((start, cut))
        start = _trimmed(text, cut, end)[0]
    pieces.append((start, end))
    return pieces


def _cut_point(text: str, start: int, end: int, atomic: Sequence[Span], max_chars: int):
    """Where to cut text[start:end] (module docstring), or None to leave it whole."""
    fixed = max(1, max_chars // 5)
    if end - start <= fixed:
        return None
    if end - start <= max_chars:  # short enough: whole unless it has no space to cut at
        space = _WHITESPACE_RUN.search(text, start + 1, end)
        if space is not None and not _inside(atomic, space.start()):
            return None
    last = None
    for m in _WHITESPACE_RUN.finditer(text, start, min(end, start + max_chars)):
        if m.start() > start and not _inside(atomic, m.start()):
            last = m.start()
    if last is not None:
        return last if end - start > max_chars else None
    cut = start + fixed
    i = bisect.bisect_right(atomic, (cut, float("inf"))) - 1
    if i >= 0 and atomic[i][0] < cut < atomic[i][1]:  # never inside an atomic span
        cut = atomic[i][1] if atomic[i][0] <= start else atomic[i][0]
    return cut if start < cut < end else None


def split_sentences(
    text: str, atomic: Sequence[Span] = (), max_chars: int = MAX_SENTENCE_CHARS
) -> list[Span]:
    """Sentence spans of `text`, in order; `atomic` must be sorted and merged."""
    check()
    cuts = sorted(c for c in _boundaries(text) if not _inside(atomic, c))
    spans: list[Span] = []
    start = 0
    for cut in [*cuts, len(text)]:
        span = _trimmed(text, start, cut)
        if span is not None:
            spans.extend(_cut_long(text, span, atomic, max_chars))
        start = cut
    return spans


def _separator(text: str, units: Sequence[Span], first: int, last: int) -> str:
    if last == first + 1:
        return text[units[first][1] : units[last][0]]
    gaps = [text[units[k][1] : units[k + 1][0]] for k in range(first, last)]
    best = max(gaps, key=lambda gap: gap.count("\n"))
    if "\n" in best:
        return "".join(ch for ch in best if ch.isspace())
    return " "


def render_kept(text: str, units: Sequence[Span], keep: Sequence[bool]) -> str:
    """The kept units of `text` joined as described in the module docstring."""
    kept = [i for i, flag in enumerate(keep) if flag]
    if not kept:
        return ""
    parts = [text[: len(text) - len(text.lstrip())]]
    for n, cur in enumerate(kept):
        if n:
            parts.append(_separator(text, units, kept[n - 1], cur))
        parts.append(text[units[cur][0] : units[cur][1]])
    parts.append(text[len(text.rstrip()) :])
    return "".join(parts)

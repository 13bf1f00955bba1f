"""Sentence spans of a text, and re-joining the spans a compressor kept.

`split_sentences` returns character spans (no surrounding whitespace) that together
cover every non-whitespace character. A sentence ends after . ! ? or … (plus closing
quotes or brackets) when whitespace and a character that is not a lowercase letter
follow — except after common abbreviations and single-letter initials — and at a line
break unless the next line goes on in lowercase (a blank line always ends one). No
boundary falls inside an `atomic` span (code blocks, JSON, URLs: see protect.py). A
sentence longer than `max_chars` is cut at whitespace.

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
_LINE_BREAK = re.compile(r"\n")
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
    for m in _LINE_BREAK.finditer(text):
        paragraph = "\n" in _WHITESPACE.match(text, m.end()).group()
        if paragraph or not _next_char(text, m.end()).islower():
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
    while end - start > max_chars:
        cut = None
        for m in _WHITESPACE_RUN.finditer(text, start, start + max_chars):
            pos = m.start()
            if pos > start and not _inside(atomic, pos):
                cut = pos
        if cut is None:
            break
        pieces.append((start, cut))
        start = _trimmed(text, cut, end)[0]
    pieces.append((start, end))
    return pieces


def split_sentences(
    text: str, atomic: Sequence[Span] = (), max_chars: int = MAX_SENTENCE_CHARS
) -> list[Span]:
    """Sentence spans of `text`, in order; `atomic` must be sorted and merged."""
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

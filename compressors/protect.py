"""Protected spans: text that compression must never drop or split.

A `Protector` finds `(start, end)` character spans of configurable kinds in a text and
returns them sorted and merged. What each compressor does with them:

- token-level compressors (llmlingua2, longllmlingua) keep every word that overlaps a
  protected span, and the span's own characters verbatim;
- the extractive compressor drops whole sentences; it treats protected spans as atomic
  (no sentence boundary inside a code block, JSON value, table, URL or date), but a
  sentence that holds one may still be dropped as a whole.

Kinds (all on by default): code (``` fenced blocks ``` and `inline code`), json (balanced
{...} or [...] that parses as JSON), table (markdown, grid and HTML tables: _tables.py),
url, citation ([1], [2, 3], [4-6]), date (ISO dates, numeric dates, month-name dates, times),
number (anything holding a digit, with currency signs, separators and %), negation (not,
no, never, n't, without, ...). `extra_patterns` adds regexes of your own (compiled with
re.IGNORECASE | re.MULTILINE).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
from collections.abc import Iterable, Sequence

import regex

from compressors._tables import table_spans
from compressors.deadline import check

Span = tuple[int, int]

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_DATE = (
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b"
    rf"|\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}\s+\d{{4}}\b"
    rf"|\b{_MONTH}\s+\d{{4}}\b"
    r"|\b\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?"
)
_PATTERNS: dict[str, str] = {
    "code": r"```.*?(?:```|\Z)|`[^`\n]+`",
    "url": r"\b(?:https?://|ftp://|www\.)[^\s<>\"'`]+[^\s<>\"'`.,;:!?)\]}]",
    "citation": r"\[\d+(?:\s*[,\u2013-]\s*\d+)*\]",
    # every date alternative starts with a digit or a month's first letter: a lookahead
    # on that character skips every other position at once (same spans, 2x faster)
    "date": rf"(?=[\dJFMASOND])(?:{_DATE})",
    # `(?<!\w)` before `\w*`: a match can only start a word run anyway (the run's first
    # position matches whenever a later one would), so this changes no span and saves
    # the quadratic retries inside digit-free words (1.5x faster on SQuAD)
    "number": r"[$€£¥]?(?:(?<!\w)[+-])?(?<!\w)\w*\d(?:\w|[.,:/\u2013-](?=\d))*%?",
    "negation": (
        r"\b(?:not|no|never|none|nobody|nothing|neither|nor|nowhere|cannot|without|"
        r"hardly|barely|scarcely|n't)\b|\b\w+n['\u2019]t\b"
    ),
}
# negation in a text with no apostrophe-t: the contraction alternatives cannot match, so
# the word list alone gives the same spans; every word starts n, c, w, h, b or s, and a
# lookahead on that letter skips every other position (3.4x faster on SQuAD)
_NEGATION_WORDS = (
    r"(?=[ncwhbs])\b(?:not|no|never|none|nobody|nothing|neither|nor|nowhere|cannot|without|"
    r"hardly|barely|scarcely)\b"
)
_APOSTROPHE_T = ("'t", "'T", "\u2019t", "\u2019T")
_FLAGS = {"code": re.DOTALL, "negation": re.IGNORECASE, "date": re.IGNORECASE}
KINDS: tuple[str, ...] = ("code", "json", "table", "url", "citation", "date", "number", "negation")
MAX_JSON_CHARS = 20_000
JSON_WORK_FACTOR = 4  # characters scanned for JSON, per character of text (json_spans)
EXTRA_PATTERN_TIMEOUT_S = 0.05


class PatternTimeout(Exception):  # noqa: N818 - reads as what happened
    """An operator's protect pattern ran past EXTRA_PATTERN_TIMEOUT_S on one text."""


_JSON_TOKEN = re.compile(r'[{}\[\]"\\]')
_JSON_OPEN = re.compile(r"[{\[]")


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """Sorted union of spans; overlapping or touching spans become one."""
    merged: list[Span] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def overlaps(spans: Sequence[Span], start: int, end: int) -> bool:
    """Whether [start, end) overlaps any span of a merged, sorted list."""
    i = bisect.bisect_right(spans, (start, float("inf"))) - 1
    if i >= 0 and spans[i][1] > start:
        return True
    return i + 1 < len(spans) and spans[i + 1][0] < end


def _json_end(text: str, start: int) -> tuple[int | None, int]:
    """End of the balanced {...} or [...] opening at `start` (strings respected), or None; and
    how many characters the scan covered. The scan jumps from one brace, quote or
    backslash to the next (a regex in C), not character by character."""
    depth, in_string, skip = 0, False, -1
    stop = min(len(text), start + MAX_JSON_CHARS)
    for m in _JSON_TOKEN.finditer(text, start, stop):
        i, ch = m.start(), m.group()
        if i == skip:  # the character after a backslash inside a string
            continue
        if in_string:
            if ch == "\\":
                skip = i + 1
            in_string = ch != '"'
        elif ch == '"':
            in_string = True
        elif ch != "\\":
            depth += 1 if ch in "{[" else -1
            if depth == 0:
                return i + 1, i + 1 - start
    return None, stop - start


def json_spans(text: str) -> list[Span]:
    """Inline JSON values: balanced {...} or [...] that `json.loads` accepts.

    Linear in `len(text)`: each candidate `{` or `[` scans up to MAX_JSON_CHARS, and the
    characters scanned and parsed over all candidates are capped at JSON_WORK_FACTOR ×
    len(text) (+ one value); past that cap no more JSON is looked for. A value left
    unprotected (past the cap, or longer than MAX_JSON_CHARS) could be cut between its
    elements: a document that is mostly JSON never reaches a compressor (verbatim.py),
    whatever its size. Objects and arrays both count.
    Why: docs/decisions/0013-text-kept-whole-and-bounded-work.md.
    """
    spans: list[Span] = []
    left = JSON_WORK_FACTOR * len(text) + MAX_JSON_CHARS
    found = _JSON_OPEN.search(text)
    while found is not None and left > 0:
        i = found.start()
        end, scanned = _json_end(text, i)
        left -= scanned
        if end is not None and _parses(text[i:end]):
            spans.append((i, end))
            found = _JSON_OPEN.search(text, end)
        else:
            found = _JSON_OPEN.search(text, i + 1)
    return spans


def number_spans(number: re.Pattern, text: str) -> list[Span]:
    """`number.finditer(text)`'s spans, the pattern run only over the runs of characters
    a number can hold ($, +, -, word characters, . , : / – %) that hold a digit: every
    match holds a digit and lies in one such run, and a run's neighbours are characters
    no match holds, so each run is searched as the whole text would be (2x faster on
    SQuAD, where most words hold no digit)."""
    spans: list[Span] = []
    end = 0
    for digit in _DIGIT.finditer(text):
        at = digit.start()
        if at < end:
            continue  # in the run just searched
        start = at
        while start > 0 and _number_char(text[start - 1]):
            start -= 1
        end = _NUMBER_RUN.match(text, at).end()
        spans += [m.span() for m in number.finditer(text, start, end)]
    return spans


def _number_char(ch: str) -> bool:
    return ch.isalnum() or ch in _NUMBER_MARKS


_DIGIT = re.compile(r"\d")
_NUMBER_MARKS = frozenset("_$€£¥+-.,:/\u2013%")
_NUMBER_RUN = re.compile(r"[$€£¥+\w.,:/\u2013%-]*")


def _parses(candidate: str) -> bool:
    try:
        return isinstance(json.loads(candidate), (dict, list))
    except ValueError:
        return False


class Protector:
    """Finds protected spans; immutable once built."""

    def __init__(self, kinds: Iterable[str] = KINDS, extra_patterns: Iterable[str] = ()) -> None:
        self.kinds = tuple(sorted(set(kinds)))
        unknown = set(self.kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown protected kinds {sorted(unknown)}; known: {KINDS}")
        self.extra_patterns = tuple(extra_patterns)
        self._regexes = tuple(
            re.compile(_PATTERNS[kind], _FLAGS.get(kind, 0))
            for kind in self.kinds
            if kind not in ("json", "table", "negation", "number")
        )
        self._number = re.compile(_PATTERNS["number"]) if "number" in self.kinds else None
        self._negation = "negation" in self.kinds
        self._negation_full = re.compile(_PATTERNS["negation"], re.IGNORECASE)
        self._negation_words = re.compile(_NEGATION_WORDS, re.IGNORECASE)
        flags = regex.IGNORECASE | regex.MULTILINE | regex.VERSION0
        self._extra = tuple(regex.compile(pattern, flags) for pattern in self.extra_patterns)

    def spans(self, text: str) -> list[Span]:
        """Sorted, merged protected spans of `text`.

        The built-in kinds are linear (tests/unit/compressors/test_protect.py times them
        on hostile text). The operator's `extra_patterns` may not be (`(a+)+$`
        backtracks without limit), so they run on the `regex` engine with a time limit
        of EXTRA_PATTERN_TIMEOUT_S per text: past it, PatternTimeout fails the
        compression open (the original is forwarded; nothing meant to be protected is
        dropped)."""
        check()
        found: list[Span] = [m.span() for rx in self._regexes for m in rx.finditer(text)]
        if self._number is not None:
            found += number_spans(self._number, text)
        if self._negation:
            contracted = any(a in text for a in _APOSTROPHE_T)
            rx = self._negation_full if contracted else self._negation_words
            found += [m.span() for m in rx.finditer(text)]
        found += self._extra_spans(text)
        if "json" in self.kinds and ("{" in text or "[" in text):
            found.extend(json_spans(text))
        if "table" in self.kinds:
            found.extend(table_spans(text))
        return merge_spans(found)

    def _extra_spans(self, text: str) -> list[Span]:
        limit = EXTRA_PATTERN_TIMEOUT_S
        try:  # concurrent: the GIL released while it runs
            return [
                m.span()
                for rx in self._extra
                for m in rx.finditer(text, timeout=limit, concurrent=True)
            ]
        except TimeoutError as exc:
            raise PatternTimeout("a protect pattern ran past its time limit") from exc

    def fingerprint(self) -> str:
        """v2: JSON arrays and tables are protected, so the same text splits
        into other sentences; a memo entry of v1 must not be served for it."""
        extra = hashlib.sha256("\x00".join(self.extra_patterns).encode()).hexdigest()[:12]
        return f"protect-v2:{','.join(self.kinds)}:{extra if self.extra_patterns else '-'}"


def fold_protected(
    units: Sequence[Span], keep: Sequence[bool], protected: Sequence[Span]
) -> tuple[list[Span], list[bool]]:
    """Merge each protected span with every unit overlapping it into one kept unit.

    `units` (e.g. words) and `protected` are sorted; the result is sorted and disjoint,
    and rendering it keeps each protected span's characters verbatim.
    """
    items = sorted(
        [(s, e, bool(k), False) for (s, e), k in zip(units, keep, strict=True)]
        + [(s, e, True, True) for s, e in protected]
    )
    out: list[list] = []
    for start, end, flag, is_protected in items:
        last = out[-1] if out else None
        if last is not None and start < last[1] and (is_protected or last[3]):
            last[1], last[2], last[3] = max(last[1], end), True, True
        else:
            out.append([start, end, flag, is_protected])
    return [(s, e) for s, e, _, _ in out], [flag for _, _, flag, _ in out]

"""Moving volatile text (dates, times, UUIDs, operator regexes) out of the static prefix.

Each match is moved with its *unit*: the sentence around it within its line (bounded by
`. ! ?` + whitespace), else the whole line. Units are cut (a line left blank
disappears, so does the space joining a unit to its neighbours) and re-inserted in
order, one per line, right after the static part: whole static messages -> appended to
the last one after "\\n\\n"; static_end inside message i -> after the last "\\n" of the
static slice, i.e. before its partial last line (no "\\n" in it: after the slice, on a
new line), each unit followed by "\\n". The static text minus its volatile units -- the
key -- and the bytes before the first unit are then the same across requests that
differ only in those values.

Bounded work: the sentence marks are found once per text and looked up by bisection,
and at most MAX_UNITS matches are moved, since each cut copies the text. A text with
more is left as it is (its key then holds its values): a system prompt's volatile bits
are a date and a request id or two, not thousands.
Why: docs/decisions/0021-bounded-work-per-request.md.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Sequence

_SENTENCE_START = re.compile(r"[.!?][\"')\]]*[ \t]+")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
MAX_UNITS = 64


def extract_volatile(text: str, patterns: Sequence[re.Pattern[str]]) -> tuple[str, tuple]:
    """(text without its volatile units, the units in order); unchanged, () above
    MAX_UNITS matches."""
    found = (m.span() for rx in patterns for m in rx.finditer(text) if m.end() > m.start())
    spans = list(itertools.islice(found, MAX_UNITS + 1))
    if len(spans) > MAX_UNITS:
        return text, ()
    if not spans:
        return text, ()
    marks = _Marks(text)
    units = _merge(marks.unit(start, end) for start, end in spans)
    moved = tuple(text[a:b].strip() for a, b in units)
    for a, b in reversed(units):
        text = _cut(text, a, b)
    return text, moved


def insert_moved(slice_: str, moved: Sequence[str]) -> str:
    """The moved units on their own lines after the slice's last line break."""
    if not moved:
        return slice_
    cut = slice_.rfind("\n") + 1
    block = "".join(unit + "\n" for unit in moved)
    if cut == 0 and slice_:
        return slice_ + "\n" + block
    return slice_[:cut] + block + slice_[cut:]


def _line(text: str, start: int, end: int) -> tuple[int, int]:
    line_end = text.find("\n", end)
    return text.rfind("\n", 0, start) + 1, len(text) if line_end < 0 else line_end


class _Marks:
    """Every sentence start and end of one text, found once: what
    `_SENTENCE_START.finditer(text, line_start, start)` and `_SENTENCE_END.search(text,
    end, line_end)` would find, by bisection (neither pattern crosses a line break)."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [m.span() for m in _SENTENCE_START.finditer(text)]
        self.ends = [m.start() for m in _SENTENCE_END.finditer(text)]  # one character each

    def unit(self, start: int, end: int) -> tuple[int, int]:
        """The sentence around text[start:end] inside its line, or the whole line."""
        line_start, line_end = _line(self.text, start, end)
        i = bisect.bisect_right(self.ends, end - 1)
        stop = self.ends[i] + 1 if i < len(self.ends) and self.ends[i] < line_end else line_end
        return self._begin(line_start, start), stop

    def _begin(self, line_start: int, start: int) -> int:
        j = bisect.bisect_left(self.starts, (start,)) - 1  # the last mark starting before
        if j >= 0 and self.starts[j][1] > start:  # it runs past `start`: cut there
            if _SENTENCE_START.fullmatch(self.text, self.starts[j][0], start):
                return start if self.starts[j][0] >= line_start else line_start
            j -= 1
        return self.starts[j][1] if j >= 0 and self.starts[j][0] >= line_start else line_start


def _merge(units: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for a, b in sorted(units):
        overlaps = merged and a < merged[-1][1]
        merged[-1:] = (
            [(merged[-1][0], max(b, merged[-1][1]))] if overlaps else [*merged[-1:], (a, b)]
        )
    return merged


def _cut(text: str, a: int, b: int) -> str:
    line_start, line_end = _line(text, a, b)
    before, after = text[line_start:a], text[b:line_end]
    if not before.strip() and not after.strip():  # the unit is the whole line
        if line_end < len(text):
            return text[:line_start] + text[line_end + 1 :]
        return text[: max(line_start - 1, 0)]
    if not after.strip():  # at the end of its line: drop the space before it
        return text[: line_start + len(before.rstrip())] + text[b:]
    return text[:a] + text[b + len(after) - len(after.lstrip()) :]

"""Where the tables of a text are: spans that are cut only whole.

protect.py's `table` kind makes each table atomic (kept or dropped whole by the
extractive compressors, every word kept by the token-level ones), and verbatim.py counts
tables among what a sentence scorer cannot judge.
Why: docs/decisions/0013-text-kept-whole-and-bounded-work.md.

A table is any of:
- a block of two or more consecutive lines that start (after indentation) with a cell
  border: `|` (markdown), `+-`/`+=` (grid tables), or a box-drawing character;
- a GitHub table without outer pipes: a delimiter row (`--- | :--:`), the header line
  above it and every following line that holds a `|`;
- an HTML `<table> ... </table>` (nested tables inside the outer one), paired by one
  left-to-right walk over the tags: linear, an unclosed tag ends the search.
"""

from __future__ import annotations

import re

Span = tuple[int, int]

_BORDER = r"[ \t]*(?:[|\u2500-\u257f]|\+[-=])[^\n]*"
_BLOCK = re.compile(rf"^{_BORDER}(?:\n{_BORDER})+", re.MULTILINE)
_CELL = r":?-+:?[ \t]*"  # each part is unambiguous: no quadratic retries on a failed `$`
_DELIMITER = re.compile(
    rf"^[ \t]*(?:\|[ \t]*)?{_CELL}(?:\|[ \t]*{_CELL})+(?:\|[ \t]*)?$", re.MULTILINE
)
_PIPE_LINE = re.compile(r"[^\n]*\|[^\n]*")
_HTML_TAG = re.compile(r"<(/?)table\b[^>]{0,200}>", re.IGNORECASE)


def table_spans(text: str) -> list[Span]:
    """The tables of `text` (module docstring), sorted, possibly overlapping."""
    spans = [m.span() for m in _BLOCK.finditer(text)]
    if "|" in text and "-" in text:
        end = -1
        for m in _DELIMITER.finditer(text):
            if m.start() > end:  # a delimiter inside the last table adds nothing
                spans.append(_delimited(text, m.start(), m.end()))
                end = spans[-1][1]
    if "<" in text:
        spans += _html(text)
    return sorted(spans)


def _delimited(text: str, start: int, end: int) -> Span:
    """The GitHub table around the delimiter row text[start:end]: the line above, and
    every following line that holds a `|`."""
    head = text.rfind("\n", 0, start - 1) + 1 if start > 0 else start
    pos = end
    while pos < len(text) and (m := _PIPE_LINE.match(text, pos + 1)) and m.end() > pos + 1:
        pos = m.end()
    return head, pos


def _html(text: str) -> list[Span]:
    spans: list[Span] = []
    depth, start = 0, 0
    for m in _HTML_TAG.finditer(text):
        if not m.group(1):
            if depth == 0:
                start = m.start()
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                spans.append((start, m.end()))
    return spans

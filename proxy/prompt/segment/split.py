"""Splitting a context region into documents.

Frameworks join documents with a blank line ("\\n\\n" in LangChain and LlamaIndex; the
Haystack loop renders one too), so a document is a run of text between blank lines,
without its surrounding whitespace. Empty pieces are skipped; order is kept. A
document that itself holds blank lines becomes several slots, each compressed on its
own, which changes nothing for the bytes around it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from proxy.prompt.segment.model import Slot

_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_METADATA_LINE = re.compile(r"[\w.-]+: [^\n]*")


def split_documents(
    text: str, start: int, end: int, message: int | None, *, skip_metadata: bool = False
) -> tuple[Slot, ...]:
    """Slots for the documents in `text[start:end]`.

    skip_metadata: leave pieces made only of "key: value" lines alone (LlamaIndex
    renders node metadata that way before the node text); they are not documents.
    """
    slots = []
    for a, b in _pieces(text, start, end):
        a, b = _strip(text, a, b)
        if a == b or (skip_metadata and _is_metadata(text[a:b])):
            continue
        slots.append(Slot(message, a, b, text[a:b]))
    return tuple(slots)


def _pieces(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    pos = start
    for match in _BLANK_LINE.finditer(text, start, end):
        yield pos, match.start()
        pos = match.end()
    yield pos, end


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    piece = text[start:end]
    left = len(piece) - len(piece.lstrip())
    right = len(piece) - len(piece.rstrip())
    return (start + left, end - right) if left < len(piece) else (start, start)


def _is_metadata(piece: str) -> bool:
    return all(_METADATA_LINE.fullmatch(line) for line in piece.split("\n"))

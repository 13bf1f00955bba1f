"""Recogniser 2: documents marked with tags inside the messages (or the prompt).

    <ragtrim:doc>document text</ragtrim:doc>             (any number)
    <ragtrim:question>the question</ragtrim:question>    (optional, at most one is read)

A document slot spans its tags INCLUDING the tags, and its `text` is the text between
them (the one exception to `text == source[start:end]`). Replacing the slot therefore
removes the markers: the model never sees them. When nothing is compressed the proxy
still calls apply_* with the original inner texts, which strips the tags. apply_* also
drops the question markers, keeping the question itself. Every tagged document is a
slot, even an empty one, so that its markers go too. Tags do not nest; an unclosed tag
is left as it is. Without a question tag the question is the last user message minus
the tagged documents (chat) or "" (completion).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from typing import Any

from compressors.segments import Segmentation, Slot
from compressors.templates._generic import Position, fallback_question, static_end
from compressors.templates._messages import texts

NAME = "tags"

DOC = ("<ragtrim:doc>", "</ragtrim:doc>")
QUESTION = ("<ragtrim:question>", "</ragtrim:question>")
_QUESTION_MARKER = re.compile(r"</?ragtrim:question>")

Sources = Sequence[tuple[int | None, str | None]]


class Tags:
    def match_chat(self, messages: Sequence[Any]) -> Segmentation | None:
        return _match(list(enumerate(texts(messages))), messages)

    def match_prompt(self, prompt: str) -> Segmentation | None:
        return _match([(None, prompt)], ())


def marker_slots(text: str, message: int | None, documents: Sequence[Slot]) -> list[Slot]:
    """The question markers in `text`, outside every document slot, as slots to empty."""
    inside = sorted((d.start, d.end) for d in documents if d.message == message)
    starts = [start for start, _ in inside]
    return [
        Slot(message, m.start(), m.end(), m.group())
        for m in _QUESTION_MARKER.finditer(text)
        if not _within(inside, starts, m.start())
    ]


def _within(spans: list[tuple[int, int]], starts: list[int], offset: int) -> bool:
    i = bisect_right(starts, offset) - 1
    return i >= 0 and offset < spans[i][1]


def _match(sources: Sources, messages: Sequence[Any]) -> Segmentation | None:
    slots = _document_slots(sources)
    if not slots:
        return None
    question, at = _question(sources)
    if question is None:
        question = fallback_question(messages, slots)
    return Segmentation(NAME, slots, question, static_end(slots, at))


def _document_slots(sources: Sources) -> tuple[Slot, ...]:
    return tuple(
        Slot(message, start, end, text[inner:close])
        for message, text in sources
        if text is not None
        for start, inner, close, end in _pairs(text, DOC)
    )


def _question(sources: Sources) -> tuple[str | None, Position | None]:
    for message, text in sources:
        for start, inner, close, _ in _pairs(text or "", QUESTION):
            return text[inner:close].strip(), (message, start)
    return None, None


def _pairs(text: str, tags: tuple[str, str]) -> Iterator[tuple[int, int, int, int]]:
    """(start, inner start, inner end, end) of each closed tag pair, left to right.
    A linear scan: an opening tag without a closing one ends the search."""
    opening, closing = tags
    pos = 0
    while (start := text.find(opening, pos)) >= 0:
        close = text.find(closing, start + len(opening))
        if close < 0:
            return
        yield start, start + len(opening), close, close + len(closing)
        pos = close + len(closing)

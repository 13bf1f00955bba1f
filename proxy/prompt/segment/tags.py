"""Recogniser 2: documents marked with tags inside the messages (or the prompt).

    <ragtrim:doc>document text</ragtrim:doc>             (any number)
    <ragtrim:question>the question</ragtrim:question>    (optional, at most one is read)

A document slot is the text between its tags; the tags themselves are marker slots
of the segmentation, so applying it (compressed or not) removes them and the model
never sees one. Question tags outside documents are markers too (the question itself
stays). Every tagged document is a slot, even an empty one. Tags do not nest; an
unclosed tag is left as it is. Tags in an assistant turn are not read (its text is the
model's own: messages.CONTEXT_ROLES). Without a question tag the question is the last
user message minus the tagged documents and markers (chat) or "" (completion).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from typing import Any

from proxy.prompt.segment.explicit import fallback_question, static_end
from proxy.prompt.segment.messages import context_texts
from proxy.prompt.segment.model import Position, Segmentation, Slot

NAME = "tags"

DOC = ("<ragtrim:doc>", "</ragtrim:doc>")
QUESTION = ("<ragtrim:question>", "</ragtrim:question>")
_QUESTION_MARKER = re.compile(r"</?ragtrim:question>")

Sources = Sequence[tuple[int | None, str | None]]


class Tags:
    def match_chat(self, messages: Sequence[Any]) -> Segmentation | None:
        return _match(list(enumerate(context_texts(messages))), messages)

    def match_prompt(self, prompt: str) -> Segmentation | None:
        return _match([(None, prompt)], ())


def _match(sources: Sources, messages: Sequence[Any]) -> Segmentation | None:
    pairs = [
        (message, text, span)
        for message, text in sources
        if text is not None
        for span in _pairs(text, DOC)
    ]
    if not pairs:
        return None
    documents = tuple(Slot(m, a, b, text[a:b]) for m, text, (_, a, b, _) in pairs)
    tags = [Slot(m, start, inner, DOC[0]) for m, _, (start, inner, _, _) in pairs]
    tags += [Slot(m, close, end, DOC[1]) for m, _, (_, _, close, end) in pairs]
    markers = tuple(tags + _question_markers(sources, pairs))
    question, at = _question(sources)
    if question is None:
        question = fallback_question(messages, documents + markers)
    return Segmentation(NAME, documents, question, static_end(tags, at), markers)


def _question_markers(sources: Sources, pairs) -> list[Slot]:
    """The question markers outside every tagged document, in every text."""
    out = []
    for message, text in sources:
        inside = sorted((start, end) for m, _, (start, _, _, end) in pairs if m == message)
        starts = [start for start, _ in inside]
        out += [
            Slot(message, m.start(), m.end(), m.group())
            for m in _QUESTION_MARKER.finditer(text or "")
            if not _within(inside, starts, m.start())
        ]
    return out


def _within(spans: list[tuple[int, int]], starts: list[int], offset: int) -> bool:
    i = bisect_right(starts, offset) - 1
    return i >= 0 and offset < spans[i][1]


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

"""Recogniser 1: the optional request body field `ragtrim`.

    {"ragtrim": {"documents": ["...", ...], "question": "..."}}

Each document string is looked up verbatim, in order: the first occurrence at or after
the end of the previous document found, scanning messages in order. A document that
is not found (or is not a non-empty string) is ignored. When none is found the
recogniser does not match and the next one is tried. Without "question", the question
is the last user message minus the documents (chat) or "" (completion).

Locating is linear: a document that is not there costs a scan of the rest of the
prompt, so 20,000 absent documents in a 2 MB prompt cost 23.5 s on the event loop
(issue 23). All the searches of one request together scan at most
LOCATE_WORK_FACTOR × the prompt's characters (+ the documents' own); the documents
left when that is spent are not located (they stay in the prompt as they are,
uncompressed). The proxy caps the documents' number and size before this runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from proxy.prompt.segment.explicit import fallback_question, static_end
from proxy.prompt.segment.messages import texts
from proxy.prompt.segment.model import Segmentation, Slot

NAME = "body_field"
LOCATE_WORK_FACTOR = 4
Sources = Sequence[tuple[int | None, str | None]]


@dataclass(frozen=True)
class BodyField:
    field: Any = None

    def match_chat(self, messages: Sequence[Any]) -> Segmentation | None:
        slots = locate(list(enumerate(texts(messages))), self._documents())
        question = self._question()
        if question is None and slots:
            question = fallback_question(messages, slots)
        return self._segmentation(slots, question)

    def match_prompt(self, prompt: str) -> Segmentation | None:
        slots = locate([(None, prompt)], self._documents())
        return self._segmentation(slots, self._question())

    def _segmentation(self, slots: tuple[Slot, ...], question: str | None) -> Segmentation | None:
        if not slots:
            return None
        return Segmentation(NAME, slots, question or "", static_end(slots))

    def _documents(self) -> list[str]:
        docs = self.field.get("documents") if isinstance(self.field, dict) else None
        if not isinstance(docs, list):
            return []
        return [d for d in docs if isinstance(d, str) and d]

    def _question(self) -> str | None:
        question = self.field.get("question") if isinstance(self.field, dict) else None
        return question if isinstance(question, str) else None


def locate(sources: Sources, docs: Sequence[str]) -> tuple[Slot, ...]:
    """Slots for `docs` found in order in `sources` ((message, text) pairs)."""
    slots: list[Slot] = []
    index, offset = 0, 0
    left = LOCATE_WORK_FACTOR * sum(len(t) for _, t in sources if t) + sum(map(len, docs))
    for doc in docs:
        if left <= 0:
            break
        found, used = _find(sources, doc, index, offset, left)
        left -= used
        if found is not None:
            index, slot = found
            slots.append(slot)
            offset = slot.end
    return tuple(slots)


def _find(sources: Sources, doc: str, index: int, offset: int, left: int):
    """((message index, slot) or None, characters scanned): at most `left` scanned."""
    used = 0
    for i in range(index, len(sources)):
        message, text = sources[i]
        if text is None:
            continue
        begin = offset if i == index else 0
        stop = min(len(text), begin + (left - used) + len(doc))
        start = text.find(doc, begin, stop)
        if start >= 0:
            return (i, Slot(message, start, start + len(doc), doc)), used + start + len(doc) - begin
        used += max(0, stop - begin)
        if used >= left:
            break
    return None, used

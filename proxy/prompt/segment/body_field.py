"""Recogniser 1: the optional request body field `ragtrim`.

    {"ragtrim": {"documents": ["...", ...], "question": "..."}}

Each document string is looked up verbatim where the context is: from the end of the
prompt backwards, the last document first, each at its last occurrence before the one
found after it, in the messages that carry context (messages.CONTEXT_ROLES: never an
assistant turn). So the documents keep their order, and a copy that quotes one earlier
(the system prompt's instruction, an earlier turn) is left alone. A document that is
not found (or is not a non-empty string) is ignored. When none is found the recogniser
does not match and the next one is tried. Without "question", the question is the last
user message minus the documents (chat) or "" (completion).

Locating is linear: a document that is not there costs a scan of the rest of the
prompt. All the searches of one request together scan at most LOCATE_WORK_FACTOR × the
prompt's characters (+ the documents' own); the (earliest) documents left when that is
spent are not located (they stay in the prompt as they are, uncompressed). The proxy
caps the documents' number and size before this runs.
Why: docs/decisions/0020-prompt-recognition.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from proxy.prompt.segment.explicit import fallback_question, static_end
from proxy.prompt.segment.messages import context_texts
from proxy.prompt.segment.model import Segmentation, Slot

NAME = "body_field"
LOCATE_WORK_FACTOR = 4
Sources = Sequence[tuple[int | None, str | None]]


@dataclass(frozen=True)
class BodyField:
    field: Any = None

    def match_chat(self, messages: Sequence[Any]) -> Segmentation | None:
        slots = locate(list(enumerate(context_texts(messages))), self._documents())
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
    """Slots for `docs` found in order in `sources` ((message, text) pairs), searched
    from the end backwards (module docstring)."""
    slots: list[Slot] = []
    index, limit = len(sources) - 1, None  # the next slot ends at or before (index, limit)
    left = LOCATE_WORK_FACTOR * sum(len(t) for _, t in sources if t) + sum(map(len, docs))
    for doc in reversed(docs):
        if left <= 0:
            break
        found, used = _rfind(sources, doc, index, limit, left)
        left -= used
        if found is not None:
            index, slot = found
            slots.append(slot)
            limit = slot.start
    return tuple(reversed(slots))


def _rfind(sources: Sources, doc: str, index: int, limit: int | None, left: int):
    """((message index, slot) or None, characters scanned): the last occurrence of `doc`
    ending at or before (index, limit); at most `left` characters scanned."""
    used = 0
    for i in range(index, -1, -1):
        message, text = sources[i]
        if text is None:
            continue
        end = limit if i == index and limit is not None else len(text)
        begin = max(0, end - (left - used) - len(doc))
        start = text.rfind(doc, begin, end)
        if start >= 0:
            return (i, Slot(message, start, start + len(doc), doc)), used + end - start
        used += end - begin
        if used >= left:
            break
    return None, used

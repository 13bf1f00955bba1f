"""Where the retrieved context sits in a prompt.

A `Segmentation` names every context document by its location — message index
(None for a completion prompt) and character offsets into that text — so the
proxy can swap each document for its compressed form without touching one other
byte. `markers` are spans that go when the segmentation is applied, compressed or
not (the `<ragtrim:doc>` tags around documents): whoever applies a segmentation
needs no knowledge of which recogniser made it.
"""

from __future__ import annotations

from dataclasses import dataclass

Position = tuple[int | None, int]  # (message index or None for a prompt, offset)


MESSAGES = "messages"  # a slot's source: the chat messages (or the completion prompt)
DOCUMENTS = "documents"  # vLLM's chat `documents` field (documents.py)


@dataclass(frozen=True)
class Slot:
    """`source[start:end]` of message `message` (None = the prompt); `text` is that span.
    `source` DOCUMENTS: `message` is the index in the body's `documents` list instead
    (vLLM hands those to the chat template, outside the messages)."""

    message: int | None
    start: int
    end: int
    text: str
    source: str = MESSAGES


@dataclass(frozen=True)
class Segmentation:
    """What a recogniser found. `static_end` is where the static instruction ends
    (everything before it is the template's own text); None when there is none.
    `markers` are removed whenever the segmentation is applied."""

    template: str
    documents: tuple[Slot, ...]
    question: str
    static_end: Position | None = None
    markers: tuple[Slot, ...] = ()

    @property
    def texts(self) -> list[str]:
        return [slot.text for slot in self.documents]

    def must_apply(self, new_texts: list[str]) -> bool:
        """Whether the prompt changes: new document texts, or markers to remove."""
        return bool(self.markers) or new_texts != self.texts

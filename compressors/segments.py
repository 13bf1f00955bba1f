"""Where the retrieved context sits in a prompt.

A `Segmentation` names every context document by its location — message index
(None for a completion prompt) and character offsets into that text — so the
proxy can swap each document for its compressed form without touching one other
byte. Segmenters (templates, tags, body field, patterns) live in
`compressors/templates/`; `segment_chat()` / `segment_prompt()` there try them in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Slot:
    """One document in message `message` (None = prompt): `source[start:end]` is replaced.

    `text == source[start:end]`, except for tagged documents, whose slot also covers
    the `<ragtrim:doc>` markers (so replacing it strips them) while `text` is the inside.
    """

    message: int | None
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Segmentation:
    """What a segmenter found. `static_end` is (message, offset): the static
    instruction is everything before it (system text up to the context marker);
    None when the template has no static part."""

    template: str
    documents: tuple[Slot, ...]
    question: str
    static_end: tuple[int | None, int] | None = None


def replace_slots(text: str, slots: Sequence[tuple[Slot, str]]) -> str:
    """Replace each slot of one text by its new content, right to left."""
    for slot, new in sorted(slots, key=lambda s: s[0].start, reverse=True):
        text = text[: slot.start] + new + text[slot.end :]
    return text

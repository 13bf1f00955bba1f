"""Putting new document texts back: every byte outside the document slots is kept.

`new_texts[i]` replaces `seg.documents[i]`. For a tags segmentation the question
markers are removed as well (see tags.py). Chat: only the messages that change are
copied; the input list and its messages are never mutated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from compressors.segments import Segmentation, Slot
from compressors.templates._messages import message_text, with_text
from compressors.templates._splice import splice
from compressors.templates.tags import NAME as TAGS
from compressors.templates.tags import marker_slots


def apply_prompt(prompt: str, seg: Segmentation, new_texts: Sequence[str]) -> str:
    pairs = _pairs(seg, new_texts)
    if any(slot.message is not None for slot, _ in pairs):
        raise ValueError("chat segmentation applied to a completion prompt")
    return splice(prompt, pairs + _markers(prompt, None, seg))


def apply_chat(messages: Sequence[Any], seg: Segmentation, new_texts: Sequence[str]) -> list[Any]:
    changes: dict[int, list[tuple[Slot, str]]] = {}
    for slot, new in _pairs(seg, new_texts):
        if slot.message is None or not 0 <= slot.message < len(messages):
            raise ValueError(f"slot outside the messages: {slot}")
        changes.setdefault(slot.message, []).append((slot, new))
    out = list(messages)
    for index, message in enumerate(messages):
        text = message_text(message)
        if text is None and index in changes:
            raise ValueError(f"message {index} has no text to change")
        pairs = changes.get(index, []) + _markers(text, index, seg)
        if pairs:
            out[index] = with_text(message, splice(text, pairs))
    return out


def _pairs(seg: Segmentation, new_texts: Sequence[str]) -> list[tuple[Slot, str]]:
    if len(new_texts) != len(seg.documents):
        raise ValueError(f"{len(new_texts)} texts for {len(seg.documents)} documents")
    return list(zip(seg.documents, new_texts, strict=True))


def _markers(text: str | None, message: int | None, seg: Segmentation) -> list[tuple[Slot, str]]:
    if seg.template != TAGS or text is None:
        return []
    return [(slot, "") for slot in marker_slots(text, message, seg.documents)]

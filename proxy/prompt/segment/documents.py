"""vLLM's `documents` field on chat: the retrieved documents, outside the messages.

    {"messages": [...], "documents": [{"title": "...", "text": "..."}, ...]}

vLLM hands the list to the chat template, which renders it where the model expects its
RAG context (Command-R, Granite): the client put the documents there itself, so no
recogniser has to find them. Each entry's text is one document: its "text", else its
"content" (the keys the templates read), when that is a non-empty string; an entry
without one (not a dict, another shape) is left as it came. A slot addresses the whole
text of entry `message` (Slot.source DOCUMENTS), so compressing it rewrites that
string and nothing else of the entry (its title and other keys stay).

The field's documents join what the recognisers found in the messages (they come first:
templates render them before the conversation); the question and `static_end` stay the
messages' own. Alone, the question is the last user message and there is no
`static_end`: where the template renders the documents is the template's business, so
the static prefix is the leading system messages (proxy/prompt/prefix/span.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from proxy.prompt.segment.explicit import fallback_question
from proxy.prompt.segment.model import DOCUMENTS, Segmentation, Slot
from proxy.prompt.segment.splice import pairs_of

NAME = "documents"
TEXT_KEYS = ("text", "content")


def field_slots(documents: Any) -> tuple[Slot, ...]:
    """A slot for each entry of the `documents` field that has a text."""
    if not isinstance(documents, list):
        return ()
    slots = []
    for index, entry in enumerate(documents):
        key = text_key(entry)
        if key is not None:
            text = entry[key]
            slots.append(Slot(index, 0, len(text), text, DOCUMENTS))
    return tuple(slots)


def text_key(entry: Any) -> str | None:
    """The key holding an entry's document text, or None when it has none."""
    if not isinstance(entry, dict):
        return None
    for key in TEXT_KEYS:
        value = entry.get(key)
        if isinstance(value, str):
            return key if value else None
    return None


def with_documents(
    seg: Segmentation | None, documents: Any, messages: Sequence[Any]
) -> Segmentation | None:
    """`seg` (the messages' segmentation, or None) with the field's documents added."""
    slots = field_slots(documents)
    if not slots:
        return seg
    if seg is None:
        return Segmentation(NAME, slots, fallback_question(messages, ()))
    return dataclasses.replace(
        seg, template=f"{seg.template}+{NAME}", documents=slots + seg.documents
    )


def apply_documents(
    documents: list[Any], seg: Segmentation, new_texts: Sequence[str]
) -> list[Any] | None:
    """A copy of the `documents` field with the new texts in (changed entries copied),
    or None when `seg` has no slot there."""
    pairs = pairs_of(seg, new_texts, DOCUMENTS)
    if not pairs:
        return None
    out = list(documents)
    for slot, new in pairs:
        index = slot.message if isinstance(slot.message, int) else -1
        entry = documents[index] if 0 <= index < len(documents) else None
        key = text_key(entry)
        if key is None or entry[key] != slot.text:
            raise ValueError(f"documents entry {slot.message} is not the one segmented")
        out[index] = {**entry, key: new}
    return out

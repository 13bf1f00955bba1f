"""Putting new document texts back: every byte outside the slots is kept.

`new_texts[i]` replaces `seg.documents[i]`; every marker slot is replaced by "". Chat:
only the messages that change are copied; the input list and its messages are never
mutated. Each text is spliced in one pass (linear in its length). `apply_chat` puts
back the slots in the messages only: those of vLLM's `documents` field go back through
documents.apply_documents (the body adapter calls both).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from proxy.prompt.segment.messages import message_text, with_text
from proxy.prompt.segment.model import MESSAGES, Segmentation, Slot

Pairs = list[tuple[Slot, str]]


def splice(text: str, pairs: Sequence[tuple[Slot, str]]) -> str:
    """`text` with each slot replaced by its new content (slots must not overlap)."""
    out, pos = [], 0
    for slot, new in sorted(pairs, key=lambda pair: pair[0].start):
        if slot.start < pos or slot.end > len(text):
            raise ValueError(f"slot out of place: {slot}")
        out += (text[pos : slot.start], new)
        pos = slot.end
    out.append(text[pos:])
    return "".join(out)


def apply_prompt(prompt: str, seg: Segmentation, new_texts: Sequence[str]) -> str:
    pairs = pairs_of(seg, new_texts, MESSAGES)
    if any(slot.message is not None for slot, _ in pairs):
        raise ValueError("chat segmentation applied to a completion prompt")
    return splice(prompt, pairs)


def apply_chat(messages: Sequence[Any], seg: Segmentation, new_texts: Sequence[str]) -> list[Any]:
    changes: dict[int, Pairs] = {}
    for slot, new in pairs_of(seg, new_texts, MESSAGES):
        if slot.message is None or not 0 <= slot.message < len(messages):
            raise ValueError(f"slot outside the messages: {slot}")
        changes.setdefault(slot.message, []).append((slot, new))
    out = list(messages)
    for index, pairs in changes.items():
        text = message_text(messages[index])
        if text is None:
            raise ValueError(f"message {index} has no text to change")
        out[index] = with_text(messages[index], splice(text, pairs))
    return out


def pairs_of(seg: Segmentation, new_texts: Sequence[str], source: str) -> Pairs:
    """(slot, new text) for every document and marker of `seg` in `source`."""
    if len(new_texts) != len(seg.documents):
        raise ValueError(f"{len(new_texts)} texts for {len(seg.documents)} documents")
    pairs = [*zip(seg.documents, new_texts, strict=True), *((m, "") for m in seg.markers)]
    return [(slot, new) for slot, new in pairs if slot.source == source]

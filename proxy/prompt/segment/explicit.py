"""Shared rules for the explicit recognisers (body field, tags, patterns).

They know where the documents are but not where the instruction ends, so:
  static_end  the earliest known variable part: the first document, or the question
              when its position is known and comes first
  question    when none is given: the last user message without its document spans
              (chat), or "" (completion)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from proxy.prompt.segment.messages import last_user_index, message_text
from proxy.prompt.segment.model import Slot
from proxy.prompt.segment.splice import splice

Position = tuple[int | None, int]


def static_end(slots: Sequence[Slot], question_at: Position | None = None) -> Position | None:
    positions = [(s.message, s.start) for s in slots]
    if question_at is not None:
        positions.append(question_at)
    return min(positions, key=lambda p: (p[0] or 0, p[1])) if positions else None


def fallback_question(messages: Sequence[Any], slots: Sequence[Slot]) -> str:
    index = last_user_index(messages)
    text = None if index is None else message_text(messages[index])
    if text is None:
        return ""
    own = [(s, "") for s in slots if s.message == index]
    return splice(text, own).strip()

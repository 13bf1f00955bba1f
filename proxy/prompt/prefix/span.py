"""The static span of a request: the one definition, used by canonicalization, the
prefix key and the warm-up replay.

For chat, the static part is every leading system/developer message; or, with the
segmenter's `static_end=(i, off)`, every message before `i` plus message `i`'s text up
to `off`. A completion prompt has one only with `static_end` (its text up to `off`).
A message's text is read exactly as the segmenter reads it (proxy.prompt.segment), so
`static_end` offsets index the same string.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from proxy.prompt.segment import SYSTEM_ROLES, Position, message_text, role, with_text


def static_span(messages: Sequence[Any], static_end: Position | None) -> tuple[int, int | None]:
    """(number of whole static messages, offset into the next one or None)."""
    if static_end is not None and static_end[0] is not None:
        index, offset = static_end
        if 0 <= index < len(messages) and message_text(messages[index]) is not None:
            return index, offset
    count = 0
    while count < len(messages) and (role(messages[count]) or "") in SYSTEM_ROLES:
        count += 1
    return count, None


def static_messages(messages: Sequence[Any], static_end: Position | None) -> list[Any]:
    """The static part of a chat as messages (the last one cut at the offset)."""
    whole, offset = static_span(messages, static_end)
    head = list(messages[:whole])
    if offset is not None:
        head.append(with_text(messages[whole], (message_text(messages[whole]) or "")[:offset]))
    return head


def static_prompt(prompt: str, static_end: Position | None) -> str | None:
    """The static part of a completion prompt, or None when it has none."""
    return None if static_end is None else prompt[: static_end[1]]

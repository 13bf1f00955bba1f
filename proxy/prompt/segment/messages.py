"""Reading and writing the text of OpenAI chat messages.

A message's text is its string `content`, or the one text part of a list `content`
(other parts, e.g. images, are kept as they are). A list with several text parts has
no text here: no recogniser looks inside it, so it passes through untouched.

Only messages whose role carries context (CONTEXT_ROLES: the system prompt, the user's
turns, tool results) are searched for documents (`context_texts`). An assistant turn is
the model's own output and is never searched. Why: docs/decisions/0020-prompt-recognition.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

SYSTEM_ROLES = ("system", "developer")
CONTEXT_ROLES = (*SYSTEM_ROLES, "user", "tool", "function")


def message_text(message: Any) -> str | None:
    """The message's text, or None when it has none we can address by offsets."""
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    index = _text_part_index(content)
    return None if index is None else content[index]["text"]


def with_text(message: dict, text: str) -> dict:
    """A copy of `message` whose text is `text`; everything else is shared."""
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": text}
    index = _text_part_index(content)
    if index is None:
        raise ValueError("message has no single text to replace")
    parts = list(content)
    parts[index] = {**parts[index], "text": text}
    return {**message, "content": parts}


def texts(messages: Sequence[Any]) -> list[str | None]:
    return [message_text(m) for m in messages]


def context_texts(messages: Sequence[Any]) -> list[str | None]:
    """Each message's text where its role carries context, else None (module docstring)."""
    return [message_text(m) if role(m) in CONTEXT_ROLES else None for m in messages]


def role(message: Any) -> str | None:
    return message.get("role") if isinstance(message, dict) else None


def last_user_index(messages: Sequence[Any]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if role(messages[i]) == "user":
            return i
    return None


def _text_part_index(content: Any) -> int | None:
    if not isinstance(content, list):
        return None
    found = [i for i, part in enumerate(content) if _is_text_part(part)]
    return found[0] if len(found) == 1 else None


def _is_text_part(part: Any) -> bool:
    if not isinstance(part, dict):
        return False
    return part.get("type") == "text" and isinstance(part.get("text"), str)

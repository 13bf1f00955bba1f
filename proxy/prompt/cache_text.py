"""A candidate prompt as the text its prefix-cache blocks are hashed from.

The gate asks "how much of this prompt does a backend hold?" for the client's prompt and
for a compressed form of it, before anything is sent (cache/forwarded.py). Both are
hashed from this text: the tools, then each message's role and text in order (what a
chat template renders, less the template's own tokens), or a completion's prompt. It
is hashed before canonicalization (proxy/stages/canonicalize.py): canonicalization is
deterministic, so equal texts here are equal bytes upstream, and the record stays
consistent with itself. A message without addressable text (an image part, a tool call)
renders its JSON: it changes the blocks as it changes the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from proxy.prompt.body import ChatPrompt, CompletionPrompt, Prompt
from proxy.prompt.segment import Segmentation, apply_chat, apply_prompt, message_text

ROLE_END = "\x1f"  # between a message's role and its text
MESSAGE_END = "\x1e"


def cache_text(
    prompt: Prompt, seg: Segmentation | None = None, texts: Sequence[str] | None = None
) -> str | None:
    """The prompt's text, with the documents of `seg` replaced by `texts` when given;
    None for a body with no text prompt (prompt_embeds, a batch, a pass-through)."""
    replace = seg is not None and texts is not None and list(texts) != seg.texts
    if isinstance(prompt, ChatPrompt):
        messages = prompt.body.get("messages") or []
        if replace:
            messages = apply_chat(messages, seg, texts)  # type: ignore[arg-type]
        return _tools(prompt.body.get("tools")) + "".join(map(_message, messages))
    if isinstance(prompt, CompletionPrompt):
        text = prompt.text()
        if text is not None and replace:
            text = apply_prompt(text, seg, texts)  # type: ignore[arg-type]
        return text
    return None


def _tools(tools: Any) -> str:
    return orjson.dumps(tools).decode() + MESSAGE_END if tools else ""


def _message(message: Any) -> str:
    if not isinstance(message, dict):
        return orjson.dumps(message, default=str).decode() + MESSAGE_END
    text = message_text(message)
    if text is None or message.get("tool_calls"):
        text = orjson.dumps(message.get("content"), default=str).decode()
        if message.get("tool_calls"):
            text += orjson.dumps(message["tool_calls"], default=str).decode()
    return f"{message.get('role', '')}{ROLE_END}{text}{MESSAGE_END}"

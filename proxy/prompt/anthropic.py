"""The Anthropic Messages API body (/v1/messages) as chat messages (proxy/prompt/view.py),
so context in `system` or in content blocks is found as on chat.

    system: "text"                 a system message (the static prefix)
    system: [{"type": "text"}...]  a system message per text block
    messages[k].content: "text"    a message of its role
    messages[k].content: [blocks]  a message per block, of the message's role: a text
                                   block's text; a tool_result's content (a string, or
                                   its text blocks) as tool messages; any other block
                                   (image, tool_use, thinking) a message without text

A message per block keeps every text addressable (chat reads one text per message):
the last text block of the last user turn is "the last user message" the templates
and the fallback question look at, which is where LangChain and LlamaIndex put it.
vLLM builds the same order before the chat template (system first).
"""

from __future__ import annotations

from typing import Any

from proxy.prompt.segment import Position, message_text
from proxy.prompt.view import Address, View, ViewPrompt

Message = tuple[dict[str, Any], Address | None]
BILLING_HEADER = "x-anthropic-billing-header"  # a block vLLM leaves out of the system prompt


class MessagesPrompt(ViewPrompt):
    def replay(self, static_end: Position | None) -> dict[str, Any] | None:
        """vLLM joins the system blocks into one system message (and drops Claude Code's
        per-request billing header block): the replay must render the same, so it is
        given only when the static part is all system text."""
        replay = super().replay(static_end)
        static = replay["messages"] if replay is not None else []
        if not static or any(m.get("role") != "system" for m in static):
            return None
        texts = [message_text(m) or "" for m in static]
        joined = "".join(t for t in texts if not t.startswith(BILLING_HEADER))
        return {**replay, "messages": [{"role": "system", "content": joined}]}

    def view(self) -> View:
        out: list[Message] = []
        system = self.body.get("system")
        if isinstance(system, str):
            out.append(({"role": "system", "content": system}, ("system",)))
        elif isinstance(system, list):
            out += [_block("system", block, ("system", i)) for i, block in enumerate(system)]
        messages = self.body.get("messages")
        for k, message in enumerate(messages if isinstance(messages, list) else []):
            out += _messages(message, ("messages", k))
        return [m for m, _ in out], [a for _, a in out]


def _messages(message: Any, at: Address) -> list[Message]:
    role = message.get("role") if isinstance(message, dict) else None
    if not isinstance(role, str):
        return [({"role": "item", "item": message}, None)]
    content = message.get("content")
    if isinstance(content, str):
        return [({"role": role, "content": content}, (*at, "content"))]
    if not isinstance(content, list):
        return [({"role": role, "content": None, "parts": content}, None)]
    out = []
    for b, block in enumerate(content):
        where = (*at, "content", b)
        if isinstance(block, dict) and block.get("type") == "tool_result":
            out += _tool_result(block, where)
        else:
            out.append(_block(role, block, where))
    return out


def _tool_result(block: dict[str, Any], at: Address) -> list[Message]:
    content = block.get("content")
    if isinstance(content, str):
        return [({"role": "tool", "content": content}, (*at, "content"))]
    if isinstance(content, list):
        return [_block("tool", part, (*at, "content", j)) for j, part in enumerate(content)]
    return [({"role": "item", "item": block}, None)]


def _block(role: str, block: Any, at: Address) -> Message:
    """A text block as a message of `role`; any other block as a message without text."""
    if (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ):
        return {"role": role, "content": block["text"]}, (*at, "text")
    return {"role": "item", "item": block}, None

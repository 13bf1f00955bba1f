"""The Responses API body (/v1/responses) as chat messages (proxy/prompt/view.py), so
the recognisers that find context on chat (framework templates, tags, patterns, the
`ragtrim` field) find it in `instructions` and `input` too.

    instructions                         a system message (the static prefix)
    input: "text"                        a user message
    input: [{"role": r, "content": c}]   a message of role r; c a string, or a list of
                                         parts with exactly one text part (input_text,
                                         output_text or text), read as that text
    input: [{"type": "function_call_output", "output": "text"}]    a tool message
    any other item                       a message without text (kept in its place)

That view is what vLLM itself builds before the chat template (instructions first, as
the system message), so offsets and the static span mean what they mean on chat.
"""

from __future__ import annotations

from typing import Any

from proxy.prompt.view import Address, View, ViewPrompt

TEXT_PARTS = ("input_text", "output_text", "text")


class ResponsesPrompt(ViewPrompt):
    def view(self) -> View:
        messages: list[dict[str, Any]] = []
        where: list[Address | None] = []
        instructions = self.body.get("instructions")
        if isinstance(instructions, str):
            messages.append({"role": "system", "content": instructions})
            where.append(("instructions",))
        items = self.body.get("input")
        if isinstance(items, str):
            messages.append({"role": "user", "content": items})
            where.append(("input",))
        elif isinstance(items, list):
            for index, item in enumerate(items):
                message, address = _item_message(item)
                messages.append(message)
                where.append(None if address is None else ("input", index, *address))
        return messages, where


def _item_message(item: Any) -> tuple[dict[str, Any], Address | None]:
    """One input item as a chat message, and where its text is inside the item."""
    if not isinstance(item, dict):
        return {"role": "item", "item": item}, None
    if item.get("type") == "function_call_output" and isinstance(item.get("output"), str):
        return {"role": "tool", "content": item["output"]}, ("output",)
    role, content = item.get("role"), item.get("content")
    if not isinstance(role, str) or item.get("type", "message") != "message":
        return {"role": "item", "item": item}, None  # kept whole: a static one keys as JSON
    if isinstance(content, str):
        return {"role": role, "content": content}, ("content",)
    return one_text(role, content, TEXT_PARTS)


def one_text(
    role: str, content: Any, kinds: tuple[str, ...]
) -> tuple[dict[str, Any], Address | None]:
    """A message of `role` from a list of parts: the text of its one text part (of a
    type in `kinds`), or no text (its parts kept, for the key) when it has not one."""
    listed = content if isinstance(content, list) else []
    parts = [i for i, part in enumerate(listed) if _is_text(part, kinds)]
    if len(parts) != 1:
        return {"role": role, "content": None, "parts": content}, None
    return {"role": role, "content": content[parts[0]]["text"]}, ("content", parts[0], "text")


def _is_text(part: Any, kinds: tuple[str, ...]) -> bool:
    if not isinstance(part, dict):
        return False
    return part.get("type") in kinds and isinstance(part.get("text"), str)

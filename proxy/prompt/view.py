"""A body whose prompt is chat messages under other names (the Responses and Messages
APIs), read through a chat-message view so every stage works as on chat.

A subclass says only how its body reads as chat messages (`view`): each message of the
view, and where its text lives in the body (an `Address`, None when it has no one text
there). Segmenting, applying documents, canonicalizing the static prefix and the
warm-up replay are chat's own functions over that view; every text they change is
written back at its own place (`_write`), through `set`, copying only the containers
on its path: nothing else of the body changes, and an unchanged body goes upstream as
the client's bytes.

Not a ChatPrompt: proxy/prompt/cache_text.py gives None for it (no cache-aware pricing
on these routes: the gate prices them as fresh). The replay is a chat request of the
static messages, and none when the body has tools (theirs are not chat tools, so the
replay would render another prefix). Usage is never added: both APIs send it unasked.
"""

from __future__ import annotations

from typing import Any

from proxy.prompt.base import Prompt
from proxy.prompt.prefix import (
    CanonicalResult,
    CanonicalRules,
    canonicalize_chat,
    static_messages,
)
from proxy.prompt.segment import Position, Segmentation, Segmenter, apply_chat, message_text

Address = tuple[Any, ...]  # the path of a text in the body: ("input", 2, "content", 0, "text")
View = tuple[list[dict[str, Any]], list[Address | None]]


class ViewPrompt(Prompt):
    def view(self) -> View:
        """(the body as chat messages, where each message's text lives in the body)."""
        raise NotImplementedError

    def request_usage(self) -> bool:
        return False  # sent unasked (response.completed, message_start/message_delta)

    def segment(self, segmenter: Segmenter, field: dict | None) -> Segmentation | None:
        messages, _ = self.view()
        return segmenter.chat(messages, field) if messages else None

    def apply(self, seg: Segmentation, texts: list[str]) -> None:
        messages, where = self.view()
        self._write(messages, apply_chat(messages, seg, texts), where)

    def canonicalize(self, rules: CanonicalRules, end: Position | None) -> CanonicalResult | None:
        messages, where = self.view()
        if not messages:
            return None
        result = canonicalize_chat(messages, self.body.get("tools"), rules, end)
        if result.changed:
            self._write(messages, result.messages, where)
            if result.tools is not self.body.get("tools"):
                self.set("tools", result.tools)
        return result

    def replay(self, static_end: Position | None) -> dict[str, Any] | None:
        if self.body.get("tools"):
            return None
        static = static_messages(self.view()[0], static_end)
        return {**self._replay_head(), "messages": static} if static else None

    def _write(self, old: list[Any], new: list[Any], where: list[Address | None]) -> None:
        """Every message text that changed, written back where it came from."""
        for message, before, address in zip(new, old, where, strict=True):
            text = message_text(message)
            if address is not None and text is not None and text != message_text(before):
                self._put(address, text)

    def _put(self, address: Address, text: str) -> None:
        head, *path = address
        self.set(head, _copied(self.body[head], path, text) if path else text)


def _copied(container: Any, path: list[Any], text: str) -> Any:
    """A copy of `container` with `text` at `path`; only the containers on it copied."""
    key, *rest = path
    out = list(container) if isinstance(container, list) else dict(container)
    out[key] = text if not rest else _copied(container[key], rest, text)
    return out

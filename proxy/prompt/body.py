"""The request body as the stages see it: one adapter per route, and the one place the
body is rewritten.

Stages ask the prompt to segment itself, take compressed documents back, canonicalize
its static prefix, give its static part as a replay request, carry a tenant's salt or
ask vLLM for usage; none of them branches on the route or writes `body[...]` itself.
`modified` records whether anything changed: unchanged, the client's own bytes go
upstream (no re-serialisation, no float or key-order drift).

    ChatPrompt        /v1/chat/completions: `messages` (+ `tools`)
    DocumentsChatPrompt  the same with vLLM's `documents` field (its entries' texts are
                      documents: segment/documents.py); cache_text gives None for it
    CompletionPrompt  /v1/completions: `prompt`, a string or a list of exactly one (a
                      body with only `prompt_embeds` has no text: relayed as it came)
    ResponsesPrompt   /v1/responses: `instructions` and `input` read as chat (responses.py)
    MessagesPrompt    /v1/messages: `system` and content blocks read as chat (anthropic.py)
    Prompt            anything else: relayed as it came (base.py)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from proxy.prompt.anthropic import MessagesPrompt
from proxy.prompt.base import Prompt
from proxy.prompt.prefix import (
    CanonicalResult,
    CanonicalRules,
    canonicalize_chat,
    canonicalize_prompt,
    static_messages,
    static_prompt,
)
from proxy.prompt.responses import ResponsesPrompt
from proxy.prompt.segment import (
    Position,
    Segmentation,
    Segmenter,
    apply_chat,
    apply_documents,
    apply_prompt,
    message_text,
    with_documents,
)
from proxy.prompt.segment.documents import field_slots
from proxy.prompt.segment.tags import DOC, QUESTION

# As the tags recogniser reads them (proxy/prompt/segment/tags.py): a document is an
# opening tag and the next closing one; question tags go wherever a document does.
_DOC_PAIR = re.compile(re.escape(DOC[0]) + "(.*?)" + re.escape(DOC[1]), re.DOTALL)
_QUESTION_TAG = re.compile("|".join(re.escape(tag) for tag in QUESTION))


class ChatBody(Prompt):
    """/v1/chat/completions: what ChatPrompt and DocumentsChatPrompt share (all of it)."""

    def segment(self, segmenter: Segmenter, field: dict | None) -> Segmentation | None:
        stripped = strip_multipart_tags(self.body["messages"])
        if stripped is not None:
            self.set("messages", stripped)
        seg = segmenter.chat(self.body["messages"], field)
        return with_documents(seg, self.body.get("documents"), self.body["messages"])

    def apply(self, seg: Segmentation, texts: list[str]) -> None:
        self.set("messages", apply_chat(self.body["messages"], seg, texts))
        documents = self.body.get("documents")
        if isinstance(documents, list):  # vLLM's field: a segmentation may hold its texts
            changed = apply_documents(documents, seg, texts)
            if changed is not None:
                self.set("documents", changed)

    def canonicalize(self, rules: CanonicalRules, end: Position | None) -> CanonicalResult:
        result = canonicalize_chat(self.body["messages"], self.body.get("tools"), rules, end)
        if result.changed:
            self.set("messages", result.messages)
            if result.tools is not None:
                self.set("tools", result.tools)
        return result

    def replay(self, static_end: Position | None) -> dict[str, Any] | None:
        static = static_messages(self.body["messages"], static_end)
        if not static:
            return None
        tools = {"tools": self.body["tools"]} if self.body.get("tools") else {}
        return {**self._replay_head(), **tools, "messages": static}


class ChatPrompt(ChatBody):
    """A chat body; proxy/prompt/cache_text.py renders it (tools, then the messages)."""


class DocumentsChatPrompt(ChatBody):
    """A chat body with vLLM's `documents` field (segment/documents.py). Not a ChatPrompt:
    cache_text renders no `documents`, so it gives None for this body: the gate prices
    it as fresh, every time, and the memo gives the same compressed texts back.
    Why: docs/decisions/0027-reusing-document-work.md."""


class CompletionPrompt(Prompt):
    def text(self) -> str | None:
        """The one prompt text: a string, or a list holding exactly one string (what
        langchain_openai.OpenAI and other batching clients send for one prompt)."""
        prompt = self.body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1:
            prompt = prompt[0]
        return prompt if isinstance(prompt, str) else None

    def segment(self, segmenter: Segmenter, field: dict | None) -> Segmentation | None:
        text = self.text()
        return None if text is None else segmenter.prompt(text, field)

    def apply(self, seg: Segmentation, texts: list[str]) -> None:
        new = apply_prompt(self.text() or "", seg, texts)
        self.set("prompt", [new] if isinstance(self.body["prompt"], list) else new)

    def canonicalize(self, rules: CanonicalRules, end: Position | None) -> CanonicalResult | None:
        if not isinstance(self.body.get("prompt"), str):
            return None
        result = canonicalize_prompt(self.body["prompt"], rules, end)
        if result.changed:
            self.set("prompt", result.messages)
        return result

    def replay(self, static_end: Position | None) -> dict[str, Any] | None:
        if not isinstance(self.body.get("prompt"), str):  # a batch or prompt_embeds only
            return None
        static = static_prompt(self.body["prompt"], static_end)
        return None if static is None else {**self._replay_head(), "prompt": static}


def strip_multipart_tags(messages: list[Any]) -> list[Any] | None:
    """The messages with ragtrim's tags removed from the text parts of a content list
    that has several (None when there were none). Segmentation addresses one text per
    message (proxy/prompt/segment/messages.py), so those documents are not compressed,
    but their tags must not reach the model either. Tags go as the tags
    recogniser would take them from one text: a message with a closed document tag
    pair loses its pairs and its question tags; a stray tag alone stays."""
    out, changed = list(messages), False
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list) or message_text(message) is not None:
            continue  # a string or a single text part: the tags recogniser's own
        texts = [_text(part) for part in content]
        if not any(text is not None and _DOC_PAIR.search(text) for text in texts):
            continue
        parts = [
            part if text is None else {**part, "text": _untagged(text)}
            for part, text in zip(content, texts, strict=True)
        ]
        if parts != content:
            out[i], changed = {**message, "content": parts}, True
    return out if changed else None


def _text(part: Any) -> str | None:
    text = part.get("text") if isinstance(part, dict) and part.get("type") == "text" else None
    return text if isinstance(text, str) else None


def _untagged(text: str) -> str:
    return _QUESTION_TAG.sub("", _DOC_PAIR.sub(r"\1", text))


ADAPTERS: Mapping[str, type[Prompt]] = MappingProxyType(
    {
        "chat": ChatPrompt,
        "completions": CompletionPrompt,
        "responses": ResponsesPrompt,
        "messages": MessagesPrompt,
    }
)


def prompt_for(route: str, body: dict[str, Any]) -> Prompt:
    if route == "chat" and field_slots(body.get("documents")):
        return DocumentsChatPrompt(body)
    return ADAPTERS.get(route, Prompt)(body)

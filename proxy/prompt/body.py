"""The request body as the stages see it: one adapter per route, and the one place the
body is rewritten.

Stages ask the prompt to segment itself, take compressed documents back, canonicalize
its static prefix, give its static part as a replay request, carry a tenant's salt or
ask vLLM for usage; none of them branches on the route or writes `body[...]` itself.
`modified` records whether anything changed: unchanged, the client's own bytes go
upstream (no re-serialisation, no float or key-order drift).

    ChatPrompt        /v1/chat/completions: `messages` (+ `tools`), and vLLM's `documents`
                      field (its entries' texts are documents: segment/documents.py)
    CompletionPrompt  /v1/completions: `prompt`, a string or a list of exactly one (a
                      body with only `prompt_embeds` has no text: relayed as it came)
    Prompt            anything else: relayed as it came
"""

from __future__ import annotations

import re
from typing import Any

from proxy.prompt.exact_json import dumps
from proxy.prompt.prefix import (
    CanonicalResult,
    CanonicalRules,
    canonicalize_chat,
    canonicalize_prompt,
    static_messages,
    static_prompt,
)
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
from proxy.prompt.segment.tags import DOC, QUESTION

# As the tags recogniser reads them (proxy/prompt/segment/tags.py): a document is an
# opening tag and the next closing one; question tags go wherever a document does.
_DOC_PAIR = re.compile(re.escape(DOC[0]) + "(.*?)" + re.escape(DOC[1]), re.DOTALL)
_QUESTION_TAG = re.compile("|".join(re.escape(tag) for tag in QUESTION))


class Prompt:
    """A body ragtrim does not look into (the pass-through routes)."""

    def __init__(self, body: dict[str, Any]):
        self.body = body
        self.modified = False

    @property
    def model(self) -> str | None:
        """The model asked for; None when the body names none (vLLM then answers with
        its served model: issue 31) or on a pass-through route's body."""
        model = self.body.get("model")
        return model if isinstance(model, str) else None

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    def set(self, key: str, value: Any) -> None:
        """THE write: every change to the body goes through here (or `remove`)."""
        if self.body.get(key) != value:
            self.body[key] = value
            self.modified = True

    def remove(self, key: str) -> None:
        if key in self.body:
            del self.body[key]
            self.modified = True

    def encode(self, raw: bytes) -> bytes:
        """The bytes to send upstream: the client's own unless something changed.
        Integers beyond 64 bits stay exact (proxy/prompt/exact_json.py), at orjson's
        speed: this runs on the event loop (issue 33)."""
        if not self.modified:
            return raw
        return dumps(self.body)

    def request_usage(self) -> bool:
        """Make a streamed request report usage; True when the client had not asked.
        Only the final usage chunk: vLLM honours `continuous_usage_stats` only with
        `include_usage`, so a client that sent it alone gets no usage from vLLM, and
        must get none through ragtrim either (issue 31: usage on every chunk)."""
        options = self.body.get("stream_options") or {}
        if not self.stream or not isinstance(options, dict) or options.get("include_usage"):
            return False
        added = {**options, "include_usage": True}
        if options.get("continuous_usage_stats"):
            added["continuous_usage_stats"] = False
        self.set("stream_options", added)
        return True

    def segment(self, segmenter: Segmenter, field: dict | None) -> Segmentation | None:
        return None

    def apply(self, seg: Segmentation, texts: list[str]) -> None:
        raise ValueError("nothing to apply a segmentation to")

    def canonicalize(self, rules: CanonicalRules, end: Position | None) -> CanonicalResult | None:
        return None

    def replay(self, static_end: Position | None) -> dict[str, Any] | None:
        """The static part of this request as a max_tokens=1 request (for warm-up)."""
        return None

    def _replay_head(self) -> dict[str, Any]:
        head: dict[str, Any] = {"max_tokens": 1, "temperature": 0}
        if self.model is not None:  # none named: vLLM's served model, as for the client
            head["model"] = self.model
        if "cache_salt" in self.body:
            head["cache_salt"] = self.body["cache_salt"]
        return head


class ChatPrompt(Prompt):
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
    but their tags must not reach the model either (issue 23). Tags go as the tags
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
        parts = [part if text is None else {**part, "text": _untagged(text)}
                 for part, text in zip(content, texts, strict=True)]  # fmt: skip
        if parts != content:
            out[i], changed = {**message, "content": parts}, True
    return out if changed else None


def _text(part: Any) -> str | None:
    text = part.get("text") if isinstance(part, dict) and part.get("type") == "text" else None
    return text if isinstance(text, str) else None


def _untagged(text: str) -> str:
    return _QUESTION_TAG.sub("", _DOC_PAIR.sub(r"\1", text))


def prompt_for(route: str, body: dict[str, Any]) -> Prompt:
    adapter = {"chat": ChatPrompt, "completions": CompletionPrompt}.get(route, Prompt)
    return adapter(body)

"""A framework's default RAG template, recognised from its exact text.

A template can appear in three forms; each is optional:
  system  chat: the first message (system/developer) holds the context; the
          question is the last user message (LangChain stuff chat, retrieval-qa-chat)
  user    chat: the last user message holds context and question (rlm/rag-prompt,
          LlamaIndex, Haystack)
  prompt  completion: the prompt holds context and question
`static_end` is where the first placeholder starts in the matched text: everything
before it is the template's own instruction text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from proxy.prompt.segment.messages import SYSTEM_ROLES, last_user_index, message_text, role
from proxy.prompt.segment.model import Segmentation
from proxy.prompt.segment.split import split_documents
from proxy.prompt.segment.words import Words, WordTemplate, match_template


@dataclass(frozen=True)
class FrameworkTemplate:
    name: str
    system: WordTemplate | None = None
    user: WordTemplate | None = None
    prompt: WordTemplate | None = None
    preamble: Words = ()  # prompt form: words that may come before the template
    skip_metadata: bool = False

    def match_chat(self, messages: Sequence[Any]) -> Segmentation | None:
        return self._match_system(messages) or self._match_user(messages)

    def match_prompt(self, prompt: str) -> Segmentation | None:
        if self.prompt is None:
            return None
        return self._segment(self.prompt, prompt, None, preamble=self.preamble)

    def _match_system(self, messages: Sequence[Any]) -> Segmentation | None:
        if self.system is None or not messages or role(messages[0]) not in SYSTEM_ROLES:
            return None
        text = message_text(messages[0])
        return None if text is None else self._segment(self.system, text, 0, _last_user(messages))

    def _match_user(self, messages: Sequence[Any]) -> Segmentation | None:
        index = last_user_index(messages)
        text = None if index is None else message_text(messages[index])
        if self.user is None or text is None:
            return None
        return self._segment(self.user, text, index)

    def _segment(
        self,
        template: WordTemplate,
        text: str,
        message: int | None,
        question: str | None = None,
        preamble: Words = (),
    ) -> Segmentation | None:
        spans = match_template(template, text, preamble)
        if spans is None:
            return None
        if question is None:
            start, end = spans["question"]
            question = text[start:end]
        start, end = spans["context"]
        documents = split_documents(text, start, end, message, skip_metadata=self.skip_metadata)
        first = min(start for start, _ in spans.values())
        return Segmentation(self.name, documents, question.strip(), (message, first))


def _last_user(messages: Sequence[Any]) -> str:
    index = last_user_index(messages)
    return (None if index is None else message_text(messages[index])) or ""

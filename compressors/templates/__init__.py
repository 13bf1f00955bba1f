"""Prompt segmentation: find the context documents and the question, with zero
client change, and put compressed documents back without touching another byte.

    segment_chat(messages, *, body_field=None, patterns=()) -> Segmentation | None
    segment_prompt(prompt, *, body_field=None, patterns=()) -> Segmentation | None
    apply_chat(messages, seg, new_texts) -> list[dict]   (a new list; changed messages copied)
    apply_prompt(prompt, seg, new_texts) -> str

Recognisers are tried in the fixed order of `_recognisers` (explicit first); the first
match wins and an unrecognised prompt gives None (pass it through untouched):
  1. body field  request field `ragtrim`: {"documents": [...], "question": "..."}
                 (documents found verbatim in the text) -- body_field.py
  2. tags        <ragtrim:doc>...</ragtrim:doc> around each document, optionally
                 <ragtrim:question>...</ragtrim:question>. Slots span the tags, so
                 apply_* strips them; when nothing is compressed the proxy still calls
                 apply_* with the original inner texts so the model never sees a
                 marker -- tags.py
  3. framework   default RAG templates recognised from their exact texts (tolerant of
                 whitespace only): LangChain rlm/rag-prompt, stuff chain,
                 retrieval-qa-chat; LlamaIndex text_qa, tree_summarize and refine
                 templates; Haystack's API-docs RAG example and RAG tutorial prompt
  4. patterns    regexes from settings with a named group `context` (optional
                 `question`) -- patterns.py

Messages are OpenAI chat messages; a message is searched when its content is a string
or a list with exactly one text part (`Slot.message` is the message index, offsets
index that text). `static_end` is where the static instruction ends: for a template,
where its first placeholder starts; for the explicit recognisers, the first document
(or the question, if located and earlier). Documents are split on blank lines and
stripped; their order is kept.

Everything here runs on the request path, so it runs in linear time on any input:
templates match word by word (no regex backtracking), tags are found with str.find,
and apply_* splices in one pass. Only operator-supplied `patterns` can be slow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from compressors.segments import Segmentation
from compressors.templates._messages import SYSTEM_ROLES, message_text, role, with_text
from compressors.templates.apply import apply_chat, apply_prompt
from compressors.templates.body_field import BodyField
from compressors.templates.haystack_rag import HAYSTACK_RAG
from compressors.templates.haystack_rag_tutorial import HAYSTACK_RAG_TUTORIAL
from compressors.templates.langchain_rag_prompt import LANGCHAIN_RAG_PROMPT
from compressors.templates.langchain_retrieval_qa_chat import LANGCHAIN_RETRIEVAL_QA_CHAT
from compressors.templates.langchain_stuff import LANGCHAIN_STUFF
from compressors.templates.llamaindex_refine import LLAMAINDEX_REFINE
from compressors.templates.llamaindex_text_qa import LLAMAINDEX_TEXT_QA
from compressors.templates.llamaindex_tree_summarize import LLAMAINDEX_TREE_SUMMARIZE
from compressors.templates.patterns import Patterns
from compressors.templates.tags import Tags

__all__ = [
    "SYSTEM_ROLES",
    "Recogniser",
    "apply_chat",
    "apply_prompt",
    "message_text",
    "role",
    "segment_chat",
    "segment_prompt",
    "with_text",
]


class Recogniser(Protocol):
    def match_chat(self, messages: Sequence[Any]) -> Segmentation | None: ...

    def match_prompt(self, prompt: str) -> Segmentation | None: ...


def _recognisers(body_field: dict | None, patterns: Sequence[str]) -> list[Recogniser]:
    """THE order. Explicit markings first, then framework defaults, then settings."""
    return [
        BodyField(body_field),
        Tags(),
        LANGCHAIN_RAG_PROMPT,
        LANGCHAIN_STUFF,
        LANGCHAIN_RETRIEVAL_QA_CHAT,
        LLAMAINDEX_TEXT_QA,
        LLAMAINDEX_TREE_SUMMARIZE,
        LLAMAINDEX_REFINE,
        HAYSTACK_RAG,
        HAYSTACK_RAG_TUTORIAL,
        Patterns(tuple(patterns)),
    ]


def segment_chat(
    messages: list[dict], *, body_field: dict | None = None, patterns: Sequence[str] = ()
) -> Segmentation | None:
    for recogniser in _recognisers(body_field, patterns):
        seg = recogniser.match_chat(messages)
        if seg is not None:
            return seg
    return None


def segment_prompt(
    prompt: str, *, body_field: dict | None = None, patterns: Sequence[str] = ()
) -> Segmentation | None:
    for recogniser in _recognisers(body_field, patterns):
        seg = recogniser.match_prompt(prompt)
        if seg is not None:
            return seg
    return None

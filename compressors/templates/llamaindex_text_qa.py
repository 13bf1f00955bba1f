"""LlamaIndex `text_qa_template` (CHAT_TEXT_QA_PROMPT / DEFAULT_TEXT_QA_PROMPT).

Chat: the (static) system message, then the user message below; only the user
message is checked, so a replaced system prompt still matches. Completion: the user
text alone, or preceded by the system text (with any role markers around it).
Each node renders as "key: value" metadata lines, a blank line, then its text; those
metadata blocks stay untouched and only node texts become documents.
"""

from __future__ import annotations

from compressors.templates._framework import FrameworkTemplate
from compressors.templates._words import parse_template

NAME = "llamaindex_text_qa"

SYSTEM_TEXT = (
    "You are an expert Q&A system that is trusted around the world.\n"
    "Always answer the query using the provided context information, and not prior "
    "knowledge.\n"
    "Some rules to follow:\n"
    "1. Never directly reference the given context in your answer.\n"
    "2. Avoid statements like 'Based on the context, ...' or 'The context information "
    "...' or anything along those lines."
)

USER_TEMPLATE = (
    "Context information is below.\n"
    "---------------------\n"
    "{context_str}\n"
    "---------------------\n"
    "Given the context information and not prior knowledge, answer the query.\n"
    "Query: {query_str}\n"
    "Answer: "
)

_USER = parse_template(USER_TEMPLATE, context="context_str", question="query_str")

LLAMAINDEX_TEXT_QA = FrameworkTemplate(
    NAME,
    user=_USER,
    prompt=_USER,
    preamble=tuple(SYSTEM_TEXT.split()),
    skip_metadata=True,
)

"""LlamaIndex `refine_template` (response_mode="refine", and "compact" when the
context overflows one call).

The first chunk goes through text_qa_template; every further chunk is sent with the
previous answer in this template (CHAT_REFINE_PROMPT: one user message;
DEFAULT_REFINE_PROMPT: the completion form, question first). Only `context_msg` is a
document; the existing answer is the model's own earlier output and stays untouched.
"""

from __future__ import annotations

from compressors.templates._framework import FrameworkTemplate
from compressors.templates._words import parse_template

NAME = "llamaindex_refine"

CHAT_TEMPLATE = (
    "You are an expert Q&A system that strictly operates in two modes when refining "
    "existing answers:\n"
    "1. **Rewrite** an original answer using the new context.\n"
    "2. **Repeat** the original answer if the new context isn't useful.\n"
    "Never reference the original answer or context directly in your answer.\n"
    "When in doubt, just repeat the original answer.\n"
    "New Context: {context_msg}\n"
    "Query: {query_str}\n"
    "Original Answer: {existing_answer}\n"
    "New Answer: "
)

PROMPT_TEMPLATE = (
    "The original query is as follows: {query_str}\n"
    "We have provided an existing answer: {existing_answer}\n"
    "We have the opportunity to refine the existing answer (only if needed) with some "
    "more context below.\n"
    "------------\n"
    "{context_msg}\n"
    "------------\n"
    "Given the new context, refine the original answer to better answer the query. If "
    "the context isn't useful, return the original answer.\n"
    "Refined Answer: "
)

_GROUPS = {"context": "context_msg", "question": "query_str", "answer": "existing_answer"}

LLAMAINDEX_REFINE = FrameworkTemplate(
    NAME,
    user=parse_template(CHAT_TEMPLATE, **_GROUPS),
    prompt=parse_template(PROMPT_TEMPLATE, **_GROUPS),
    skip_metadata=True,
)

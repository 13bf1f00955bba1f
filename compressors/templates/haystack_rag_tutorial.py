"""Haystack's RAG tutorial prompt ("Creating Your First QA Pipeline with
Retrieval-Augmentation", tutorial 27), as a `ChatPromptBuilder` user message.

Haystack ships no default RAG template. Its first RAG tutorial (and most code copied
from it) uses this text with `ChatPromptBuilder([ChatMessage.from_user(...)])` and a
chat generator; the "Given these documents" variant from the API docs is
haystack_rag.py. Jinja2 renders the loop body "\\n    {{ document.content }}\\n" once per
document, so documents are indented and separated by blank lines. Recognised as the
last user message or as a completion prompt (the same text through PromptBuilder).
"""

from __future__ import annotations

from compressors.templates._framework import FrameworkTemplate
from compressors.templates._words import parse_template

NAME = "haystack_rag_tutorial"

JINJA_TEMPLATE = (
    "\n"
    "Given the following information, answer the question.\n\n"
    "Context:\n"
    "{% for document in documents %}\n"
    "    {{ document.content }}\n"
    "{% endfor %}\n\n"
    "Question: {{question}}\n"
    "Answer:\n"
)

_LOOP = "{% for document in documents %}\n    {{ document.content }}\n{% endfor %}"
_TEMPLATE = JINJA_TEMPLATE.replace(_LOOP, "{documents}").replace("{{question}}", "{question}")
_TEMPLATE_WORDS = parse_template(_TEMPLATE, context="documents", question="question")

HAYSTACK_RAG_TUTORIAL = FrameworkTemplate(NAME, user=_TEMPLATE_WORDS, prompt=_TEMPLATE_WORDS)

"""Haystack's RAG example prompt (PromptBuilder / ChatPromptBuilder docs and tutorials).

Haystack ships no default template; this is the one its documentation uses. Jinja2
renders the loop body "\\n{{ doc.content }}\\n" once per document, so documents are
separated by blank lines. Recognised as a completion prompt or as the last user
message; indentation and blank-line variants of the example match too.
"""

from __future__ import annotations

from compressors.templates._framework import FrameworkTemplate
from compressors.templates._words import parse_template

NAME = "haystack_rag"

JINJA_TEMPLATE = (
    "Given these documents, answer the question.\n"
    "Documents:\n"
    "{% for doc in documents %}\n"
    "{{ doc.content }}\n"
    "{% endfor %}\n"
    "Question: {{query}}\n\n"
    "Answer:"
)

_LOOP = "{% for doc in documents %}\n{{ doc.content }}\n{% endfor %}"
_TEMPLATE = JINJA_TEMPLATE.replace(_LOOP, "{documents}").replace("{{query}}", "{query}")
_TEMPLATE_WORDS = parse_template(_TEMPLATE, context="documents", question="query")

HAYSTACK_RAG = FrameworkTemplate(NAME, user=_TEMPLATE_WORDS, prompt=_TEMPLATE_WORDS)

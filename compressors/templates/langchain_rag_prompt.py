"""LangChain hub `rlm/rag-prompt`: one human message, question before context.

Recognised as the last user message of a chat, or as a completion prompt.
"""

from __future__ import annotations

from compressors.templates._framework import FrameworkTemplate
from compressors.templates._words import parse_template

NAME = "langchain_rag_prompt"

TEMPLATE = (
    "You are an assistant for question-answering tasks. Use the following pieces of "
    "retrieved context to answer the question. If you don't know the answer, just say "
    "that you don't know. Use three sentences maximum and keep the answer concise.\n"
    "Question: {question} \nContext: {context} \nAnswer:"
)

_TEMPLATE_WORDS = parse_template(TEMPLATE, context="context", question="question")

LANGCHAIN_RAG_PROMPT = FrameworkTemplate(NAME, user=_TEMPLATE_WORDS, prompt=_TEMPLATE_WORDS)

"""LangChain hub `langchain-ai/retrieval-qa-chat` (used with `create_retrieval_chain`).

System message with the context, then the chat history, then the human `{input}`:
the question is the last user message. Chat only.
"""

from __future__ import annotations

from compressors.templates._framework import FrameworkTemplate
from compressors.templates._words import parse_template

NAME = "langchain_retrieval_qa_chat"

SYSTEM_TEMPLATE = (
    "Answer any use questions based solely on the context below:\n\n"
    "<context>\n{context}\n</context>"
)

LANGCHAIN_RETRIEVAL_QA_CHAT = FrameworkTemplate(
    NAME, system=parse_template(SYSTEM_TEMPLATE, context="context")
)

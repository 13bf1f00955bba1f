"""LangChain "stuff" question-answering prompts (`chains/question_answering/stuff_prompt.py`).

Chat: the system message holds the context, the human message is the question.
Completion: context, then "Question: ... Helpful Answer:". Documents are joined
with "\\n\\n" (the stuff chain's default separator).
"""

from __future__ import annotations

from compressors.templates._framework import FrameworkTemplate
from compressors.templates._words import parse_template

NAME = "langchain_stuff"

SYSTEM_TEMPLATE = (
    "Use the following pieces of context to answer the user's question. \n"
    "If you don't know the answer, just say that you don't know, don't try to make up "
    "an answer.\n"
    "----------------\n"
    "{context}"
)

PROMPT_TEMPLATE = (
    "Use the following pieces of context to answer the question at the end. If you "
    "don't know the answer, just say that you don't know, don't try to make up an "
    "answer.\n\n"
    "{context}\n\n"
    "Question: {question}\n"
    "Helpful Answer:"
)

LANGCHAIN_STUFF = FrameworkTemplate(
    NAME,
    system=parse_template(SYSTEM_TEMPLATE, context="context"),
    prompt=parse_template(PROMPT_TEMPLATE, context="context", question="question"),
)

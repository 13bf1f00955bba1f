"""A SQuAD RAG case rendered as the OpenAI chat messages a framework's default RAG
template produces (the texts copied from the frameworks, not from compressors/, so the
benchmarks test the recognisers against the frameworks' own wording).

    render_langchain(case) / render_llamaindex(case) -> OpenAI chat messages
    RENDERERS: template name -> renderer
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

from bench.lib.squad import RagCase

# -- framework default templates (copied from the frameworks, not from compressors/) ---

LANGCHAIN_SYSTEM = (
    "Use the following pieces of context to answer the user's question. \n"
    "If you don't know the answer, just say that you don't know, don't try to make up "
    "an answer.\n"
    "----------------\n"
    "{context}"
)
LLAMAINDEX_SYSTEM = (
    "You are an expert Q&A system that is trusted around the world.\n"
    "Always answer the query using the provided context information, and not prior "
    "knowledge.\n"
    "Some rules to follow:\n"
    "1. Never directly reference the given context in your answer.\n"
    "2. Avoid statements like 'Based on the context, ...' or 'The context information "
    "...' or anything along those lines."
)
LLAMAINDEX_USER = (
    "Context information is below.\n"
    "---------------------\n"
    "{context_str}\n"
    "---------------------\n"
    "Given the context information and not prior knowledge, answer the query.\n"
    "Query: {query_str}\n"
    "Answer: "
)


def render_langchain(case: RagCase) -> list[dict]:
    """LangChain's stuff-documents chat prompt: context in the system message."""
    context = "\n\n".join(case.documents)
    return [
        {"role": "system", "content": LANGCHAIN_SYSTEM.format(context=context)},
        {"role": "user", "content": case.question},
    ]


def render_llamaindex(case: RagCase, *, metadata: bool = True) -> list[dict]:
    """LlamaIndex's chat text_qa_template; each node as `get_content(MetadataMode.LLM)`
    renders it: "title: ..." metadata, a blank line, the text (nodes joined by a blank line)."""
    titles = case.titles if metadata and case.titles else ("",) * len(case.documents)
    nodes = [
        f"title: {title}\n\n{doc}" if title else doc
        for title, doc in zip(titles, case.documents, strict=True)
    ]
    user = LLAMAINDEX_USER.format(context_str="\n\n".join(nodes), query_str=case.question)
    return [
        {"role": "system", "content": LLAMAINDEX_SYSTEM},
        {"role": "user", "content": user},
    ]


RENDERERS: MappingProxyType[str, Callable[[RagCase], list[dict]]] = MappingProxyType(
    {"langchain_stuff": render_langchain, "llamaindex_text_qa": render_llamaindex}
)

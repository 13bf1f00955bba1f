"""LlamaIndex `summary_template` (response_mode="tree_summarize").

DEFAULT_TREE_SUMMARIZE_TMPL / CHAT_TREE_SUMMARIZE_PROMPT in llama_index/core/prompts:
the text_qa layout with "from multiple sources" wording, the same system message in
chat form. Each call packs as many chunks as fit; when they do not fit in one call,
tree_summarize summarises groups and then summarises the summaries with this same
template, so every level is recognised (the upper levels' "documents" are answers).
"""

from __future__ import annotations

from compressors.templates._framework import FrameworkTemplate
from compressors.templates._words import parse_template
from compressors.templates.llamaindex_text_qa import SYSTEM_TEXT

NAME = "llamaindex_tree_summarize"

USER_TEMPLATE = (
    "Context information from multiple sources is below.\n"
    "---------------------\n"
    "{context_str}\n"
    "---------------------\n"
    "Given the information from multiple sources and not prior knowledge, answer the query.\n"
    "Query: {query_str}\n"
    "Answer: "
)

_USER = parse_template(USER_TEMPLATE, context="context_str", question="query_str")

LLAMAINDEX_TREE_SUMMARIZE = FrameworkTemplate(
    NAME,
    user=_USER,
    prompt=_USER,
    preamble=tuple(SYSTEM_TEXT.split()),
    skip_metadata=True,
)

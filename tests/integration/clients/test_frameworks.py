"""LangChain, LlamaIndex and Haystack RAG pipelines, built with each framework's own
API and default prompts, pointed at ragtrim in front of real vLLM: the answer arrives
(streamed where the framework streams), ragtrim recognised the template and
compressed the context, and the second identical call hits vLLM's prefix cache."""

import pytest

pytest.importorskip("langchain_classic")
pytest.importorskip("llama_index.llms.openai_like")
pytest.importorskip("haystack")

from tests.integration.clients.measure import check, twice  # noqa: E402
from tests.support import frameworks as fw  # noqa: E402

pytestmark = pytest.mark.integration

LI_QA = {"llamaindex_text_qa"}
LI_REFINE = {"llamaindex_text_qa", "llamaindex_refine"}
CASES = [
    ("langchain", "create_stuff_documents_chain", fw.lc_stuff, {"langchain_stuff"}, True),
    ("langchain", "create_stuff_documents_chain", fw.lc_stuff, {"langchain_stuff"}, False),
    ("langchain", "load_qa_chain stuff", fw.lc_load_qa, {"langchain_stuff"}, False),
    # langchain_openai.OpenAI sends `prompt` as a one-element list
    ("langchain", "load_qa_chain stuff (OpenAI completion LLM)", fw.lc_load_qa_completion,
     {"langchain_stuff"}, False),
    ("langchain", "create_retrieval_chain", fw.lc_retrieval, {"langchain_stuff"}, True),
    ("langchain", "rlm/rag-prompt LCEL", fw.lc_rag_prompt, {"langchain_rag_prompt"}, True),
    ("langchain", "rlm/rag-prompt LCEL", fw.lc_rag_prompt, {"langchain_rag_prompt"}, False),
    ("llamaindex", "compact (chat)", fw.li_query("compact", True), LI_QA, True),
    ("llamaindex", "compact (completion)", fw.li_query("compact", False), LI_QA, False),
    ("llamaindex", "refine (chat)", fw.li_query("refine", True), LI_REFINE, False),
    ("llamaindex", "refine (completion)", fw.li_query("refine", False), LI_REFINE, True),
    ("llamaindex", "tree_summarize (chat)", fw.li_query("tree_summarize", True),
     {"llamaindex_tree_summarize"}, True),
    ("llamaindex", "tree_summarize (completion)", fw.li_query("tree_summarize", False),
     {"llamaindex_tree_summarize"}, False),
    ("haystack", "ChatPromptBuilder docs template", fw.hs_chat(fw.haystack_docs_template),
     {"haystack_rag"}, True),
    ("haystack", "ChatPromptBuilder docs template", fw.hs_chat(fw.haystack_docs_template),
     {"haystack_rag"}, False),
    ("haystack", "ChatPromptBuilder tutorial template",
     fw.hs_chat(fw.haystack_tutorial_template), {"haystack_rag_tutorial"}, True),
]  # fmt: skip


def _id(case) -> str:
    case = getattr(case, "values", case)
    return f"{case[0]}-{case[1]}-{'stream' if case[4] else 'invoke'}"


@pytest.mark.parametrize(
    ("framework", "mode", "pipeline", "templates", "stream"), CASES, ids=[_id(c) for c in CASES]
)
def test_framework_pipeline_through_ragtrim(
    framework, mode, pipeline, templates, stream, proxy, vllm_tiny, report
):
    result = twice(proxy.url, vllm_tiny.base_url, vllm_tiny.model, pipeline, stream)
    row = check(result, templates, stream)
    report.append({"framework": framework, "mode": f"{mode} ({'stream' if stream else 'invoke'})",
                   **row})  # fmt: skip

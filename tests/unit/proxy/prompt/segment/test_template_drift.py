"""Template drift: each framework's default RAG prompt, rendered by the installed
framework and sent by its own OpenAI client, is recognised with the documents and the
question byte-exact.

Nothing here copies a template: the frameworks build the prompts (see
tests/support/frameworks.py). A framework upgrade that changes its default prompt or
its wire format fails here first. Needs the `clients` extra; the HTTP layer is an
in-process httpx transport that records each request and answers "ok".
"""

import json
import os

import httpx
import pytest

pytest.importorskip("langchain_classic")
pytest.importorskip("llama_index.llms.openai_like")
pytest.importorskip("haystack")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from tests.support import frameworks as fw  # noqa: E402
from tests.support.segmenting import segment_chat, segment_prompt  # noqa: E402

DOCS = [
    "The Rhine rises in the Swiss Alps and flows north through Germany to the North Sea.",
    "Rotterdam, at the mouth of the Rhine, was Europe's largest port for most of a century.",
    "The Danube flows east from the Black Forest through ten countries to the Black Sea.",
]
QUESTION = "Which sea does the Rhine reach?"
ALL = [DOCS]
EACH = [[d] for d in DOCS]  # refine: one node per call

CASES = {
    "langchain stuff chain (chat)": (fw.lc_stuff, ["langchain_stuff"], ALL),
    "langchain load_qa_chain stuff (chat)": (fw.lc_load_qa, ["langchain_stuff"], ALL),
    "langchain load_qa_chain stuff (completion)": (
        fw.lc_load_qa_completion, ["langchain_stuff"], ALL),
    "langchain create_retrieval_chain": (fw.lc_retrieval, ["langchain_stuff"], ALL),
    "langchain rlm/rag-prompt LCEL": (fw.lc_rag_prompt, ["langchain_rag_prompt"], ALL),
    "llamaindex compact (chat)": (fw.li_query("compact", True), ["llamaindex_text_qa"], ALL),
    "llamaindex compact (completion)": (
        fw.li_query("compact", False), ["llamaindex_text_qa"], ALL),
    "llamaindex refine (chat)": (
        fw.li_query("refine", True), ["llamaindex_text_qa"] + ["llamaindex_refine"] * 2, EACH),
    "llamaindex refine (completion)": (
        fw.li_query("refine", False), ["llamaindex_text_qa"] + ["llamaindex_refine"] * 2, EACH),
    "llamaindex tree_summarize (chat)": (
        fw.li_query("tree_summarize", True), ["llamaindex_tree_summarize"], ALL),
    "llamaindex tree_summarize (completion)": (
        fw.li_query("tree_summarize", False), ["llamaindex_tree_summarize"], ALL),
    "haystack docs template (ChatPromptBuilder)": (
        fw.hs_chat(fw.haystack_docs_template), ["haystack_rag"], ALL),
    "haystack tutorial template (ChatPromptBuilder)": (
        fw.hs_chat(fw.haystack_tutorial_template), ["haystack_rag_tutorial"], ALL),
}  # fmt: skip


def answer(request: httpx.Request) -> httpx.Response:
    if request.url.path.endswith("/chat/completions"):
        choice = {"index": 0, "message": {"role": "assistant", "content": "ok"}}
        kind = "chat.completion"
    else:
        choice, kind = {"index": 0, "text": "ok", "logprobs": None}, "text_completion"
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    return httpx.Response(200, json={
        "id": "x", "object": kind, "created": 0, "model": "m",
        "choices": [{**choice, "finish_reason": "stop"}], "usage": usage,
    })  # fmt: skip


def segment(body: dict):
    if "messages" in body:
        return segment_chat(body["messages"])
    prompt = body["prompt"]
    return segment_prompt(prompt if isinstance(prompt, str) else prompt[0])


@pytest.mark.parametrize("case", list(CASES))
def test_default_prompt_is_recognised_byte_exact(case):
    pipeline, templates, docs_per_call = CASES[case]
    bodies: list[dict] = []

    def record(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return answer(request)

    wire = fw.Wire("http://ragtrim.test/v1", "m", transport=httpx.MockTransport(record))
    assert pipeline(wire, DOCS, QUESTION, False).answer.strip() == "ok"
    assert len(bodies) == len(templates), bodies
    for body, template, docs in zip(bodies, templates, docs_per_call, strict=True):
        seg = segment(body)
        assert seg is not None, f"{case}: not recognised: {body}"
        assert seg.template == template
        assert [slot.text for slot in seg.documents] == docs
        assert seg.question == QUESTION

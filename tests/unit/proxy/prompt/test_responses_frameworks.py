"""What LangChain sends on the Responses API (ChatOpenAI(use_responses_api=True) with a
stuff chain) is found by ResponsesPrompt as on chat (issue 31): the request is recorded
by an in-process transport, then read by the adapter."""

import json

import httpx
import pytest

from proxy.prompt.responses import ResponsesPrompt
from tests.support.segmenting import DEFAULT

pytest.importorskip("langchain_openai")
pytest.importorskip("langchain_classic")

DOCS = ["Paris is the capital of France.", "The Seine flows through Paris."]
QUESTION = "What is the capital of France?"
ANSWER = {
    "id": "resp_1", "object": "response", "created_at": 0, "model": "m", "status": "completed",
    "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": "Paris", "annotations": []}]}],
    "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
              "input_tokens_details": {"cached_tokens": 0},
              "output_tokens_details": {"reasoning_tokens": 0}},
}  # fmt: skip


def langchain_responses_body() -> dict:
    from langchain_classic.chains.combine_documents import create_stuff_documents_chain
    from langchain_classic.chains.question_answering.stuff_prompt import CHAT_PROMPT
    from langchain_core.documents import Document
    from langchain_openai import ChatOpenAI

    sent = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append((request.url.path, json.loads(request.content)))
        return httpx.Response(200, json=ANSWER)

    client = httpx.Client(transport=httpx.MockTransport(answer))
    llm = ChatOpenAI(base_url="http://ragtrim/v1", api_key="unused", model="m", max_retries=0,
                     use_responses_api=True, http_client=client)  # fmt: skip
    chain = create_stuff_documents_chain(llm, CHAT_PROMPT)
    assert chain.invoke({"context": [Document(page_content=d) for d in DOCS],
                         "question": QUESTION}) == "Paris"  # fmt: skip
    ((path, body),) = sent
    assert path == "/v1/responses"
    return body


def test_a_langchain_stuff_chain_on_the_responses_api_is_recognised():
    body = langchain_responses_body()
    prompt = ResponsesPrompt(body)
    seg = prompt.segment(DEFAULT, None)
    assert seg is not None and seg.template == "langchain_stuff"
    assert seg.texts == DOCS and seg.question == QUESTION
    prompt.apply(seg, ["Paris: capital.", "Seine: Paris."])
    messages, _ = prompt.view()
    assert messages[0]["content"].endswith("Paris: capital.\n\nSeine: Paris.")
    assert prompt.modified

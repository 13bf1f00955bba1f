"""The Responses and Messages APIs go through the pipeline (issue 31): context in
`instructions`, `input` items, `system` or content blocks is compressed as on chat, the
answer relayed as vLLM sent it. The openai SDK's responses.create, streamed and not."""

import json

import httpx
import openai
import pytest

from tests.support.compressor_doubles import HalfWords
from tests.support.rag_requests import ALWAYS, DOCS, SYSTEM

QUESTION = "What is the capital of France?"
HALVED = [" ".join(d.split()[: round(len(d.split()) / 2)]) for d in DOCS]


def sent(recording, path: str) -> dict:
    return json.loads(recording.backend.at(path)[-1]["body"])


@pytest.mark.parametrize("stream", [False, True])
def test_the_sdks_responses_create_is_compressed(recording, make_proxy, stream):
    proxy = make_proxy([recording.url], compressor=HalfWords(), compression=ALWAYS)
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="x", max_retries=0)
    ask = {"model": "stub-model", "instructions": SYSTEM + "\n\n".join(DOCS), "input": QUESTION}
    if stream:
        events = list(client.responses.create(stream=True, **ask))
        assert [e.type for e in events] == ["response.created", "response.completed"]
    else:
        assert client.responses.create(**ask).id.startswith("resp_")
    body = sent(recording, "/v1/responses")
    assert body["instructions"] == SYSTEM + "\n\n".join(HALVED)
    assert body["input"] == QUESTION


def test_context_in_an_input_item_and_the_raw_headers(recording, make_proxy):
    proxy = make_proxy([recording.url], compressor=HalfWords(), compression=ALWAYS)
    items = [{"role": "system", "content": SYSTEM + "\n\n".join(DOCS)},
             {"role": "user", "content": [{"type": "input_text", "text": QUESTION}]}]  # fmt: skip
    resp = httpx.post(f"{proxy.url}/v1/responses", json={"model": "stub-model", "input": items})
    assert resp.status_code == 200 and resp.headers["x-ragtrim-template"] == "langchain_stuff"
    body = sent(recording, "/v1/responses")
    assert body["input"][0]["content"] == SYSTEM + "\n\n".join(HALVED)
    assert body["input"][1] == items[1]


def test_a_messages_request_is_compressed_in_its_system_blocks(recording, make_proxy):
    proxy = make_proxy([recording.url], compressor=HalfWords(), compression=ALWAYS)
    system = [{"type": "text", "text": SYSTEM + "\n\n".join(DOCS)}]
    ask = {"model": "stub-model", "max_tokens": 5, "system": system,
           "messages": [{"role": "user", "content": QUESTION}]}  # fmt: skip
    resp = httpx.post(f"{proxy.url}/v1/messages", json=ask, headers={"x-api-key": "k"})
    assert resp.status_code == 200, resp.text
    body = sent(recording, "/v1/messages")
    assert body["system"] == [{"type": "text", "text": SYSTEM + "\n\n".join(HALVED)}]
    assert body["messages"] == ask["messages"]

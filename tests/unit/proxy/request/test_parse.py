"""parse_body refuses only what vLLM refuses among the fields ragtrim reads (issue 31)."""

import json

import httpx
import pytest

from proxy.errors import InvalidRequest
from proxy.request.parse import parse_body

EMBEDS = "AAAAAAAAgD8AAABA"  # base64 of a small float tensor: vLLM's prompt_embeds


def raw(body: dict) -> bytes:
    return json.dumps(body).encode()


@pytest.mark.parametrize("extra", [{}, {"model": None}])
def test_a_body_without_model_is_accepted_as_vllm_does(extra):
    chat = {"messages": [{"role": "user", "content": "hi"}], **extra}
    assert parse_body(raw(chat), "chat") == chat
    assert parse_body(raw({"prompt": "hi", **extra}), "completions")["prompt"] == "hi"


def test_a_model_that_is_not_a_string_is_still_a_400():
    with pytest.raises(InvalidRequest) as info:
        parse_body(raw({"model": 3, "prompt": "hi"}), "completions")
    assert info.value.param == "model"


def test_prompt_embeds_alone_is_a_completions_prompt():
    body = {"model": "m", "prompt_embeds": EMBEDS}
    assert parse_body(raw(body), "completions") == body
    both = {"model": "m", "prompt": "hi", "prompt_embeds": [EMBEDS]}
    assert parse_body(raw(both), "completions") == both
    null = {"prompt": None, "prompt_embeds": EMBEDS}
    assert parse_body(raw(null), "completions") == null


def test_a_completions_body_with_neither_prompt_nor_embeds_is_a_400():
    with pytest.raises(InvalidRequest) as info:
        parse_body(raw({"model": "m", "prompt_embeds": None}), "completions")
    assert info.value.param == "prompt" and "prompt_embeds" in str(info.value)


@pytest.mark.parametrize(
    ("path", "body"),
    [("/v1/completions", {"model": "stub-model", "prompt_embeds": EMBEDS}),
     ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
     ("/v1/completions", {"prompt": "<context>a doc</context> q?"})],
)  # fmt: skip
def test_through_the_proxy_the_backend_receives_such_bodies_unchanged(stub, make_proxy, path, body):
    proxy = make_proxy([stub.url])
    sent = {**body, "stub": {"echo": True}}
    resp = httpx.post(f"{proxy.url}{path}", content=json.dumps(sent))
    assert resp.status_code == 200, resp.text
    assert resp.json()["echo"] == sent

"""bench/lib/route_bodies.py: one case as a chat, Responses and Messages body; ragtrim's
adapters find the same documents and question in each, and the SDKs send these bodies."""

from __future__ import annotations

import json

import httpx
import pytest

from bench.lib.route_bodies import ROUTES, body, segmentation
from bench.lib.squad import RagCase
from bench.lib.squad_render import render_llamaindex
from proxy.prompt.anthropic import MessagesPrompt
from proxy.prompt.responses import ResponsesPrompt

DOCS = ("Paris is the capital of France.", "The Seine flows through Paris.")
CASE = RagCase(
    question="What is the capital of France?",
    answers=("Paris",),
    gold=DOCS[0],
    documents=DOCS,
    case_id="t:1",
    titles=("France", "Seine"),
)


def test_the_three_bodies_carry_one_prompt():
    chat = render_llamaindex(CASE)
    assert body("chat", CASE, "s", "m")["messages"] == chat
    assert ResponsesPrompt(body("responses", CASE, "s", "m")).view()[0] == chat
    assert MessagesPrompt(body("messages", CASE, "s", "m")).view()[0] == chat


@pytest.mark.parametrize("route", ROUTES)
def test_each_route_is_segmented_as_chat(route):
    seg = segmentation(route, body(route, CASE, "s", "m"))
    assert seg is not None and seg.template == "llamaindex_text_qa"
    assert seg.question == CASE.question
    assert [slot.text for slot in seg.documents] == list(DOCS)  # the metadata lines apart


@pytest.mark.parametrize("route", ROUTES)
def test_salt_model_and_budget(route):
    sent = body(route, CASE, "salt-1", "smollm2")
    assert (sent["cache_salt"], sent["model"]) == ("salt-1", "smollm2")
    assert sent.get("max_tokens", sent.get("max_output_tokens")) == 24
    assert "stream" not in sent  # the streamer adds it


def captured(call, http=httpx) -> dict:
    """The JSON an SDK call sends, recorded by an in-process transport of `http` (the
    httpx package the SDK is built on)."""
    sent = []

    def answer(request) -> http.Response:
        sent.append(json.loads(request.content))
        return http.Response(500, json={"error": {"message": "recorded"}})

    with pytest.raises(Exception, match="recorded"):
        call(http.Client(transport=http.MockTransport(answer)))
    return sent[0]


def test_the_anthropic_sdk_sends_the_messages_body():
    anthropic = pytest.importorskip("anthropic")
    want = body("messages", CASE, "s", "m")
    extra = {"temperature": 0, "cache_salt": "s"}  # not in this SDK's signature (2.16)
    fields = {k: v for k, v in want.items() if k not in extra}

    def call(http):
        client = anthropic.Anthropic(base_url="http://rt", api_key="k", http_client=http,
                                     max_retries=0)  # fmt: skip
        client.messages.create(**fields, extra_body=extra)

    assert captured(call, pytest.importorskip("httpx2")) == want


def test_the_openai_sdk_sends_the_responses_body():
    openai = pytest.importorskip("openai")
    want = body("responses", CASE, "s", "m")
    extra = {"seed": 0, "cache_salt": "s"}  # vLLM's fields, outside the SDK's signature
    fields = {k: v for k, v in want.items() if k not in extra}

    def call(http):
        client = openai.OpenAI(base_url="http://rt/v1", api_key="k", http_client=http,
                               max_retries=0)  # fmt: skip
        client.responses.create(**fields, extra_body=extra)

    assert captured(call) == want

"""The official openai SDK against ragtrim, no other client change than base_url:
sync, async and streamed; chat and completions. The prompts are LangChain's stuff
prompts rendered by langchain_classic (no copied template text)."""

import asyncio

import pytest

pytest.importorskip("langchain_classic")

import openai  # noqa: E402
from langchain_classic.chains.question_answering.stuff_prompt import (  # noqa: E402
    CHAT_PROMPT,
    PROMPT,
)
from langchain_core.messages import convert_to_openai_messages  # noqa: E402

from tests.integration.clients.measure import check, twice  # noqa: E402
from tests.support.frameworks import MAX_TOKENS, Run, Wire  # noqa: E402

pytestmark = pytest.mark.integration


def _chat_request(docs, question) -> dict:
    messages = CHAT_PROMPT.format_messages(context="\n\n".join(docs), question=question)
    return {"messages": convert_to_openai_messages(messages)}


def _completion_request(docs, question) -> dict:
    return {"prompt": PROMPT.format(context="\n\n".join(docs), question=question)}


def _text(chunk, chat: bool) -> str:
    if not chunk.choices:  # the usage chunk
        return ""
    return (chunk.choices[0].delta.content or "") if chat else chunk.choices[0].text


def sdk(chat: bool, use_async: bool):
    def run(wire: Wire, docs, question, stream: bool) -> Run:
        body = (_chat_request if chat else _completion_request)(docs, question)
        body |= {"model": wire.model, "max_tokens": MAX_TOKENS, "temperature": 0}
        if use_async:
            return asyncio.run(_arun(wire, body, chat, stream))
        client = openai.OpenAI(base_url=wire.base_url, api_key="unused", http_client=wire.client())
        api = client.chat.completions if chat else client.completions
        if stream:
            return _pieces([_text(c, chat) for c in api.create(stream=True, **body)])
        out = api.create(**body)
        return Run(out.choices[0].message.content if chat else out.choices[0].text, 1)

    return run


async def _arun(wire: Wire, body: dict, chat: bool, stream: bool) -> Run:
    client = openai.AsyncOpenAI(base_url=wire.base_url, api_key="unused",
                                http_client=wire.aclient())  # fmt: skip
    api = client.chat.completions if chat else client.completions
    if stream:
        return _pieces([_text(c, chat) async for c in await api.create(stream=True, **body)])
    out = await api.create(**body)
    return Run(out.choices[0].message.content if chat else out.choices[0].text, 1)


def _pieces(parts: list[str]) -> Run:
    parts = [p for p in parts if p]
    return Run("".join(parts), len(parts))


CASES = [
    (chat, use_async, stream)
    for chat in (True, False) for use_async in (False, True) for stream in (False, True)
]  # fmt: skip


@pytest.mark.parametrize(("chat", "use_async", "stream"), CASES, ids=[
    f"{'chat' if c else 'completions'}-{'async' if a else 'sync'}-{'stream' if s else 'invoke'}"
    for c, a, s in CASES])  # fmt: skip
def test_openai_sdk_through_ragtrim(chat, use_async, stream, proxy, vllm_tiny, report):
    result = twice(proxy.url, vllm_tiny.base_url, vllm_tiny.model, sdk(chat, use_async), stream)
    row = check(result, {"langchain_stuff"}, stream)
    mode = f"{'chat' if chat else 'completions'}, {'async' if use_async else 'sync'}"
    mode += " (stream)" if stream else " (invoke)"
    report.append({"framework": "openai SDK", "mode": mode, **row})

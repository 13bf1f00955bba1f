"""The official openai SDK works against ragtrim unchanged (sync, async, streaming)."""

import asyncio

import openai

MESSAGES = [{"role": "user", "content": "hi"}]


def test_sync_chat_and_completion(stub, make_proxy):
    proxy = make_proxy([stub.url])
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="x")
    assert client.chat.completions.create(model="stub-model", messages=MESSAGES).choices
    assert client.completions.create(model="stub-model", prompt="hi").choices[0].text == "hello"
    assert [m.id for m in client.models.list()] == ["stub-model"]


def test_sync_streaming(stub, make_proxy):
    proxy = make_proxy([stub.url])
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="x")
    stream = client.chat.completions.create(model="stub-model", messages=MESSAGES, stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream)
    assert text == "".join(f"t{i} " for i in range(20))


def test_async_streaming(stub, make_proxy):
    proxy = make_proxy([stub.url])

    async def run() -> str:
        client = openai.AsyncOpenAI(base_url=f"{proxy.url}/v1", api_key="x")
        stream = await client.completions.create(model="stub-model", prompt="hi", stream=True)
        return "".join([c.choices[0].text async for c in stream])

    assert asyncio.run(run()) == "".join(f"t{i} " for i in range(20))


def test_sdk_raises_on_mid_stream_error_event(stub, make_proxy):
    proxy = make_proxy([stub.url])
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="x", max_retries=0)
    stream = client.chat.completions.create(
        model="stub-model", messages=MESSAGES, stream=True, extra_body={"stub": {"fail_after": 2}}
    )
    try:
        list(stream)
    except openai.APIError as exc:
        assert "mid-stream" in str(exc)
    else:
        raise AssertionError("the SDK should raise on the error event")


def test_sdk_sees_404_for_unknown_model(stub, make_proxy):
    proxy = make_proxy([stub.url])
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="x", max_retries=0)
    try:
        client.chat.completions.create(model="nope", messages=MESSAGES)
    except openai.NotFoundError as exc:
        assert exc.body["code"] == "model_not_found"
    else:
        raise AssertionError("expected NotFoundError")

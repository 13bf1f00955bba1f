"""Through ragtrim, a real vLLM answers exactly as it does directly (temperature 0)."""

import json

import httpx
import openai
import pytest

pytestmark = pytest.mark.integration
MESSAGES = [{"role": "user", "content": "Tell me about the history of the printing press."}]


def _post(url: str, path: str, body: dict) -> httpx.Response:
    resp = httpx.post(url + path, json=body, timeout=120)
    assert resp.status_code == 200, resp.text
    return resp


def _stream_text(resp: httpx.Response, chat: bool) -> str:
    out = []
    for event in resp.text.split("\n\n"):
        data = event.removeprefix("data: ").strip()
        if not data or data == "[DONE]":
            continue
        for choice in json.loads(data)["choices"]:
            out.append(choice["delta"].get("content") or "" if chat else choice["text"])
    return "".join(out)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("route", ["chat", "completions"])
def test_same_content_direct_and_through_ragtrim(vllm_tiny, ragtrim, route, stream):
    proxy = ragtrim([vllm_tiny.base_url])
    chat = route == "chat"
    path = "/v1/chat/completions" if chat else "/v1/completions"
    body = {"model": vllm_tiny.model, "max_tokens": 24, "temperature": 0, "seed": 7,
            "stream": stream}  # fmt: skip
    body |= {"messages": MESSAGES} if chat else {"prompt": "The printing press was"}
    direct = _post(vllm_tiny.base_url, path, body)
    proxied = _post(proxy.url, path, body)
    if stream:
        assert proxied.headers["content-type"].startswith("text/event-stream")
        assert _stream_text(proxied, chat) == _stream_text(direct, chat)
    else:
        d, p = direct.json()["choices"][0], proxied.json()["choices"][0]
        assert (p.get("message") or p["text"]) == (d.get("message") or d["text"])
        assert proxied.json()["usage"]["prompt_tokens"] == direct.json()["usage"]["prompt_tokens"]


def test_openai_sdk_against_real_vllm(vllm_tiny, ragtrim):
    proxy = ragtrim([vllm_tiny.base_url])
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="x")
    args = {"model": vllm_tiny.model, "messages": MESSAGES, "max_tokens": 8, "temperature": 0}
    whole = client.chat.completions.create(**args).choices[0].message.content
    streamed = "".join(
        c.choices[0].delta.content or ""
        for c in client.chat.completions.create(**args, stream=True)
        if c.choices
    )
    assert whole == streamed
    assert [m.id for m in client.models.list()] == [vllm_tiny.model]


def test_vllm_fields_pass_through(vllm_tiny, ragtrim):
    proxy = ragtrim([vllm_tiny.base_url])
    body = {"model": vllm_tiny.model, "prompt": "hello", "max_tokens": 4, "temperature": 0,
            "stream": True, "stream_options": {"include_usage": True}}  # fmt: skip
    events = [e for e in _post(proxy.url, "/v1/completions", body).text.split("\n\n") if e]
    usage = json.loads(events[-2].removeprefix("data: "))
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 4
    tok = httpx.post(f"{proxy.url}/tokenize", json={"model": vllm_tiny.model, "prompt": "hi"})
    assert tok.status_code == 200 and tok.json()["count"] >= 1

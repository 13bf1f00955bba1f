"""Quotas count what vLLM will count, before any expensive work (issue 33, item 5).

With a few tokens left, a prompt of 100k token ids, 400 KB of `tools`, or 400 KB of
tool-call arguments were all admitted (the estimate read only message text), and the
quota check ran after segmentation and compression, so a tenant over its quota still
cost that work. Here every prompt form is refused at the limit, and the segmenter and
the compressor are counted: neither runs for a refused request. Each heavy body also
names a RAG context in its `ragtrim` field, which a request let through would compress.
"""

import httpx
import pytest

from proxy.prompt.segment import Segmenter
from tests.support.compressor_doubles import HalfWords

TENANCY = {"api_keys": {"key-a": "acme"}, "salt_secret": "quota-forms-secret!"}
ACME = {"authorization": "Bearer key-a"}
ALWAYS = {"policy": "always", "min_context_tokens": 0, "rate": 0.5}
HEAVY = "z" * 400_000  # ~100k tokens, whatever field carries it
DOCS = ["The bridge was opened in 1932 and carries eight lanes of traffic. " * 8,
        "The harbour hosts ferries to the northern beaches every half hour. " * 8]  # fmt: skip


def _rag(**extra) -> dict:
    messages = [{"role": "system", "content": "Answer from the context.\n\n" + "\n\n".join(DOCS)},
                {"role": "user", "content": "When was the bridge opened?"}]  # fmt: skip
    return {"model": "stub-model", "messages": messages, "ragtrim": {"documents": DOCS}, **extra}


def _assistant(**fields) -> dict:
    return {"role": "assistant", "content": None, **fields}


def _with_messages(*before) -> dict:
    body = _rag()
    body["messages"] = [*before, *body["messages"]]
    return body


FORMS = {
    "token ids": ("completions", {"model": "stub-model", "prompt": list(range(100_000))}),
    "batched token ids": ("completions", {"model": "stub-model",
                                          "prompt": [list(range(50_000))] * 2}),
    "tools": ("chat", _rag(tools=[{"type": "function", "function": {
        "name": "f", "description": HEAVY, "parameters": {"type": "object"}}}])),
    "tool-call arguments": ("chat", _with_messages(_assistant(tool_calls=[{
        "id": "c1", "type": "function", "function": {"name": "f", "arguments": HEAVY}}]))),
    "text parts": ("chat", _with_messages({"role": "user", "content": [
        {"type": "text", "text": HEAVY[:200_000]}, {"type": "text", "text": HEAVY[:200_000]}]})),
    "image parts": ("chat", _with_messages({"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}] * 1_200})),
    "response_format": ("chat", _rag(response_format={"type": "json_schema", "json_schema": {
        "name": "s", "schema": {"type": "object", "description": HEAVY}}})),
    "guided_json": ("chat", _rag(guided_json={"type": "object", "description": HEAVY})),
    "documents": ("chat", _rag(documents=[{"title": "t", "text": HEAVY}])),
    "a string prompt, compression off": ("completions", {
        "model": "stub-model", "prompt": HEAVY, "ragtrim": {"compress": False}}),
}  # fmt: skip


@pytest.fixture
def counted(monkeypatch) -> dict:
    """Calls of the segmenter (chat and prompt), whichever instance the app built."""
    calls = {"segment": 0}
    for method in ("chat", "prompt"):
        original = getattr(Segmenter, method)

        def wrapper(self, *args, _original=original, **kwargs):
            calls["segment"] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(Segmenter, method, wrapper)
    return calls


def _post(proxy, route: str, body: dict) -> httpx.Response:
    path = "/v1/chat/completions" if route == "chat" else "/v1/completions"
    return httpx.post(f"{proxy.url}{path}", json=body, headers=ACME, timeout=60)


def test_every_prompt_form_is_refused_at_the_limit_before_any_work(stub, make_proxy, counted):
    compressor = HalfWords()
    quotas = {"tokens_per_minute": 50_000, "window_s": 3600}  # no window turns mid-test
    proxy = make_proxy([stub.url], tenancy={**TENANCY, "quotas": quotas},
                       compression=ALWAYS, compressor=compressor)  # fmt: skip
    warm = compressor.calls  # its start-up measurement
    first = _post(proxy, "chat", _rag())  # a normal RAG request: segmented and compressed
    work = (counted["segment"], compressor.calls)
    assert first.status_code == 200 and work == (1, warm + 1)
    left = int(first.headers["x-ratelimit-remaining-tokens"])
    assert 49_000 < left < 50_000  # ~100k tokens each form: far above what is left
    refused = {}
    for form, (route, body) in FORMS.items():
        resp = _post(proxy, route, body)
        refused[form] = (resp.status_code, resp.json()["error"]["code"] if resp.is_error else "")
    assert refused == dict.fromkeys(FORMS, (429, "rate_limit_exceeded")), refused
    assert (counted["segment"], compressor.calls) == work, "work done for a refused request"


def test_a_tenant_already_out_costs_no_segmentation_or_compression(stub, make_proxy, counted):
    compressor = HalfWords()
    quotas = {"requests_per_minute": 1, "window_s": 3600}  # no window turns mid-test
    proxy = make_proxy([stub.url], tenancy={**TENANCY, "quotas": quotas},
                       compression=ALWAYS, compressor=compressor)  # fmt: skip
    assert _post(proxy, "chat", _rag()).status_code == 200
    work = (counted["segment"], compressor.calls)
    again = _post(proxy, "chat", _rag())
    assert again.status_code == 429 and again.headers["x-ratelimit-remaining-requests"] == "0"
    assert (counted["segment"], compressor.calls) == work  # refused before segmentation

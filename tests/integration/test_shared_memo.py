"""Two ragtrim instances sharing real Redis share compressed chunks (real extractive
compressor, real stub upstream)."""

import time
import uuid

import httpx
import pytest

from tests.doubles.stub_vllm import StubVllm
from tests.support.servers import serving

pytestmark = pytest.mark.integration
SYSTEM = (
    "Use the following pieces of context to answer the user's question. \n"
    "If you don't know the answer, just say that you don't know, don't try to make up an "
    "answer.\n----------------\n"
)


def rag_body(docs: list[str]) -> dict:
    messages = [
        {"role": "system", "content": SYSTEM + "\n\n".join(docs)},
        {"role": "user", "content": "When was the bridge opened?"},
    ]
    return {"model": "stub-model", "messages": messages, "stub": {"echo": True}}


def wait_compressor_ready(url: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while httpx.get(f"{url}/readyz").json()["compressor"] != "ready":
        assert time.monotonic() < deadline, "compressor did not load"
        time.sleep(0.2)


def test_memo_hits_across_two_instances(ragtrim):
    """A set past the inline size (proxy/compression/features.py INLINE_CHARS): a smaller
    seen one is computed on the loop for less than a memo round trip, and not memoized."""
    tag = uuid.uuid4().hex[:8]
    filler = " ".join(
        f"Paragraph {i} of the {tag} archive lists minor repairs." for i in range(120)
    )
    docs = [
        f"Report {tag}. The bridge was opened in 1932 after six years of work. It carries "
        "eight lanes of traffic. Tourists walk across it every day. The toll was removed. "
        + filler,
        f"Note {tag}. The harbour hosts ferries to the northern beaches. Ferries run every "
        "half hour. The opera house stands nearby. Many visitors arrive by train. " + filler,
    ]
    settings = {  # the memo, not issue 29's stable forms (which would answer the repeat)
        "redis": {"url": "redis://127.0.0.1:6379/0"},
        "compression": {"policy": "always", "min_context_tokens": 0, "rate": 0.5,
                        "stable": {"enabled": False}},
    }  # fmt: skip
    with serving(StubVllm()) as stub:
        a, b = ragtrim([stub.url], **settings), ragtrim([stub.url], **settings)
        for proxy in (a, b):  # the first requests would find the model loading: wait
            wait_compressor_ready(proxy.url)
        first = httpx.post(f"{a.url}/v1/chat/completions", json=rag_body(docs), timeout=60)
        second = httpx.post(f"{b.url}/v1/chat/completions", json=rag_body(docs), timeout=60)
    assert first.headers["x-ragtrim-cache-hits"] == "0/2"
    assert second.headers["x-ragtrim-cache-hits"] == "2/2"
    sent = second.json()["echo"]["messages"][0]["content"]
    assert sent == first.json()["echo"]["messages"][0]["content"]
    assert "1932" in sent  # the answer-bearing sentence survived
    assert int(second.headers["x-ragtrim-tokens-after"]) < int(
        second.headers["x-ragtrim-tokens-before"]
    )


def test_a_stable_form_is_shared_across_two_instances(ragtrim):
    """Issue 29: the compressed form one replica stored in Redis is the bytes the other
    sends for a follow-up over the same documents."""
    tag = uuid.uuid4().hex[:8]
    docs = [f"Report {tag}. The bridge was opened in 1932 after six years of work. It "
            "carries eight lanes of traffic. Tourists walk across it every day.",
            f"Note {tag}. The harbour hosts ferries to the northern beaches. Ferries run "
            "every half hour. The opera house stands nearby."]  # fmt: skip
    settings = {
        "redis": {"url": "redis://127.0.0.1:6379/0"},
        "compression": {"policy": "always", "min_context_tokens": 0, "rate": 0.5},
    }
    with serving(StubVllm()) as stub:
        a, b = ragtrim([stub.url], **settings), ragtrim([stub.url], **settings)
        for proxy in (a, b):
            wait_compressor_ready(proxy.url)
        first = httpx.post(f"{a.url}/v1/chat/completions", json=rag_body(docs), timeout=60)
        again = httpx.post(f"{b.url}/v1/chat/completions", json=rag_body(docs), timeout=60)
    assert again.headers["x-ragtrim-decision"].startswith("compress:stable")
    sent = again.json()["echo"]["messages"][0]["content"]
    assert sent == first.json()["echo"]["messages"][0]["content"]

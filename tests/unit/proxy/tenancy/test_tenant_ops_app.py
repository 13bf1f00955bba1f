"""Per-tenant limits, accounting and the access log through a real ragtrim (uvicorn)
in front of the stub backend (in-process store: the per-replica behaviour; the shared
behaviour across replicas is tests/integration/test_tenant_quotas.py)."""

import json
import logging
import time

import httpx

from proxy.telemetry.accesslog import LOGGER
from tests.support.compressor_doubles import HalfWords
from tests.support.rag_requests import BRIDGE_ALWAYS as ALWAYS
from tests.support.rag_requests import bridge_body as rag_body

TENANCY = {"api_keys": {"key-a": "acme", "key-b": "globex"}, "salt_secret": "ops-tenancy-secret!"}
ACME, GLOBEX = ({"authorization": f"Bearer {k}"} for k in ("key-a", "key-b"))


def chat(proxy, headers, body=None) -> httpx.Response:
    body = body or {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}]}
    return httpx.post(f"{proxy.url}/v1/chat/completions", json=body, headers=headers)


def test_tenant_over_its_limit_gets_openai_429_and_others_are_untouched(stub, make_proxy):
    proxy = make_proxy(
        [stub.url], tenancy={**TENANCY, "quotas": {"requests_per_minute": 2, "window_s": 3600}}
    )
    first, second, third = (chat(proxy, ACME) for _ in range(3))
    assert [r.status_code for r in (first, second)] == [200, 200]
    assert first.headers["x-ratelimit-limit-requests"] == "2"
    assert [r.headers["x-ratelimit-remaining-requests"] for r in (first, second)] == ["1", "0"]
    assert third.status_code == 429
    assert third.json()["error"]["code"] == "rate_limit_exceeded"
    assert third.json()["error"]["type"] == "rate_limit_error"
    assert int(third.headers["retry-after"]) >= 1
    assert third.headers["x-ratelimit-remaining-requests"] == "0"
    assert third.headers["x-ratelimit-reset-requests"].endswith("s")
    assert chat(proxy, GLOBEX).status_code == 200
    metrics = httpx.get(f"{proxy.url}/metrics", headers=ACME).text  # names no tenant (issue 44)
    assert 'ragtrim_quota_refusals_total{limit="requests",tenant="all"} 1.0' in metrics


def test_tokens_are_counted_after_compression(stub, make_proxy):
    quotas = {"tokens_per_minute": 100_000, "window_s": 3600}
    plain = make_proxy(
        [stub.url], tenancy={**TENANCY, "quotas": quotas}, compression={"enabled": False}
    )
    trimmed = make_proxy([stub.url], tenancy={**TENANCY, "quotas": quotas}, compression=ALWAYS,
                         compressor=HalfWords())  # fmt: skip
    charged = []
    for proxy in (plain, trimmed):
        resp = chat(proxy, ACME, rag_body())
        assert resp.status_code == 200
        charged.append(100_000 - int(resp.headers["x-ratelimit-remaining-tokens"]))
    assert int(resp.headers["x-ragtrim-tokens-after"]) < int(
        resp.headers["x-ragtrim-tokens-before"]
    )
    assert charged[1] < charged[0]  # compression bought quota


def test_computed_charge_counts_what_the_engine_prefilled(stub, make_proxy):
    """quotas.charge=computed: once answered, a request weighs what vLLM computed (the
    stub reports 5 prompt tokens, none cached), not the estimate admission counted."""
    quotas = {"tokens_per_minute": 100_000, "charge": "computed", "window_s": 3600}
    proxy = make_proxy(
        [stub.url], tenancy={**TENANCY, "quotas": quotas}, compression={"enabled": False}
    )
    first = chat(proxy, ACME, rag_body())
    admitted = 100_000 - int(first.headers["x-ratelimit-remaining-tokens"])
    assert admitted > 5
    deadline, sent = time.monotonic() + 5, 1  # settlements land after the last byte
    while True:
        left = int(chat(proxy, ACME, rag_body()).headers["x-ratelimit-remaining-tokens"])
        if left == 100_000 - 5 * sent - admitted:  # those before it settled to 5 each
            break
        assert time.monotonic() < deadline, left
        sent += 1
        time.sleep(0.05)


def test_usage_endpoint_a_tenant_sees_its_own_the_admin_key_all(stub, make_proxy):
    accounting = {"price_per_1k_prompt_tokens": 2.0, "admin_key": "admin-key-123"}
    labelled = {**TENANCY, "metrics_tenant_labels": True}  # /metrics names tenants: asked for
    proxy = make_proxy([stub.url], tenancy={**labelled, "accounting": accounting},
                       compression=ALWAYS, compressor=HalfWords())  # fmt: skip
    answers = [chat(proxy, ACME, rag_body()) for _ in range(3)] + [chat(proxy, GLOBEX)]
    assert all(r.status_code == 200 for r in answers)
    url = f"{proxy.url}/v1/ragtrim/usage"
    own = httpx.get(url, headers=ACME).json()["data"]
    assert [t["tenant"] for t in own] == ["acme"]
    today = own[0]["today"]
    before = sum(int(r.headers["x-ragtrim-tokens-before"]) for r in answers[:3])
    after = sum(int(r.headers["x-ragtrim-tokens-after"]) for r in answers[:3])
    assert today["requests"] == 3 and today["tokens_before"] == before
    assert today["tokens_after"] == after and today["tokens_removed"] == before - after > 0
    assert today["prompt_tokens"] == 3 * 5  # the stub's usage: 5 prompt tokens each
    assert today["cost"] == 3 * 5 / 1000 * 2.0 and own[0]["month"]["requests"] == 3
    assert today["cost_saved"] == round((before - after) / 1000 * 2.0, 6)
    admin = httpx.get(url, headers={"authorization": "Bearer admin-key-123"}).json()["data"]
    assert {t["tenant"]: t["today"]["requests"] for t in admin} == {"acme": 3, "globex": 1}
    assert httpx.get(url, headers={"authorization": "Bearer nope"}).status_code == 401
    metrics = httpx.get(f"{proxy.url}/metrics", headers=ACME).text
    assert 'ragtrim_tenant_requests_total{tenant="acme"} 3.0' in metrics
    assert (
        f'ragtrim_tenant_tokens_removed_total{{tenant="acme"}} {float(before - after)}' in metrics
    )


class Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_access_log_one_json_line_per_request_without_prompt_text(stub, make_proxy):
    handler = Lines()
    logging.getLogger(LOGGER).addHandler(handler)
    try:
        proxy = make_proxy([stub.url], tenancy=TENANCY, access_log={"enabled": True},
                           compression=ALWAYS, compressor=HalfWords())  # fmt: skip
        ok = chat(proxy, ACME, rag_body())
        refused = httpx.post(f"{proxy.url}/v1/chat/completions", json=rag_body())
        deadline = time.monotonic() + 5  # the line is written after the last byte is sent
        while sum('"/v1/chat/completions"' in x for x in handler.lines) < 2:
            assert time.monotonic() < deadline, handler.lines
            time.sleep(0.01)
    finally:
        logging.getLogger(LOGGER).removeHandler(handler)
    mine = [json.loads(line) for line in handler.lines if '"/v1/chat/completions"' in line]
    assert len(mine) == 2
    line = mine[0]
    assert line["request_id"] == ok.headers["x-request-id"] and line["tenant"] == "acme"
    assert line["status"] == 200 and line["model"] == "stub-model"
    assert line["template"] == ok.headers["x-ragtrim-template"]
    assert line["decision"] == ok.headers["x-ragtrim-decision"]
    assert line["tokens_before"] == int(ok.headers["x-ragtrim-tokens-before"])
    assert line["tokens_after"] == int(ok.headers["x-ragtrim-tokens-after"])
    assert line["cached_tokens"] == 0 and line["backend"] == stub.url
    assert 0 < line["ttft_ms"] <= line["total_ms"]
    assert mine[1]["status"] == refused.status_code == 401 and mine[1]["tenant"] is None
    text = "\n".join(handler.lines)
    assert "bridge" not in text and "secret" not in text  # no prompt text

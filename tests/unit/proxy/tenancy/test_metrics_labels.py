"""Issue 44 item 3: /metrics, which any valid key reads, named every tenant with its
requests, tokens, cache hits and refusals. By default it names none (tenant="all");
per-tenant figures stay in the admin usage report, and `tenancy.metrics_tenant_labels`
brings the labels back for an operator who wants them."""

import httpx

TENANCY = {"api_keys": {"key-a": "acme", "key-b": "globex"}, "salt_secret": "labels-secret-16+"}
ACME, GLOBEX = ({"authorization": f"Bearer {k}"} for k in ("key-a", "key-b"))
CHAT = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}]}


def traffic(proxy) -> str:
    """Answers and a refusal for both tenants, then /metrics as a tenant reads it."""
    for key in (ACME, ACME, ACME, GLOBEX):
        httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT, headers=key)
    return httpx.get(f"{proxy.url}/metrics", headers=GLOBEX).text


def test_with_tenancy_metrics_name_no_tenant_by_default(stub, make_proxy):
    proxy = make_proxy(
        [stub.url], tenancy={**TENANCY, "quotas": {"requests_per_minute": 2, "window_s": 3600}}
    )
    text = traffic(proxy)
    assert "acme" not in text and "globex" not in text
    assert 'ragtrim_tenant_requests_total{tenant="all"}' in text
    assert 'ragtrim_quota_refusals_total{limit="requests",tenant="all"}' in text
    usage = httpx.get(f"{proxy.url}/v1/ragtrim/usage", headers=ACME).json()["data"]
    assert usage[0]["tenant"] == "acme" and usage[0]["today"]["requests"] == 2  # still here


def test_the_setting_brings_the_labels_back(stub, make_proxy):
    labelled = {**TENANCY, "metrics_tenant_labels": True}
    text = traffic(
        make_proxy(
            [stub.url], tenancy={**labelled, "quotas": {"requests_per_minute": 2, "window_s": 3600}}
        )
    )
    assert 'ragtrim_quota_refusals_total{limit="requests",tenant="acme"}' in text
    assert 'ragtrim_tenant_requests_total{tenant="globex"}' in text

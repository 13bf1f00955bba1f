"""Every route that reaches a backend or the memo authenticates: the pass-through
routes and /v1/compress included (a key is needed; the memo is the tenant's)."""

import httpx

from tests.unit.proxy.doubles import HalfWords

TENANCY = {"api_keys": {"key-a": "acme", "key-b": "globex"}, "salt_secret": "route-tenancy-secret"}
DOCS = ["Paris is the capital of France and its largest city.", "The Seine flows north."]


def test_pass_through_routes_need_a_valid_key(stub, make_proxy):
    proxy = make_proxy([stub.url], tenancy=TENANCY)
    for path in ("/tokenize", "/v1/embeddings"):
        resp = httpx.post(f"{proxy.url}{path}", json={"prompt": "a"})
        assert resp.status_code == 401 and resp.json()["error"]["code"] == "invalid_api_key"
    ok = httpx.post(f"{proxy.url}/tokenize", json={"prompt": "a"},
                    headers={"authorization": "Bearer key-a"})  # fmt: skip
    assert ok.status_code == 200 and ok.json()["count"] == 3


def test_compress_endpoint_authenticates_and_warms_only_the_tenants_memo(stub, make_proxy):
    proxy = make_proxy([stub.url], tenancy=TENANCY, compressor=HalfWords())
    url, body = f"{proxy.url}/v1/compress", {"documents": DOCS, "rate": 0.5}
    assert httpx.post(url, json=body).status_code == 401
    acme, globex = ({"authorization": f"Bearer {k}"} for k in ("key-a", "key-b"))
    assert httpx.post(url, json=body, headers=acme).json()["cache_hits"] == 0
    assert httpx.post(url, json=body, headers=acme).json()["cache_hits"] == len(DOCS)
    assert httpx.post(url, json=body, headers=globex).json()["cache_hits"] == 0

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


def test_with_tenancy_control_routes_need_a_key_but_the_probes_do_not(stub, make_proxy):
    proxy = make_proxy([stub.url], tenancy=TENANCY)
    key = {"authorization": "Bearer key-a"}
    for path in ("/metrics", "/openapi.json", "/v1/models"):
        resp = httpx.get(f"{proxy.url}{path}")
        assert resp.status_code == 401 and resp.json()["error"]["code"] == "invalid_api_key"
        assert stub.url not in resp.text
        assert httpx.get(f"{proxy.url}{path}", headers=key).status_code == 200, path
    assert httpx.get(f"{proxy.url}/healthz").status_code == 200
    bare = httpx.get(f"{proxy.url}/readyz")
    assert bare.status_code == 200 and bare.json() == {"ready": True}
    assert stub.url in httpx.get(f"{proxy.url}/readyz", headers=key).json()["healthy"]


def test_backend_header_is_off_with_tenancy_unless_asked_for(stub, make_proxy):
    chat = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}]}
    key = {"authorization": "Bearer key-a"}
    for setting, shown in (("auto", False), ("on", True), ("off", False)):
        proxy = make_proxy([stub.url], tenancy={**TENANCY, "backend_header": setting})
        resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=chat, headers=key)
        assert resp.status_code == 200
        assert ("x-ragtrim-backend" in resp.headers) is shown, setting
    off = make_proxy([stub.url], tenancy={"backend_header": "off"})
    resp = httpx.post(f"{off.url}/v1/chat/completions", json=chat)
    assert resp.status_code == 200 and "x-ragtrim-backend" not in resp.headers

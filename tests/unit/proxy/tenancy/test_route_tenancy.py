"""Every route that reaches a backend or the memo authenticates: the pass-through
routes and /v1/compress included (a key is needed; the memo is the tenant's)."""

import json

import httpx
import pytest

from proxy.http import route_table
from proxy.tenancy.identity import tenant_salt
from tests.support.compressor_doubles import HalfWords

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


# Issue 33 item 4: every route in the table keeps tenants apart. Each route the table
# passes to a backend is classified here, so a route added later must be classified too.
SALTED = {  # vLLM's request model takes cache_salt (tests/unit/proxy/http/test_vllm_routes.py)
    "/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings", "/v1/score",
    "/v1/rerank", "/v1/chat/completions/batch", "/v1/messages", "/invocations", "/v1/systemone",
    "/generative_scoring", "/inference/v1/generate", "/v1/chat/completions/render",
    "/v1/completions/render", "/v1/messages/render", "/v1/responses/render", "/pooling",
    "/classify", "/score", "/rerank", "/v2/rerank",
}  # fmt: skip
UNSALTED = {  # why no salt: nothing reaches vLLM's prefix cache, or vLLM takes none
    "/tokenize", "/detokenize", "/tokenizer_info", "/v1/messages/count_tokens",  # tokenizer only
    "/v1/chat/completions/derender", "/v1/completions/derender",  # token ids to text
    "/v1/audio/transcriptions", "/v1/audio/translations",  # multipart; vLLM's form has no salt
    "/v2/embed",  # vLLM's Cohere-style embed request has no cache_salt field
    "/v1/responses/{id}", "/v1/responses/{id}/cancel",  # a stored response, no model run
}  # fmt: skip
ACME, GLOBEX = ({"authorization": f"Bearer {k}"} for k in ("key-a", "key-b"))


def passed_routes() -> list[tuple[str, str]]:
    """(method, table path) of every route the forwarder sends to a backend."""
    exact = [(min(r.methods), p) for p, r in route_table.EXACT.items() if r.kind != "control"]
    templated = [(min(r.methods), "/".join(t)) for t, r in route_table.TEMPLATES]
    return exact + templated


def body_for(path: str) -> dict:
    if path == "/v1/chat/completions":
        return {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}]}
    return {"model": "stub-model", "prompt": "hi", "input": "hi"}


def create_response(proxy, key: dict, stream: bool = False) -> str:
    body = {"model": "stub-model", "input": "acme's plan", "stream": stream}
    resp = httpx.post(f"{proxy.url}/v1/responses", headers=key, json=body)
    assert resp.status_code == 200, resp.text
    if not stream:
        return resp.json()["id"]
    created = next(line for line in resp.text.splitlines() if "response.created" in line
                   and line.startswith("data:"))  # fmt: skip
    return json.loads(created[5:])["response"]["id"]


def send(proxy, method: str, path: str, headers, rid: str = "resp_1") -> httpx.Response:
    url = f"{proxy.url}{path.replace('{id}', rid)}"
    body = None if method == "GET" else json.dumps({**body_for(path), "cache_salt": "forged"})
    return httpx.request(method, url, content=body, headers=headers)


def test_every_salted_route_carries_the_tenants_salt_over_the_clients(recording, make_proxy):
    assert {path for _, path in passed_routes()} == SALTED | UNSALTED  # each one classified
    assert {p for p, r in route_table.EXACT.items() if r.salted} == SALTED
    proxy = make_proxy([recording.url], tenancy=TENANCY)
    rid = create_response(proxy, ACME)
    for method, path in passed_routes():
        recording.backend.seen.clear()
        resp = send(proxy, method, path, ACME, rid)
        assert resp.status_code == 200, (path, resp.text)
        (seen,) = recording.backend.at(path.replace("{id}", rid))
        expected = tenant_salt("acme", TENANCY["salt_secret"]) if path in SALTED else None
        if path in SALTED or method == "GET":
            assert seen["cache_salt"] == expected, path


def test_no_client_key_reaches_the_backend_on_any_route(recording, make_proxy):
    proxy = make_proxy([recording.url], tenancy=TENANCY)
    rid = create_response(proxy, ACME)
    for method, path in passed_routes():
        assert send(proxy, method, path, ACME, rid).status_code == 200, path
    assert {s["path"] for s in recording.backend.seen} >= {
        p.replace("{id}", rid) for _, p in passed_routes()}  # fmt: skip
    for seen in recording.backend.seen:
        names = {k for k, _ in seen["headers"]}
        assert "authorization" not in names, seen["path"]
        assert not [v for _, v in seen["headers"] if "key-a" in v], seen["path"]


@pytest.mark.parametrize("stream", [False, True])
def test_tenant_b_cannot_read_cancel_or_continue_tenant_as_response(recording, make_proxy,
                                                                     stream):  # fmt: skip
    proxy = make_proxy([recording.url], tenancy=TENANCY)
    rid = create_response(proxy, ACME, stream=stream)
    for method, path in (("GET", "/v1/responses/{id}"), ("POST", "/v1/responses/{id}/cancel")):
        refused = send(proxy, method, path, GLOBEX, rid)
        assert refused.status_code == 404, (path, refused.text)
        assert refused.json()["error"]["type"] == "invalid_request_error"
        assert "secret" not in refused.text
    cont = {"model": "stub-model", "input": "and?", "previous_response_id": rid}
    refused = httpx.post(f"{proxy.url}/v1/responses", json=cont, headers=GLOBEX)
    assert refused.status_code == 404 and rid in refused.json()["error"]["message"]
    assert not [s for s in recording.backend.seen if s["path"] != "/v1/responses"
                or b"previous_response_id" in s["body"]]  # nothing of B's reached it  # fmt: skip
    assert httpx.post(f"{proxy.url}/v1/responses", json=cont, headers=ACME).status_code == 200
    mine = send(proxy, "GET", "/v1/responses/{id}", ACME, rid)
    assert mine.status_code == 200 and mine.json()["output_text"] == "secret of acme's plan"
    unknown = send(proxy, "GET", "/v1/responses/{id}", ACME, "resp_999")
    assert unknown.status_code == 404


def keyed_routes() -> list[tuple[str, str]]:
    """Every route that reads a key: the traffic routes, the keyed control routes and
    the two that authenticate themselves."""
    control = [(min(r.methods), p) for p, r in route_table.EXACT.items() if r.keyed]
    own = [("POST", "/v1/compress"), ("GET", "/v1/ragtrim/usage")]  # authenticate themselves
    return passed_routes() + control + own


@pytest.mark.parametrize("order", [("Bearer nope", "Bearer key-a"), ("Bearer key-a", "Bearer nope"),
                                   ("Bearer key-a", "Bearer key-a")])  # fmt: skip
def test_a_duplicated_authorization_header_is_refused_on_every_keyed_route(recording, make_proxy,
                                                                            order):  # fmt: skip
    proxy = make_proxy(
        [recording.url], tenancy={**TENANCY, "accounting": {"admin_key": "key-admin"}}
    )
    rid = create_response(proxy, ACME)
    recording.backend.seen.clear()
    twice = [("authorization", order[0]), ("authorization", order[1])]
    for method, path in keyed_routes():
        resp = send(proxy, method, path, twice, rid)
        assert resp.status_code == 401, (path, resp.status_code, resp.text)
        assert resp.json()["error"]["code"] == "invalid_api_key", path
    assert [s for s in recording.backend.seen if s["path"] != "/tokenize"] == []
    admin = [("authorization", "Bearer key-admin"), ("authorization", "Bearer key-admin")]
    assert httpx.get(f"{proxy.url}/v1/ragtrim/usage", headers=admin).status_code == 401
    bare = httpx.get(f"{proxy.url}/readyz", headers=twice)
    assert bare.status_code == 200 and bare.json() == {"ready": True}  # no details either

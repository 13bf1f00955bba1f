"""Issue 44 item 4: every pass-through route that runs the model is admitted and
accounted like chat. A tenant over its quota gets the 429 in OpenAI's envelope, and the
usage report counts what it was answered (vLLM's usage included); a batch body counts
one request per conversation (proxy/http/route_table.py `Route.requests_in`). The list
is the route table's own, so a metered route added later is tested too."""

import json

import httpx
import pytest

from proxy.http import route_table
from tests.support.servers import serving

TENANCY = {"api_keys": {"key-a": "acme", "key-b": "globex"}, "salt_secret": "metered-secret-16+"}
ACME, GLOBEX = ({"authorization": f"Bearer {k}"} for k in ("key-a", "key-b"))
ADMIN = {"authorization": "Bearer admin-key-44"}
METERED = sorted(p for p, r in route_table.EXACT.items() if r.meter)
USAGE = {"prompt_tokens": 7, "total_tokens": 7}  # what vLLM's pooling answers report


class Answering:
    """Any route: a JSON answer with vLLM's usage; records each path it was sent."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        if scope["path"] not in ("/health", "/v1/models"):
            self.paths.append(scope["path"])
        body = {"object": "list", "data": [{"id": "stub-model"}], "usage": USAGE}
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})  # fmt: skip
        await send({"type": "http.response.body", "body": json.dumps(body).encode()})


@pytest.fixture
def backend():
    answering = Answering()
    with serving(answering) as server:
        server.backend = answering
        yield server


def post(proxy, path: str, key: dict, conversations: int = 1) -> httpx.Response:
    url = f"{proxy.url}{path}"
    if route_table.EXACT[path].meter == "form":  # audio: a multipart upload
        return httpx.post(url, headers=key, data={"model": "stub-model"},
                          files={"file": ("a.wav", b"RIFF" + bytes(64), "audio/wav")})  # fmt: skip
    chat = [{"role": "user", "content": "hi"}]
    body = {"model": "stub-model", "input": "hi", "prompt": "hi", "messages": chat}
    if route_table.EXACT[path].meter == "batch":
        body["messages"] = [chat] * conversations
    return httpx.post(url, headers=key, json=body)


def today(proxy) -> dict[str, dict]:
    report = httpx.get(f"{proxy.url}/v1/ragtrim/usage", headers=ADMIN).json()["data"]
    return {t["tenant"]: t["today"] for t in report}


def test_the_generation_routes_of_the_issue_are_metered():
    assert {"/invocations", "/v1/chat/completions/batch", "/inference/v1/generate",
            "/v1/embeddings", "/pooling", "/classify", "/score", "/rerank", "/v1/score",
            "/v1/rerank"} <= set(METERED)  # fmt: skip
    assert not {p for p in METERED if "render" in p or "token" in p}  # no model runs there


@pytest.mark.parametrize("path", METERED)
def test_over_quota_is_a_429_and_what_was_answered_is_counted(backend, make_proxy, path):
    quotas = {"requests_per_minute": 2, "window_s": 3600}  # no window turns mid-test
    proxy = make_proxy(
        [backend.url],
        tenancy={**TENANCY, "quotas": quotas, "accounting": {"admin_key": "admin-key-44"}},
    )
    first, second, third = (post(proxy, path, ACME) for _ in range(3))
    assert [first.status_code, second.status_code] == [200, 200], first.text
    assert second.headers["x-ratelimit-remaining-requests"] == "0"
    assert third.status_code == 429
    error = third.json()["error"]
    assert error["code"] == "rate_limit_exceeded" and error["type"] == "rate_limit_error"
    assert int(third.headers["retry-after"]) >= 1
    assert post(proxy, path, GLOBEX).status_code == 200  # another tenant's own window
    assert backend.backend.paths == [path] * 3  # the refused one never reached vLLM
    counted = today(proxy)
    assert counted["acme"]["requests"] == 2 and counted["globex"]["requests"] == 1
    assert counted["acme"]["prompt_tokens"] == 2 * USAGE["prompt_tokens"]


def test_a_batch_counts_one_request_per_conversation(backend, make_proxy):
    batch = "/v1/chat/completions/batch"
    quotas = {"requests_per_minute": 4, "window_s": 3600}  # no window turns mid-test
    proxy = make_proxy(
        [backend.url],
        tenancy={**TENANCY, "quotas": quotas, "accounting": {"admin_key": "admin-key-44"}},
    )
    three = post(proxy, batch, ACME, conversations=3)
    assert three.status_code == 200 and three.headers["x-ratelimit-remaining-requests"] == "1"
    refused = post(proxy, batch, ACME, conversations=2)  # 3 + 2 > 4: all or nothing
    assert refused.status_code == 429 and "requests" in refused.json()["error"]["message"]
    assert post(proxy, batch, ACME, conversations=1).status_code == 200
    assert today(proxy)["acme"]["requests"] == 4

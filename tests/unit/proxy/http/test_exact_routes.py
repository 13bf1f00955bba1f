"""Routes by exact match through a real ragtrim (issue 23, class 3): path tricks that
reached backend paths outside /v1, or the chat route without the pipeline (a client
picking another tenant's cache_salt, the `ragtrim` field relayed), are 404s in the
envelope, and the backend hears nothing; the upstream path comes from the table."""

import json

import pytest

from proxy.tenancy.identity import tenant_salt
from tests.support import rawhttp
from tests.support.servers import serving

SECRET = "exact-routes-secret-16"
TENANCY = {"api_keys": {"key-a": "acme", "key-b": "globex"}, "salt_secret": SECRET}
A = {"authorization": "Bearer key-a"}


class Recorder:
    """Records the path, query and body of every request; answers 200 JSON."""

    def __init__(self):
        self.seen: list[tuple[str, bytes, dict]] = []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        if scope["path"] == "/v1/models":
            out = {"object": "list", "data": [{"id": "stub-model"}]}
        else:
            self.seen.append((scope["path"], scope["query_string"], json.loads(body or b"{}")))
            out = {"id": "resp_1", "choices": [{"message": {"content": "ok"}}], "usage": {}}
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})  # fmt: skip
        await send({"type": "http.response.body", "body": json.dumps(out).encode()})


@pytest.fixture
def recorded(make_proxy):
    recorder = Recorder()
    with serving(recorder) as backend:
        yield recorder, make_proxy([backend.url], tenancy=TENANCY)


def _chat(salt: str) -> bytes:
    body = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}],
            "cache_salt": salt, "ragtrim": {"rate": 7}}  # fmt: skip
    return json.dumps(body).encode()


TRICKS = [
    "/v1/x/../chat/completions", "/v1/%2e%2e/v1/chat/completions", "/v1/../metrics",
    "/v1/%2e%2e/metrics", "/v1/chat%3Fcompletions", "/v1/%252e%252e/metrics",
    "/v1/./chat/completions", "/v1/unknown", "/v1/load_lora_adapter", "/stub/stats",
    "/v1/chat/completions/",
]  # fmt: skip


def test_path_tricks_are_404_and_never_reach_the_backend(recorded):
    recorder, proxy = recorded
    globex = tenant_salt("globex", SECRET)
    for path in TRICKS:
        resp = rawhttp.exchange(proxy.port, rawhttp.post(path, _chat(globex), A))
        assert resp.status == 404, path
        assert resp.error()["code"] == "not_found", path
    assert recorder.seen == []


def test_an_encoded_route_is_the_route_itself_with_the_whole_pipeline(recorded):
    recorder, proxy = recorded
    globex = tenant_salt("globex", SECRET)
    body = json.loads(_chat(globex))
    body["ragtrim"] = {"rate": 0.5}
    resp = rawhttp.exchange(
        proxy.port, rawhttp.post("/v1/chat%2fcompletions", json.dumps(body).encode(), A)
    )
    assert resp.status == 200
    [(path, _, seen)] = recorder.seen
    assert path == "/v1/chat/completions"
    assert seen["cache_salt"] == tenant_salt("acme", SECRET) and "ragtrim" not in seen
    bad = rawhttp.exchange(proxy.port, rawhttp.post("/v1/%63hat/completions", _chat(globex), A))
    assert bad.status == 400 and bad.error()["param"] == "rate"  # validated like the route


def test_pass_through_goes_to_the_table_path_with_the_query(recorded):
    recorder, proxy = recorded
    resp = rawhttp.exchange(proxy.port, rawhttp.post("/tokenize?x=1&y=a%20b", b"{}", A))
    assert resp.status == 200
    assert recorder.seen == [("/tokenize", b"x=1&y=a%20b", {})]
    made = rawhttp.exchange(proxy.port, rawhttp.post("/v1/responses", b"{}", A))
    assert made.status == 200  # resp_1 is acme's now (issue 33: owner checks)
    resp = rawhttp.exchange(proxy.port, rawhttp.get("/v1/responses/resp_1", A))
    assert resp.status == 200 and recorder.seen[-1][0] == "/v1/responses/resp_1"


def test_wrong_method_is_405_with_allow_and_unknown_is_404_everywhere(recorded):
    _, proxy = recorded
    resp = rawhttp.exchange(proxy.port, rawhttp.get("/tokenize", A))
    assert resp.status == 405 and resp.headers["allow"] == "POST"
    assert resp.error()["code"] == "method_not_allowed"
    resp = rawhttp.exchange(proxy.port, rawhttp.post("/healthz", b"{}"))
    assert resp.status == 405 and resp.error()["code"] == "method_not_allowed"
    for path in ("/nope", "/healthz/../metrics", "/docs"):
        resp = rawhttp.exchange(proxy.port, rawhttp.get(path))
        assert resp.status == 404 and resp.error()["type"] == "invalid_request_error", path

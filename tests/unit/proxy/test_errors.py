"""Every error leaves in the OpenAI envelope with the right status."""

import httpx
import pytest

CHAT = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}]}


def _error(resp: httpx.Response, status: int) -> dict:
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"[1, 2]", b'{"model": 3, "messages": []}', b'{"model": "m"}', b"\xff\xfe"],
)
def test_malformed_or_wrong_types_is_400(stub, make_proxy, content):
    proxy = make_proxy([stub.url])
    error = _error(httpx.post(f"{proxy.url}/v1/chat/completions", content=content), 400)
    assert error["type"] == "invalid_request_error"


def test_unknown_model_is_404(stub, make_proxy):
    proxy = make_proxy([stub.url])
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", json={**CHAT, "model": "nope"})
    assert _error(resp, 404)["param"] == "model"


def test_body_too_large_is_413(stub, make_proxy):
    proxy = make_proxy([stub.url], max_body_bytes=1000)
    big = {**CHAT, "messages": [{"role": "user", "content": "x" * 2000}]}
    _error(httpx.post(f"{proxy.url}/v1/chat/completions", json=big), 413)


def test_no_healthy_backend_is_503(make_proxy):
    from tests.support.servers import free_port

    proxy = make_proxy([f"http://127.0.0.1:{free_port()}"])
    _error(httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT), 503)
    assert httpx.get(f"{proxy.url}/readyz").status_code == 503


def test_unreachable_backend_is_502(make_proxy):
    from tests.doubles.stub_vllm import StubVllm
    from tests.support.servers import serving

    with serving(StubVllm()) as doomed:
        proxy = make_proxy([doomed.url], health={"interval_s": 60})
    error = _error(httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT), 502)
    assert error["code"] == "upstream_unavailable"


def test_first_byte_timeout_is_504(stub, make_proxy):
    proxy = make_proxy([stub.url], timeouts={"first_byte_s": 0.2})
    body = {**CHAT, "stream": True, "stub": {"delay": 1}}
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=body)
    assert _error(resp, 504)["code"] == "upstream_timeout"


def test_a_non_streamed_generation_outlives_first_byte_until_total(stub, make_proxy):
    """Issue 31: vLLM answers a non-streamed request only once the generation is done."""
    proxy = make_proxy([stub.url], timeouts={"first_byte_s": 0.2, "total_s": 0.8})
    slow = httpx.post(f"{proxy.url}/v1/chat/completions", json={**CHAT, "stub": {"delay": 0.4}})
    assert slow.status_code == 200
    hung = httpx.post(f"{proxy.url}/v1/chat/completions", json={**CHAT, "stub": {"delay": 2}})
    assert _error(hung, 504)["code"] == "upstream_timeout"


def test_idle_timeout_mid_stream_is_an_sse_error(stub, make_proxy):
    proxy = make_proxy([stub.url], timeouts={"idle_s": 0.2})
    body = {**CHAT, "stream": True, "stub": {"chunks": 3, "chunk_delay": 0.5}}
    text = httpx.post(f"{proxy.url}/v1/chat/completions", json=body).text
    assert '"code": "upstream_timeout"' in text


def test_unknown_route_is_404_envelope(stub, make_proxy):
    proxy = make_proxy([stub.url])
    _error(httpx.get(f"{proxy.url}/nope"), 404)


def test_retry_after_is_sent_by_the_errors_that_carry_one_and_no_other():
    from proxy.errors import InvalidRequest, LocalResourceError, Overloaded, TooManyConnections

    for error in (Overloaded("full"), LocalResourceError("EMFILE"), TooManyConnections("cap")):
        assert error.headers() == [(b"retry-after", b"1")]
    later = Overloaded("full")
    later.retry_after = 7
    assert later.headers() == [(b"retry-after", b"7")]
    assert InvalidRequest("bad").headers() == []

"""The data plane against real sockets: error envelopes for bad input, in-flight
counted from the moment a request is sent, and chunks relayed one by one."""

import json
import threading
import time

import httpx

from tests.support.asgi_upstreams import GatedStream
from tests.support.servers import serving

CHAT = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}]}


def _error(resp: httpx.Response) -> dict:
    assert resp.headers["content-type"] == "application/json"
    return resp.json()["error"]


def test_bad_input_gets_a_4xx_in_the_envelope(stub, make_proxy):
    url = f"{make_proxy([stub.url]).url}/v1/chat/completions"
    deep = b"[" * 10_000 + b"]" * 10_000
    deeper = b"[" * 100_000 + b"]" * 100_000  # over requests.max_json_containers (issue 33)
    cases = [
        (deep, 400), (deeper, 413), (b"\xff\xfe{", 400), (b'{"model": 1, "messages": []}', 400),
        (b'{"model": "m", "messages": [{"content": "x"}]}', 400), (b"[]", 400),
        (json.dumps({**CHAT, "stream": "yes"}).encode(), 400),
        (b'{"model": "m",\x00 "messages": []}', 400),  # a raw NUL byte
        (b'{"model": "m", "messages": [], "max_tokens": 1' + b"0" * 40 + b"}", 404),
        (json.dumps({**CHAT, "messages": [{"role": "user", "content": 5}]}).encode(), 400),
    ]  # fmt: skip
    for body, status in cases:
        resp = httpx.post(url, content=body)
        assert resp.status_code == status, body[:40]
        assert _error(resp)["type"] == "invalid_request_error"
    resp = httpx.get(url)
    assert (resp.status_code, _error(resp)["code"]) == (405, "method_not_allowed")
    odd = httpx.post(url, content=json.dumps(CHAT), headers={"content-type": "text/plain"})
    assert odd.status_code == 200  # the body is what counts; forwarded as vLLM expects


def test_request_body_limit_is_413_in_the_envelope(stub, make_proxy):
    proxy = make_proxy([stub.url], max_body_bytes=1000)
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", content=b"x" * 5000)
    assert resp.status_code == 413 and _error(resp)["code"] == "payload_too_large"


def test_pass_through_is_relayed_and_unknown_routes_are_ragtrims_own_404(stub, make_proxy):
    proxy = make_proxy([stub.url])
    resp = httpx.post(f"{proxy.url}/tokenize?x=1", json={"prompt": "a"})
    assert resp.status_code == 200 and resp.json()["count"] == 3  # the backend's answer
    assert resp.headers["x-ragtrim-backend"] == stub.url  # tenancy off: shown (auto)
    resp = httpx.get(f"{proxy.url}/v1/unknown?x=1")
    assert resp.status_code == 404 and _error(resp)["code"] == "not_found"
    assert "x-ragtrim-backend" not in resp.headers  # not relayed: ragtrim's own answer


def _in_flight(proxy_url: str, backend: str) -> float:
    for line in httpx.get(f"{proxy_url}/metrics").text.splitlines():
        if line.startswith("ragtrim_backend_in_flight") and backend in line:
            return float(line.rsplit(" ", 1)[1])
    return -1.0


def test_a_non_streamed_request_counts_in_flight_before_its_headers(stub, make_proxy):
    proxy = make_proxy([stub.url])
    body = {**CHAT, "stub": {"delay": 1.0}}  # headers only after the whole "generation"
    worker = threading.Thread(target=httpx.post, args=(f"{proxy.url}/v1/chat/completions",),
                              kwargs={"json": body, "timeout": 10})  # fmt: skip
    worker.start()
    deadline = time.monotonic() + 5
    while httpx.get(f"{stub.url}/stub/stats").json()["started"] < 1:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert _in_flight(proxy.url, stub.url) == 1.0
    worker.join()
    assert _in_flight(proxy.url, stub.url) == 0.0


def test_first_chunk_reaches_the_client_before_the_backend_sends_the_second(make_proxy):
    upstream = GatedStream()
    with serving(upstream) as backend:
        proxy = make_proxy([backend.url])
        body = {**CHAT, "stream": True}
        with httpx.stream("POST", f"{proxy.url}/v1/chat/completions", json=body,
                          timeout=10) as resp:  # fmt: skip
            chunks = resp.iter_raw()
            assert next(chunks).startswith(b"data: one")  # would block if buffered
            upstream.release.set()
            assert b"data: two" in b"".join(chunks)


def test_a_request_without_rag_context_never_touches_the_compressor(stub, make_proxy):
    from tests.support.compressor_doubles import HalfWords

    compressor = HalfWords()
    always = {"policy": "always", "min_context_tokens": 0}
    proxy = make_proxy([stub.url], compressor=compressor, compression=always)
    calls_after_warmup = compressor.calls
    for stream in (False, True):
        resp = httpx.post(f"{proxy.url}/v1/chat/completions", json={**CHAT, "stream": stream})
        assert resp.status_code == 200 and "x-ragtrim-template" not in resp.headers
    assert compressor.calls == calls_after_warmup

"""Relay behaviour against real sockets: pass-through, streaming, failover, disconnects."""

import json
import socket
import time

import httpx

CHAT = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}]}


def _wait_for(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_unknown_fields_reach_the_backend_byte_for_byte(stub, make_proxy):
    proxy = make_proxy([stub.url])
    body = {**CHAT, "cache_salt": "s", "chat_template_kwargs": {"x": 1}, "stub": {"echo": True}}
    raw = json.dumps(body).encode()
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", content=raw)
    assert resp.status_code == 200
    assert resp.json()["echo"] == body
    assert resp.headers["x-ragtrim-backend"] == stub.url


def test_stream_relays_every_event_in_order(stub, make_proxy):
    proxy = make_proxy([stub.url])
    body = {**CHAT, "stream": True, "stub": {"chunks": 5}}
    direct = httpx.post(f"{stub.url}/v1/chat/completions", json=body).content
    proxied = httpx.post(f"{proxy.url}/v1/chat/completions", json=body)
    assert proxied.headers["content-type"].startswith("text/event-stream")
    assert proxied.content == direct


def test_upstream_4xx_forwarded_unchanged(stub, make_proxy):
    proxy = make_proxy([stub.url])
    body = {**CHAT, "stub": {"status": 422}}
    direct = httpx.post(f"{stub.url}/v1/chat/completions", json=body)
    proxied = httpx.post(f"{proxy.url}/v1/chat/completions", json=body)
    assert (proxied.status_code, proxied.content) == (direct.status_code, direct.content)


def test_mid_stream_failure_ends_with_sse_error_event(stub, make_proxy):
    proxy = make_proxy([stub.url])
    body = {**CHAT, "stream": True, "stub": {"chunks": 5, "fail_after": 2}}
    text = httpx.post(f"{proxy.url}/v1/chat/completions", json=body).text
    events = [e for e in text.split("\n\n") if e]
    assert len(events) == 3
    error = json.loads(events[-1].removeprefix("data: "))["error"]
    assert error["code"] == "upstream_unavailable"


def test_failover_before_first_byte(make_proxy):
    from tests.doubles.stub_vllm import StubVllm
    from tests.support.servers import serving

    with serving(StubVllm()) as alive:
        dead = serving(StubVllm())
        doomed = dead.__enter__()
        proxy = make_proxy(
            [doomed.url, alive.url],
            health={"interval_s": 60},
            routing={"scorers": "roundrobin", "picker": {"name": "highest"}},
        )
        dead.__exit__(None, None, None)  # still "healthy" in the proxy's eyes
        for _ in range(4):  # round-robin puts the dead one first half of the time
            resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT)
            assert resp.status_code == 200
            assert resp.headers["x-ragtrim-backend"] == alive.url
        metrics = httpx.get(f"{proxy.url}/metrics").text
        # the first failure marks the dead backend unhealthy: exactly one failover
        assert "ragtrim_failovers_total 1.0" in metrics


def _raw_request(port: int, body: dict) -> socket.socket:
    payload = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", port))
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\n\r\n"
    )
    sock.sendall(head.encode() + payload)
    return sock


def test_disconnect_before_first_byte_closes_upstream_within_a_second(make_proxy):
    from tests.support.asgi_upstreams import WaitsForDisconnect
    from tests.support.servers import serving

    backend = WaitsForDisconnect()
    with serving(backend) as upstream:
        proxy = make_proxy([upstream.url])
        sock = _raw_request(proxy.port, CHAT)
        assert backend.started.wait(5)
        left_at = time.monotonic()
        sock.close()
        assert backend.closed.wait(5)
        assert backend.closed_at - left_at < 1.0  # observed at the upstream


def test_disconnect_mid_stream_aborts_upstream(stub, make_proxy):
    proxy = make_proxy([stub.url])
    body = {**CHAT, "stream": True, "stub": {"chunks": 50, "chunk_delay": 0.05}}
    sock = _raw_request(proxy.port, body)
    received = b""
    while b"data: " not in received:
        received += sock.recv(65536)
    sock.close()
    assert _wait_for(lambda: httpx.get(f"{stub.url}/stub/stats").json()["aborted"] == 1, 1.0)
    assert httpx.get(f"{stub.url}/stub/stats").json()["finished"] == 0


def test_passthrough_routes(stub, make_proxy):
    proxy = make_proxy([stub.url])
    assert httpx.post(f"{proxy.url}/tokenize", json={"prompt": "a"}).json()["count"] == 3
    models = httpx.get(f"{proxy.url}/v1/models").json()
    assert [m["id"] for m in models["data"]] == ["stub-model"]
    assert httpx.get(f"{proxy.url}/healthz").status_code == 200
    assert httpx.get(f"{proxy.url}/readyz").json()["ready"] is True


def test_models_merged_across_backends(make_proxy):
    from tests.doubles.stub_vllm import StubVllm
    from tests.support.servers import serving

    with serving(StubVllm("model-a")) as a, serving(StubVllm("model-b")) as b:
        proxy = make_proxy([a.url, b.url])
        ids = sorted(m["id"] for m in httpx.get(f"{proxy.url}/v1/models").json()["data"])
        assert ids == ["model-a", "model-b"]
        for model, url in (("model-a", a.url), ("model-b", b.url)):
            resp = httpx.post(f"{proxy.url}/v1/chat/completions", json={**CHAT, "model": model})
            assert resp.headers["x-ragtrim-backend"] == url

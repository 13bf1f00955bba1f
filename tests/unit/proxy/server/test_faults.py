"""Faults and overload against real sockets: a busy backend is not a dead one,
rate limits are passed on (never retried), overload is a fast 429, a mid-stream
reset reaches the openai SDK as an error, and options are validated on every
request."""

import threading
import time

import httpx
import openai
import pytest

from tests.support.asgi_upstreams import Backend, RateLimited, SlowHealth
from tests.support.servers import serving

CHAT = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}]}


def _metric(url: str, name: str) -> float:
    total = 0.0
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_slow_health_checks_do_not_turn_a_serving_backend_into_503s(make_proxy):
    backend = SlowHealth()
    with serving(backend) as slow:
        proxy = make_proxy([slow.url], health={"interval_s": 0.2, "timeout_s": 0.1})
        backend.slow()
        deadline = time.monotonic() + 10
        while httpx.get(f"{proxy.url}/readyz").status_code == 200:  # probes keep missing
            assert time.monotonic() < deadline, "the slow backend was never ejected"
            time.sleep(0.1)
        resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT)
        assert resp.status_code == 200  # panic routing: every known backend
        assert _metric(proxy.url, "ragtrim_panic_routes_total") >= 1


def test_slow_health_backend_is_ejected_only_after_consecutive_failures(make_proxy):
    backend = SlowHealth()
    with serving(backend) as slow:
        health = {"interval_s": 0.3, "timeout_s": 0.1, "unhealthy_after": 1000, "panic": False}
        proxy = make_proxy([slow.url], health=health)
        backend.slow()
        time.sleep(1.5)  # several missed probes, far fewer than 1000
        assert httpx.get(f"{proxy.url}/readyz").status_code == 200
        assert httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT).status_code == 200


def test_upstream_429_is_passed_on_with_retry_after_and_never_retried(make_proxy):
    first, second = RateLimited(), RateLimited()
    with serving(first) as a, serving(second) as b:
        proxy = make_proxy([a.url, b.url])
        resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT)
        assert resp.status_code == 429 and resp.headers["retry-after"] == "7"
        assert first.completions + second.completions == 1


def test_global_in_flight_limit_answers_429_at_once(make_proxy):
    backend = HeldBackend()
    with serving(backend) as b:
        proxy = make_proxy([b.url], admission={"max_in_flight": 1, "retry_after_s": 3})
        holder = threading.Thread(target=httpx.post, args=(f"{proxy.url}/v1/chat/completions",),
                                  kwargs={"json": CHAT, "timeout": 10})  # fmt: skip
        holder.start()
        assert backend.entered.wait(5)
        start = time.monotonic()
        resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT)
        assert time.monotonic() - start < 2.0  # the held request would wait for ever
        assert resp.status_code == 429 and resp.headers["retry-after"] == "3"
        assert resp.json()["error"]["code"] == "overloaded"
        backend.release.set()
        holder.join()
        assert httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT).status_code == 200


def test_per_backend_limit_spills_to_a_backend_with_room_then_429(make_proxy):
    held, free = HeldBackend(), HeldBackend()
    with serving(held) as a, serving(free) as b:
        proxy = make_proxy([a.url, b.url],
                           routing={"scorers": "roundrobin", "picker": {"name": "highest"},
                                    "filters": "healthy,serves_model,room:1"})  # fmt: skip
        url = f"{proxy.url}/v1/chat/completions"
        kwargs = {"json": CHAT, "timeout": 10}
        threads = [threading.Thread(target=httpx.post, args=(url,), kwargs=kwargs) for _ in "ab"]
        for t in threads:
            t.start()
        assert held.entered.wait(5) and free.entered.wait(5)  # one on each backend
        resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT)
        assert resp.status_code == 429
        held.release.set()
        free.release.set()
        for t in threads:
            t.join()


class HeldBackend(Backend):
    """Holds every completion until `release` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    async def complete(self, send) -> None:
        import asyncio

        self.entered.set()
        while not self.release.is_set():
            await asyncio.sleep(0.01)
        await super().complete(send)


def test_mid_stream_reset_reaches_the_openai_sdk_as_an_error(stub, make_proxy):
    proxy = make_proxy([stub.url])
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="x", max_retries=0)
    stream = client.chat.completions.create(
        model="stub-model", messages=CHAT["messages"], stream=True,
        extra_body={"stub": {"chunks": 5, "fail_after": 2}},
    )  # fmt: skip
    got = []
    with pytest.raises(openai.APIError):
        for chunk in stream:
            got.append(chunk.choices[0].delta.content)
    assert got == ["t0 ", "t1 "]


@pytest.mark.parametrize(
    ("headers", "body"),
    [({"x-ragtrim-rate": "5"}, {}), ({}, {"ragtrim": {"rate": "abc"}}),
     ({}, {"ragtrim": "fast"})],
)  # fmt: skip
def test_invalid_ragtrim_options_are_rejected_without_rag_context(stub, make_proxy, headers, body):
    proxy = make_proxy([stub.url])
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", json={**CHAT, **body}, headers=headers)
    assert resp.status_code == 400
    assert resp.json()["error"]["param"] in ("rate", "ragtrim")


def test_a_hanging_backend_is_a_504_in_first_byte_time_and_not_retried(make_proxy):
    from tests.doubles.stub_vllm import StubVllm

    one, two = StubVllm(), StubVllm()
    with serving(one) as a, serving(two) as b:
        proxy = make_proxy([a.url, b.url], timeouts={"first_byte_s": 0.5})
        start = time.monotonic()
        body = {**CHAT, "stream": True, "stub": {"delay": 5}}
        resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=body, timeout=10)
        assert resp.status_code == 504 and resp.json()["error"]["code"] == "upstream_timeout"
        assert time.monotonic() - start < 1.5
        assert one.stats["started"] + two.stats["started"] == 1  # never multiplied


def test_a_dead_backend_fails_fast_is_ejected_and_returns_when_it_recovers(make_proxy):
    from tests.doubles.stub_vllm import StubVllm
    from tests.support.servers import ServerThread, free_port

    port = free_port()
    first = ServerThread(StubVllm(), port).start()
    proxy = make_proxy([first.url], health={"interval_s": 0.2})
    first.stop()
    start = time.monotonic()
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT)
    assert resp.status_code in (502, 503) and time.monotonic() - start < 1.0
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT)  # circuit open now:
    assert resp.status_code == 503  # no traffic to it, not even in panic mode
    assert resp.json()["error"]["code"] == "no_healthy_backend"
    again = ServerThread(StubVllm(), port).start()  # the backend comes back
    try:
        deadline = time.monotonic() + 5
        while httpx.get(f"{proxy.url}/readyz").status_code != 200:  # probes close it
            assert time.monotonic() < deadline, "the backend never came back"
            time.sleep(0.05)
        assert httpx.post(f"{proxy.url}/v1/chat/completions", json=CHAT).status_code == 200
    finally:
        again.stop()

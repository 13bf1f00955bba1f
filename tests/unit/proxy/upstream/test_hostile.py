"""A misbehaving upstream, on real sockets (tests/doubles/hostile_upstream.py writes raw bytes
no ASGI server would): every answer ragtrim cannot vouch for becomes a 502 in the
envelope, logged and never leaked; bad usage never costs the client its completion;
SSE with any delimiter the spec allows is relayed event by event; bodies are capped."""

import json
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.doubles.hostile_upstream import HostileUpstream

CHAT = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def hostile() -> Iterator[HostileUpstream]:
    upstream = HostileUpstream().start()
    yield upstream
    upstream.stop()


def _metric(url: str, name: str) -> float:
    lines = httpx.get(f"{url}/metrics").text.splitlines()
    return sum(float(x.rsplit(" ", 1)[1]) for x in lines if x.startswith(name))


def _post(proxy, mode: str, **extra) -> httpx.Response:
    body = {**CHAT, "hostile": mode, **extra}
    return httpx.post(f"{proxy.url}/v1/chat/completions", json=body, timeout=30)


def _assert_502_envelope(resp: httpx.Response) -> dict:
    assert resp.status_code == 502, (resp.status_code, resp.content[:200])
    assert resp.headers["content-type"] == "application/json"
    assert "location" not in resp.headers
    assert b"Traceback" not in resp.content and b"/srv/vllm" not in resp.content
    error = resp.json()["error"]
    assert error["type"] == "upstream_error" and isinstance(error["message"], str)
    return error


def test_bad_usage_is_ignored_and_counted_and_the_completion_arrives(hostile, make_proxy):
    proxy = make_proxy([hostile.url])
    resp = _post(proxy, "bad_usage")
    assert resp.status_code == 200
    assert resp.json()["choices"][0]["message"]["content"] == "hello"
    streamed = _post(proxy, "bad_usage_sse", stream=True, gap=0)
    assert streamed.status_code == 200 and b"t4 " in streamed.content
    assert streamed.content.endswith(b"data: [DONE]\n\n") and b'"error"' not in streamed.content
    assert _metric(proxy.url, "ragtrim_upstream_bad_usage_total") == 2


@pytest.mark.parametrize("mode", ["status_999", "text_500", "json_500", "redirect_307", "text_200"])
def test_answers_ragtrim_cannot_vouch_for_become_a_502_in_the_envelope(hostile, make_proxy,
                                                                        mode):  # fmt: skip
    proxy = make_proxy([hostile.url])
    _assert_502_envelope(_post(proxy, mode))
    assert _metric(proxy.url, "ragtrim_upstream_bad_responses_total") == 1
    assert httpx.get(f"{proxy.url}/readyz").status_code == 200  # nothing ejected


def test_a_json_answer_to_a_streamed_request_is_a_502(hostile, make_proxy):
    proxy = make_proxy([hostile.url])
    _assert_502_envelope(_post(proxy, "json_for_stream", stream=True))


@pytest.mark.parametrize("mode", ["crlf_sse", "cr_sse", "mixed_sse"])
def test_sse_with_any_spec_delimiter_is_relayed_event_by_event(hostile, make_proxy, mode):
    proxy = make_proxy([hostile.url])
    body = {**CHAT, "hostile": mode, "stream": True, "gap": 0.3}
    start = time.perf_counter()
    with httpx.stream("POST", f"{proxy.url}/v1/chat/completions", json=body) as resp:
        chunks = iter(resp.iter_raw())
        first = next(chunks)
        first_at = time.perf_counter() - start
        raw = first + b"".join(chunks)
    total = time.perf_counter() - start
    # 6 more events 0.3 s apart follow the first: buffered to the end, it would come last
    assert b"t0 " in first and total - first_at > 1.2, (first_at, total)
    assert raw.count(b"data: ") == 6 and b'"usage"' not in raw  # usage stripped, as asked
    assert raw.rstrip(b"\r\n").endswith(b"data: [DONE]")


def test_a_non_streamed_body_over_the_cap_is_a_502_and_under_it_passes(hostile, make_proxy):
    proxy = make_proxy([hostile.url], upstream={"max_response_bytes": 3 << 20})
    error = _assert_502_envelope(_post(proxy, "huge_body", mb=8))
    assert error["code"] == "upstream_response_too_large"
    ok = _post(proxy, "huge_body", mb=2)
    assert ok.status_code == 200 and len(ok.content) > 2 << 20
    assert ok.headers["x-ragtrim-cached-tokens"] == "0"  # usage read from the capped body
    assert json.loads(ok.content)["usage"]["prompt_tokens"] == 5


def test_an_sse_event_over_the_buffer_cap_ends_the_stream_with_an_error(hostile, make_proxy):
    proxy = make_proxy([hostile.url], upstream={"max_sse_event_bytes": 1 << 20})
    resp = _post(proxy, "endless_event", stream=True, mb=8)
    assert resp.status_code == 200
    last = resp.content.rstrip(b"\n").rsplit(b"\n\n", 1)[-1]
    error = json.loads(last.removeprefix(b"data: "))["error"]
    assert error["code"] == "upstream_event_too_large"


def test_a_pass_through_route_gets_the_same_502_for_a_5xx(hostile, make_proxy):
    proxy = make_proxy([hostile.url])
    resp = httpx.post(f"{proxy.url}/tokenize", json={"prompt": "a", "hostile": "text_500"})
    _assert_502_envelope(resp)


def test_a_4xx_to_a_streamed_request_is_still_forwarded_unchanged(stub, make_proxy):
    proxy = make_proxy([stub.url])
    body = {**CHAT, "stream": True, "stub": {"status": 422}}
    direct = httpx.post(f"{stub.url}/v1/chat/completions", json=body)
    proxied = httpx.post(f"{proxy.url}/v1/chat/completions", json=body)
    assert (proxied.status_code, proxied.content) == (422, direct.content)

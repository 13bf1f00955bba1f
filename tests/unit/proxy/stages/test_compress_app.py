"""The compress stage end to end through a real ragtrim and the stub backend."""

import json

import httpx
import pytest

from tests.support.compressor_doubles import HalfWords
from tests.support.rag_requests import ALWAYS, DOCS, SYSTEM, post, rag_body


def test_documents_compressed_in_place(stub, make_proxy):
    proxy = make_proxy([stub.url], compressor=HalfWords(), compression=ALWAYS)
    resp = post(proxy, rag_body())
    system = resp.json()["echo"]["messages"][0]["content"]
    assert system.startswith(SYSTEM)
    assert system[len(SYSTEM) :].split("\n\n") == [
        " ".join(d.split()[: round(len(d.split()) / 2)]) for d in DOCS
    ]
    h = resp.headers
    assert h["x-ragtrim-template"] == "langchain_stuff"
    assert h["x-ragtrim-compressor"] == "halfwords"
    assert int(h["x-ragtrim-tokens-after"]) < int(h["x-ragtrim-tokens-before"])
    assert h["x-ragtrim-cache-hits"] == "0/3"
    again = post(proxy, rag_body())  # issue 29: the same question over a stored form
    assert again.headers["x-ragtrim-decision"].startswith("compress:stable(")
    assert again.json()["echo"]["messages"] == resp.json()["echo"]["messages"]


def test_without_stable_forms_a_repeat_is_served_from_the_memo(stub, make_proxy):
    settings = {**ALWAYS, "stable": {"enabled": False}}
    proxy = make_proxy([stub.url], compressor=HalfWords(), compression=settings)
    assert post(proxy, rag_body()).headers["x-ragtrim-cache-hits"] == "0/3"
    assert post(proxy, rag_body()).headers["x-ragtrim-cache-hits"] == "3/3"


def test_switched_off_forwards_the_original_bytes(stub, make_proxy):
    proxy = make_proxy([stub.url], compressor=HalfWords(), compression=ALWAYS)
    body = rag_body()
    resp = post(proxy, body, {"x-ragtrim-compress": "off"})
    assert resp.json()["echo"] == body


@pytest.mark.parametrize("double, reason", [(HalfWords(fail=True), "error"),
                                            (HalfWords(delay=1.0), "timeout")])  # fmt: skip
def test_failures_fail_open(stub, make_proxy, double, reason):
    settings = {**ALWAYS, "timeout_s": 0.2}
    proxy = make_proxy([stub.url], compressor=double, compression=settings)
    body = rag_body()
    resp = post(proxy, body)
    assert resp.json()["echo"] == body
    assert resp.headers["x-ragtrim-decision"] == f"failed-open:{reason}"
    metrics = httpx.get(f"{proxy.url}/metrics").text
    assert f'ragtrim_compress_failures_total{{reason="{reason}"}} 1.0' in metrics


def test_rate_from_header_and_body_and_bad_rate(stub, make_proxy):
    proxy = make_proxy([stub.url], compressor=HalfWords(), compression=ALWAYS)
    after = post(proxy, rag_body(), {"x-ragtrim-rate": "0.25"}).headers["x-ragtrim-tokens-after"]
    body_rate = post(proxy, rag_body(ragtrim={"rate": 0.25})).headers["x-ragtrim-tokens-after"]
    assert after == body_rate
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=rag_body(),
                      headers={"x-ragtrim-rate": "2"})  # fmt: skip
    assert resp.status_code == 400 and resp.json()["error"]["param"] == "rate"


def test_body_field_never_reaches_backend(stub, make_proxy):
    proxy = make_proxy([stub.url], compressor=HalfWords(), compression=ALWAYS)
    echo = post(proxy, rag_body(ragtrim={"compress": False})).json()["echo"]
    assert "ragtrim" not in echo and echo["messages"] == rag_body()["messages"]


def test_tags_are_stripped_even_without_compression(stub, make_proxy):
    proxy = make_proxy([stub.url], compressor=HalfWords(), compression={"enabled": False})
    content = "Answer from these.\n<ragtrim:doc>Doc one.</ragtrim:doc>\nQ: why?"
    body = {"model": "stub-model", "messages": [{"role": "user", "content": content}],
            "stub": {"echo": True}}  # fmt: skip
    echoed = post(proxy, body).json()["echo"]["messages"][0]["content"]
    assert "ragtrim:" not in echoed and "Doc one." in echoed


def test_ingest_warms_the_request_path(stub, make_proxy):
    double = HalfWords()
    proxy = make_proxy([stub.url], compressor=double, compression=ALWAYS)
    loaded = double.calls  # the start-up warm-up
    warm = httpx.post(f"{proxy.url}/v1/compress", json={"documents": DOCS})
    assert warm.status_code == 200, warm.text
    assert [d["text"] for d in warm.json()["documents"]][0].startswith("Paris is")
    resp = post(proxy, rag_body())
    assert resp.headers["x-ragtrim-cache-hits"] == "3/3" and double.calls == loaded + 1
    bad = httpx.post(f"{proxy.url}/v1/compress", json={"documents": "x"})
    assert bad.status_code == 400


def test_usage_chunk_added_for_us_and_stripped_for_the_client(stub, make_proxy):
    proxy = make_proxy([stub.url])
    base = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}],
            "stream": True, "stub": {"chunks": 3}}  # fmt: skip
    plain = httpx.post(f"{proxy.url}/v1/chat/completions", json=base).text
    assert '"usage"' not in plain and plain.endswith("data: [DONE]\n\n")
    asked = {**base, "stream_options": {"include_usage": True}}
    text = httpx.post(f"{proxy.url}/v1/chat/completions", json=asked).text
    events = [json.loads(e[6:]) for e in text.split("\n\n") if e.startswith("data: {")]
    assert events[-1]["choices"] == [] and events[-1]["usage"]["prompt_tokens"] == 5
    metrics = httpx.get(f"{proxy.url}/metrics").text
    assert f'ragtrim_prompt_tokens_total{{backend="{stub.url}"}} 10.0' in metrics

"""Integers beyond 64 bits survive a rewritten body exactly (issue 23, class 7): orjson
reads them as floats, so 10**20 reached vLLM as 1e+20."""

import json

import httpx
import pytest

from proxy.prompt.body import prompt_for
from proxy.request.parse import parse_body

BIG = [10**20, -(2**63) - 1, 2**64, 123456789012345678901234567890]


@pytest.mark.parametrize("value", BIG)
def test_a_rewritten_body_keeps_big_integers_exact(value):
    raw = json.dumps({"model": "m", "prompt": "p", "seed": value, "ragtrim": {}}).encode()
    prompt = prompt_for("completions", parse_body(raw, "completions"))
    prompt.remove("ragtrim")  # a rewrite: the body is serialised again
    assert json.loads(prompt.encode(raw))["seed"] == value


def test_long_digit_runs_in_strings_and_ordinary_numbers_are_unchanged():
    body = {"model": "m", "prompt": "call 0123456789012345678901", "n": 2, "t": 0.1, "x": 2**63}
    raw = json.dumps(body).encode()
    prompt = prompt_for("completions", parse_body(raw, "completions"))
    prompt.set("n", 3)
    assert json.loads(prompt.encode(raw)) == {**body, "n": 3}


def test_through_the_proxy_the_backend_receives_the_exact_integer(stub, make_proxy):
    proxy = make_proxy([stub.url])
    body = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}],
            "seed": 10**20, "ragtrim": {"rate": 0.5}, "stub": {"echo": True}}  # fmt: skip
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", content=json.dumps(body))
    assert resp.status_code == 200
    echoed = resp.json()["echo"]
    assert "ragtrim" not in echoed and echoed["seed"] == 10**20
    assert type(echoed["seed"]) is int

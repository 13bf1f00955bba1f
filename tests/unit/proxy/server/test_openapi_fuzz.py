"""schemathesis against the OpenAPI document a running ragtrim serves (in front of the
stub): valid and invalid requests to every operation, traffic routes included. No
answer is a 5xx, and every error is in the OpenAI envelope. Bounded: a fixed number
of examples, each request with a timeout (the whole test well under 60 s)."""

import time

import httpx
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from tests.support.compressor_doubles import HalfWords

EXAMPLES = 120


def served_document(url: str) -> dict:
    doc = httpx.get(f"{url}/openapi.json").json()
    assert set(doc["paths"]) >= {"/v1/chat/completions", "/v1/completions", "/v1/compress"}
    for name in ("ChatRequest", "CompletionRequest"):  # the model the stub serves, so that
        props = doc["components"]["schemas"][name]["properties"]  # requests reach it
        props["model"] = {"type": "string", "enum": ["stub-model"]}
    return doc


def wait_ready(url: str) -> None:
    deadline = time.monotonic() + 10
    while httpx.get(f"{url}/readyz").status_code != 200:
        assert time.monotonic() < deadline, "ragtrim never saw the stub healthy"
        time.sleep(0.05)


def check(case, response) -> None:
    where = f"{case.method} {case.path} -> {response.status_code}: {response.text[:300]}"
    assert response.status_code < 500, where
    if response.status_code >= 400 and case.path != "/readyz":
        error = response.json()["error"]
        assert isinstance(error["message"], str) and isinstance(error["type"], str), where
        assert {"param", "code"} <= set(error), where


def test_no_5xx_and_every_error_in_the_envelope(stub, make_proxy):
    proxy = make_proxy([stub.url], compressor=HalfWords())
    wait_ready(proxy.url)
    schema = schemathesis.openapi.from_dict(served_document(proxy.url))
    operations = [result.ok() for result in schema.get_all_operations()]
    strategy = st.one_of([op.as_strategy(mode) for op in operations for mode in
                          (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)])  # fmt: skip
    seen: set[tuple[str, int]] = set()

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(strategy)
    def fuzz(case):
        response = case.call(base_url=proxy.url, timeout=10)
        seen.add((case.path, response.status_code))
        check(case, response)

    start = time.monotonic()
    fuzz()
    assert time.monotonic() - start < 60
    assert {path for path, _ in seen} >= {"/v1/chat/completions", "/v1/completions"}
    assert any(status == 200 for path, status in seen if path == "/v1/chat/completions")
    assert any(400 <= status < 500 for _, status in seen)  # invalid input was tried

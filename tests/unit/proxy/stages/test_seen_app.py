"""Issue 18 end to end (real ragtrim, stub backend, real fast_extractive): documents sent
to /v1/compress without a question are seen by a later request with any question."""

import httpx

from compressors import ApproxTokenCounter, FastExtractiveCompressor
from tests.support.models import minilm_path, static_model  # noqa: F401 - fixtures
from tests.support.rag_requests import ALWAYS, DOCS, post, rag_body


def test_ingest_without_a_question_makes_later_questions_seen(stub, make_proxy, static_model):  # noqa: F811
    fast = FastExtractiveCompressor(ApproxTokenCounter(), model_path=static_model)
    proxy = make_proxy([stub.url], compressor=fast, compression={**ALWAYS, "tokenizer": ""})
    warm = httpx.post(f"{proxy.url}/v1/compress", json={"documents": DOCS})
    assert warm.status_code == 200, warm.text
    computed = fast.features_computed
    for question in ("What is the capital of France?", "Which river flows through Paris?"):
        body = rag_body()
        body["messages"][-1]["content"] = question
        resp = post(proxy, body)
        assert resp.headers["x-ragtrim-features-seen"] == "3/3"
        assert resp.headers["x-ragtrim-cache-hits"] == "0/3"  # a new question: memo misses
    assert fast.features_computed == computed  # nothing computed again
    metrics = httpx.get(f"{proxy.url}/metrics").text
    assert 'ragtrim_feature_lookups_total{result="local"}' in metrics
    assert "ragtrim_feature_cache_bytes" in metrics and "ragtrim_feature_bytes_written" in metrics


def test_rate_auto_is_an_adaptive_budget(stub, make_proxy, static_model):  # noqa: F811
    from compressors import AdaptiveBudget
    from proxy.prompt.ragtrim_options import read_options

    assert read_options({"x-ragtrim-rate": "auto"}, None).rate == "auto"
    assert read_options({}, {"rate": "auto"}).keep_rate(0.5) == "auto"
    fast = FastExtractiveCompressor(ApproxTokenCounter(), model_path=static_model)
    proxy = make_proxy([stub.url], compressor=fast, compression={**ALWAYS, "tokenizer": ""})
    resp = post(proxy, rag_body(ragtrim={"rate": "auto"}))
    before, after = (int(resp.headers[f"x-ragtrim-tokens-{k}"]) for k in ("before", "after"))
    assert 0 < after <= before * AdaptiveBudget().rate
    for bad in ("Auto", "AUTO", "0.5x"):
        r = httpx.post(f"{proxy.url}/v1/chat/completions", json=rag_body(),
                       headers={"x-ragtrim-rate": bad})  # fmt: skip
        assert r.status_code == 400 and r.json()["error"]["param"] == "rate"


def test_compress_answers_every_document_of_a_seen_set(stub, make_proxy, static_model):  # noqa: F811
    """A small seen set is computed on the loop without a memo entry; /v1/compress read the
    memo after it and left those documents out of its answer."""
    fast = FastExtractiveCompressor(ApproxTokenCounter(), model_path=static_model)
    proxy = make_proxy([stub.url], compressor=fast, compression={**ALWAYS, "tokenizer": ""})
    for question in ("What is the capital of France?", "Which river flows through Paris?"):
        resp = httpx.post(f"{proxy.url}/v1/compress",
                          json={"documents": DOCS, "question": question, "rate": 0.4})  # fmt: skip
        assert resp.status_code == 200, resp.text
        out = resp.json()["documents"]
        assert len(out) == len(DOCS) and any(d["text"] for d in out)  # one answer per document
        assert all(0 <= d["tokens_after"] <= d["tokens_before"] for d in out)

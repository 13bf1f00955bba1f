"""Indexing-time hooks make chunks seen (issue 18): LangChain's document compressor as a
document transformer (in-process), LlamaIndex's RagtrimFeatures transformation (through
a running ragtrim's /v1/compress)."""

import httpx
from langchain_core.documents import Document
from llama_index.core import Document as LlamaDocument
from llama_index.core.ingestion import IngestionPipeline

from compressors import ApproxTokenCounter, FastExtractiveCompressor
from proxy.integrations.langchain import RagtrimDocumentCompressor
from proxy.integrations.llamaindex import RagtrimFeatures
from proxy.settings import Settings
from tests.support.models import minilm_path, static_model  # noqa: F401 - fixtures
from tests.support.rag_requests import ALWAYS, DOCS, post, rag_body


def test_langchain_transform_then_any_query_computes_nothing(static_model):  # noqa: F811
    fast = FastExtractiveCompressor(ApproxTokenCounter(), model_path=static_model)
    lc = RagtrimDocumentCompressor(settings=Settings(), compressor=fast)
    docs = [Document(page_content=t, metadata={"i": i}) for i, t in enumerate(DOCS)]
    assert lc.transform_documents(docs) == docs  # unchanged, features stored
    computed = fast.features_computed
    assert computed >= len(DOCS)
    for query in ("What is the capital of France?", "Which river flows through Paris?"):
        out = lc.compress_documents(docs, query)
        assert [d.metadata["i"] for d in out] == [0, 1, 2]
    assert fast.features_computed == computed


def test_llamaindex_ingestion_pipeline_warms_the_proxy(stub, make_proxy, static_model):  # noqa: F811
    fast = FastExtractiveCompressor(ApproxTokenCounter(), model_path=static_model)
    proxy = make_proxy([stub.url], compressor=fast, compression={**ALWAYS, "tokenizer": ""})
    pipeline = IngestionPipeline(transformations=[RagtrimFeatures(base_url=proxy.url)])
    nodes = pipeline.run(documents=[LlamaDocument(text=t, metadata={"title": "x"}) for t in DOCS])
    assert [n.get_content() for n in nodes] == DOCS  # passed through
    computed = fast.features_computed
    resp = post(proxy, rag_body())
    assert resp.headers["x-ragtrim-features-seen"] == "3/3"
    assert fast.features_computed == computed
    down = RagtrimFeatures(base_url="http://127.0.0.1:9")  # ragtrim away: indexing goes on
    assert down([LlamaDocument(text="x")])[0].get_content() == "x"
    assert httpx.get(f"{proxy.url}/metrics").status_code == 200

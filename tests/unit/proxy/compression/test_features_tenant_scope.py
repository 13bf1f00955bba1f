"""Every content cache behind the engine is per tenant (issue 44, CVE-2025-46570 class):
the `extractive` compressor's sentence embeddings and fast_extractive's tokenizers' memo
too, not only the memo and the features. Tenant B sending A's documents pays what unseen
documents cost (every sentence encoded), so B's latency cannot tell what A sent."""

import asyncio

from cache.features import FeatureCache
from cache.memo import ChunkMemo
from cache.store import MemoryStore
from compressors import FastExtractiveCompressor, HFTokenCounter
from compressors.extractive import ExtractiveCompressor
from proxy.compression.engine import CompressionEngine
from tests.doubles.sentence_encoder import CountingEncoder
from tests.support.models import minilm_path, static_model  # noqa: F401 - fixtures

DOCS = [
    "The bridge was opened in 1932 after six years of work. It carries eight lanes of "
    "traffic. Tourists walk across it every day. The toll was removed in 2010.",
    "The harbour hosts ferries to the northern beaches. Ferries run every half hour. "
    "The opera house stands nearby. Many visitors arrive by train.",
]
UNSEEN = [" ".join(f"{s.rstrip('.')} in the sister city." for s in d.split(". ")) for d in DOCS]


def test_tenant_b_with_tenant_as_documents_encodes_as_much_as_with_unseen_ones():
    extractive = ExtractiveCompressor(model_path="unused")
    extractive._model = encoder = CountingEncoder()
    engine = CompressionEngine(extractive, ChunkMemo(MemoryStore()), timeout=30, workers=1)

    async def encoded(docs: list[str], question: str, tenant: str) -> int:
        before = len(encoder.encoded)
        await engine.compress(docs, question, 0.5, tenant)
        return len(encoder.encoded) - before

    async def scenario():
        warm = await encoded(DOCS, "When was the bridge opened?", "alpha")
        theirs = await encoded(DOCS, "How often do ferries run?", "beta")
        unseen = await encoded(UNSEEN, "How often do trams run?", "beta")
        own = await encoded(DOCS, "What carries eight lanes?", "alpha")
        return warm, theirs, unseen, own

    warm, theirs, unseen, own = asyncio.run(scenario())
    engine.close()
    assert warm > 8 and theirs == unseen == warm  # B: every sentence and its question
    assert own == 1  # A's own sentences are cached: only its new question is encoded


RARE = ["Zqxvian wvutorne plokmish. The xyzzyan frobnicator quuxly gleaned 7 blorts."]


def test_the_tokenizers_memo_learns_a_tenants_chunks_for_that_tenant_alone(
    static_model,  # noqa: F811
    minilm_path,  # noqa: F811
):
    """fast_extractive's tokenizers memoize chunks past their vocabulary per tenant
    (compressors/_token_tables.py): B sending A's rare words learns them itself."""
    counter = HFTokenCounter(minilm_path)
    fast = FastExtractiveCompressor(counter, model_path=static_model)
    engine = CompressionEngine(fast, ChunkMemo(MemoryStore()), timeout=30, workers=1,
                               count=counter, features=FeatureCache(MemoryStore()))  # fmt: skip

    async def scenario():
        await engine.compress(RARE, "What did the frobnicator glean?", 0.5, "alpha")
        scopes = (counter._chunked.scopes, fast.embedder._chunked.scopes)
        learnt = [set(s.get("alpha").entries) for s in scopes]
        assert all(learnt) and all(s.get("beta") is None for s in scopes)
        await engine.compress(RARE, "What did the frobnicator glean?", 0.5, "beta")
        assert [set(s.get("beta").entries) for s in scopes] == learnt  # learnt again

    asyncio.run(scenario())
    engine.close()

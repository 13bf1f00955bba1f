"""Every content cache behind the engine is per tenant (issue 44, CVE-2025-46570 class):
the `extractive` compressor's sentence embeddings too, not only the memo and the
features. Tenant B sending A's documents pays what unseen documents cost (every sentence
encoded), so B's latency cannot tell what A sent."""

import asyncio

from cache.memo import ChunkMemo
from cache.store import MemoryStore
from compressors.extractive import ExtractiveCompressor
from proxy.compression.engine import CompressionEngine
from tests.doubles.sentence_encoder import CountingEncoder

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

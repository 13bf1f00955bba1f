"""Two workers (or replicas) sharing real Redis share chunk features (issue 18): the
second computes none for documents the first has seen, whatever the question."""

import asyncio
import uuid

import pytest

from cache.features import FeatureCache
from cache.memo import ChunkMemo
from cache.store import MemoryStore, RedisStore
from compressors import FastExtractiveCompressor, HFTokenCounter
from proxy.compression.engine import CompressionEngine
from tests.support.models import minilm_path, static_model  # noqa: F401 - fixtures

pytestmark = pytest.mark.integration
URL = "redis://127.0.0.1:6379/0"


def _engine(store, static_model, counter) -> CompressionEngine:  # noqa: F811
    fast = FastExtractiveCompressor(counter, model_path=static_model)
    return CompressionEngine(fast, ChunkMemo(MemoryStore()), timeout=30, workers=1,
                             count=counter, features=FeatureCache(store))  # fmt: skip


def test_a_second_worker_finds_the_first_ones_features(static_model, minilm_path):  # noqa: F811
    tag = uuid.uuid4().hex[:8]
    docs = [
        f"Report {tag}. The bridge was opened in 1932 after six years of work. It carries "
        "eight lanes of traffic. Tourists walk across it every day.",
        f"Note {tag}. The harbour hosts ferries to the northern beaches. Ferries run every "
        "half hour. The opera house stands nearby.",
    ]
    counter = HFTokenCounter(minilm_path)

    async def scenario():
        one, two = RedisStore(URL), RedisStore(URL)  # each worker its own connection
        try:
            a, b = _engine(one, static_model, counter), _engine(two, static_model, counter)
            first = await a.compress(docs, "When was the bridge opened?", 0.5, tenant="t1")
            assert first.seen == 0 and a.compressor.features_computed == 2
            second = await b.compress(docs, "How often do ferries run?", 0.5, tenant="t1")
            assert second.seen == 2 and b.compressor.features_computed == 0
            other = await b.compress(docs, "How often do ferries run?", 0.5, tenant="t2")
            assert other.seen == 0 and b.compressor.features_computed == 2  # never t1's
            assert not one.outage.down and not two.outage.down  # really through Redis
        finally:
            await one.aclose()
            await two.aclose()

    asyncio.run(scenario())

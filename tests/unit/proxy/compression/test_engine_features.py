"""The engine's seen-document path (issue 18): features memoized per chunk, any question.

Real fast_extractive (MiniLM's WordPiece, a seeded random 32-dim table: the compressors'
conftest fixture), engines over a MemoryStore or a RedisStore whose server is down."""

import asyncio

import pytest

from cache.analysis import DocumentAnalyses, document_names
from cache.features import FeatureCache
from cache.memo import ChunkMemo
from cache.store import MemoryStore, RedisStore
from compressors import FastExtractiveCompressor, HFTokenCounter
from proxy.compression.engine import CompressionEngine
from tests.support.models import minilm_path, static_model  # noqa: F401 - fixtures
from tests.support.servers import free_port

DOCS = [
    "The bridge was opened in 1932 after six years of work. It carries eight lanes of "
    "traffic. Tourists walk across it every day. The toll was removed in 2010.",
    "The harbour hosts ferries to the northern beaches. Ferries run every half hour. "
    "The opera house stands nearby. Many visitors arrive by train.",
    "Photosynthesis turns light into chemical energy. Chlorophyll absorbs mostly blue "
    "and red light. Plants release oxygen as a by-product.",
]
QUESTIONS = ["When was the bridge opened?", "How often do ferries run?", "What do plants give?"]


@pytest.fixture
def make(static_model, minilm_path):  # noqa: F811
    counter = HFTokenCounter(minilm_path)

    def build(store=None, features=True, analyses=None):
        fast = FastExtractiveCompressor(counter, model_path=static_model)
        store = store if store is not None else MemoryStore()
        cache = FeatureCache(store) if features else None
        return CompressionEngine(fast, ChunkMemo(MemoryStore()), timeout=30, workers=1,
                                 count=counter, features=cache, analyses=analyses)  # fmt: skip

    return build


def test_a_seen_chunk_with_a_new_question_computes_no_features(make):
    async def scenario():
        e, plain = make(), make(features=False)
        first = await e.compress(DOCS, QUESTIONS[0], 0.4)
        assert (first.seen, e.compressor.features_computed) == (0, 3)
        for q in QUESTIONS[1:]:  # new questions: output memo misses, features hit
            out = await e.compress(DOCS, q, 0.4)
            assert (out.misses, out.seen) == (3, 3)
            assert out.texts == (await plain.compress(DOCS, q, 0.4)).texts  # same bytes
        assert e.compressor.features_computed == 3  # none computed again
        again = await e.compress(DOCS, QUESTIONS[1], 0.4)  # an exact repeat: output memo
        assert (again.hits, again.misses) == (3, 0)
        mixed = await e.compress([DOCS[0], "A new document. It was never seen."], "When?", 0.4)
        assert mixed.seen == 1 and e.compressor.features_computed == 4

    asyncio.run(scenario())


def test_ingest_precompute_serves_any_later_question(make):
    async def scenario():
        e = make()
        assert await e.precompute(DOCS) == 3 and await e.precompute(DOCS) == 0
        assert await e.seen_documents(DOCS) == 3
        computed = e.compressor.features_computed
        out = await e.compress(DOCS, QUESTIONS[2], 0.5)
        assert out.seen == 3 and e.compressor.features_computed == computed

    asyncio.run(scenario())


def test_a_tenants_features_never_serve_another(make):
    async def scenario():
        store = MemoryStore()
        e = make(store)
        await e.compress(DOCS, QUESTIONS[0], 0.4, tenant="A")
        assert await e.seen_documents(DOCS, "B") == 0
        out = await e.compress(DOCS, QUESTIONS[1], 0.4, tenant="B")
        assert out.seen == 0 and e.compressor.features_computed == 6
        assert await e.seen_documents(DOCS, "A") == 3

    asyncio.run(scenario())


def test_redis_down_same_output_at_the_cold_cost(make):
    async def scenario():
        down = RedisStore(f"redis://127.0.0.1:{free_port()}/0", timeout=0.2, retry_after=60)
        e, plain = make(down), make(features=False)
        try:
            out = await e.compress(DOCS, QUESTIONS[0], 0.4)
            assert out.seen == 0 and e.compressor.features_computed == 3  # cold
            assert out.texts == (await plain.compress(DOCS, QUESTIONS[0], 0.4)).texts
            assert down.outage.down  # failed open, then served by the fallback
        finally:
            await down.aclose()

    asyncio.run(scenario())


def test_a_small_seen_set_is_scored_on_the_loop_a_big_one_in_a_worker(make):
    """issue 43: a new question over memoized features is vector arithmetic; the hand-off
    to a worker and back cost more. Same bytes either way."""
    import threading

    async def scenario():
        e, plain = make(), make(features=False)
        e.state = "ready"  # warmed: inline runs only then
        threads, real = [], e.compressor.compress_prepared

        def recorded(*args, **kwargs):
            threads.append(threading.current_thread() is threading.main_thread())
            return real(*args, **kwargs)

        e.compressor.compress_prepared = recorded
        await e.compress(DOCS, QUESTIONS[0], 0.4)  # unseen: a worker computes features
        out = await e.compress(DOCS, QUESTIONS[1], 0.4)  # seen and small: on the loop
        assert threads == [False, True] and out.seen == 3
        assert out.texts == (await plain.compress(DOCS, QUESTIONS[1], 0.4)).texts
        e.features.inline_chars = 100  # the same set counted as big: back to a worker
        await e.compress(DOCS, QUESTIONS[2], 0.4)
        assert threads == [False, True, False]
        e.features.inline_chars = 10_000
        names = document_names(None, "", DOCS)  # the features' keys name the digests
        old = {n: b"RTF\x01" + b"\0" * 16 for n in names}  # entries of an older format
        await e.features.cache.put_many(e.features.fingerprint, old, "")
        await e.compress(DOCS, "Which light do plants absorb?", 0.4)
        assert threads[-1] is False  # recomputed, never on the loop

    asyncio.run(scenario())


def test_a_seen_set_is_prepared_once_per_tenant_for_any_question(make):
    """issue 43: a set's question-independent arrays (compressors/fast_extractive/
    prepared.py) are made once per (tenant, set); new questions reuse them, another tenant
    gets its own (a hit would tell it the set was sent), and the bytes are the same."""

    async def scenario():
        e, plain = make(analyses=DocumentAnalyses()), make(features=False)
        e.state = "ready"
        made, real = [], e.compressor.prepare
        e.compressor.prepare = lambda feats: made.append(len(feats)) or real(feats)
        for q in QUESTIONS:
            out = await e.compress(DOCS, q, 0.4, tenant="a")
            assert out.texts == (await plain.compress(DOCS, q, 0.4)).texts
        assert made == [3]
        await e.compress(DOCS, QUESTIONS[0], 0.4, tenant="b")
        await e.compress(DOCS[:2], QUESTIONS[0], 0.4, tenant="a")  # another set
        assert made == [3, 3, 2]

    asyncio.run(scenario())


def test_a_small_seen_set_costs_no_memo_round_trip(make):
    """issue 43: computed on the loop for less than a lookup (with Redis, a round trip on
    the request path), a small seen set's result is neither looked up nor stored; a big
    one still goes through the memo."""

    class Counted(MemoryStore):
        calls = writes = 0

        async def get_many(self, keys):
            Counted.calls += 1
            return await super().get_many(keys)

        async def set_many(self, items, ttl=None):
            Counted.writes += 1
            await super().set_many(items, ttl)

    async def scenario():
        e = make()
        e.memo = ChunkMemo(Counted())
        e.state = "ready"
        await e.compress(DOCS, QUESTIONS[0], 0.4)  # unseen: the memo, then a worker
        await e.memo.writes.drain()
        assert (Counted.calls, Counted.writes) == (1, 1)
        out = await e.compress(DOCS, QUESTIONS[1], 0.4)  # seen and small: on the loop
        await e.memo.writes.drain()
        assert (Counted.calls, Counted.writes, out.misses, out.seen) == (1, 1, 3, 3)
        e.features.inline_chars = 100  # the same set counted as big: the memo again
        await e.compress(DOCS, QUESTIONS[2], 0.4)
        assert Counted.calls == 2

    asyncio.run(scenario())

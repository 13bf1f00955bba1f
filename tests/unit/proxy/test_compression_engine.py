"""CompressionEngine: memo scopes, shared budgets, busy and timeout behaviour."""

import asyncio

import pytest

from cache.memo import ChunkMemo
from cache.store import MemoryStore
from proxy.compression import CompressionBusy, CompressionEngine
from tests.unit.proxy.doubles import HalfWords


class Pooled(HalfWords):
    """Question-aware: records the budget it was given."""

    name, question_aware = "pooled", True

    def compress(self, documents, *, question, budget):
        self.budgets = getattr(self, "budgets", []) + [budget]
        return super().compress(documents, question=question, budget=budget)


def engine(compressor, **kw) -> CompressionEngine:
    args = {"timeout": 5.0, "workers": 1, "count": lambda t: len(t.split())}
    return CompressionEngine(compressor, ChunkMemo(MemoryStore()), **{**args, **kw})


DOCS = ["a b c d", "e f g h i j"]


def test_question_agnostic_chunks_are_cached_one_by_one():
    async def scenario():
        e = engine(HalfWords())
        await e.compress(DOCS, "q1", 0.5)
        out = await e.compress([DOCS[0], "new doc here"], "another question", 0.5)
        assert (out.hits, out.misses) == (1, 1)

    asyncio.run(scenario())


def test_question_aware_share_one_budget_and_scope():
    async def scenario():
        c = Pooled()
        e = engine(c)
        first = await e.compress(DOCS, "q1", 0.5)
        assert c.budgets[-1].target_tokens == 5  # half of the 10 words, across both docs
        assert (await e.compress(DOCS, "q1", 0.5)).hits == 2
        other_q = await e.compress(DOCS, "q2", 0.5)
        assert other_q.misses == 2
        changed = await e.compress([DOCS[0], "x y"], "q1", 0.5)
        assert changed.misses == 2  # the shared budget changed: both redone
        assert first.texts != changed.texts

    asyncio.run(scenario())


def test_busy_worker_refuses_at_once_and_timeout_fails():
    async def scenario():
        e = engine(HalfWords(delay=0.5), timeout=0.1)
        with pytest.raises(TimeoutError):
            await e.compress(DOCS, "q", 0.5)
        with pytest.raises(CompressionBusy):  # the timed-out job still holds the worker
            await e.compress(["other"], "q", 0.5)
        await asyncio.sleep(0.6)
        e.timeout = 5.0
        assert (await e.compress(["other doc"], "q", 0.5)).misses == 1
        e.close()

    asyncio.run(scenario())


def test_app_wiring_gives_question_aware_compressors_a_shared_budget():
    from proxy.components import build
    from proxy.settings import Settings

    c = Pooled()
    parts = build(Settings(backends=["http://127.0.0.1:9"]), compressor=c)
    asyncio.run(parts.engine.compress(DOCS, "q", 0.5))
    assert c.budgets[-1].target_tokens is not None
    parts.engine.close()

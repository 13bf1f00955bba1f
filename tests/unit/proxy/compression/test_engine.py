"""CompressionEngine: memo scopes, shared budgets, the queue, timeouts and loading."""

import asyncio
import threading

import pytest

from cache.memo import ChunkMemo
from cache.store import MemoryStore
from proxy.backends.endpoint import EndpointPool
from proxy.compression.engine import CompressionBusy, CompressionEngine
from proxy.gate.decide import CostGate
from tests.support.compressor_doubles import HalfWords, Pooled
from tests.support.waiting import until


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


def test_without_the_memo_a_question_aware_job_neither_reads_nor_writes_it():
    async def scenario():
        e = engine(Pooled())
        await e.compress(DOCS, "q1", 0.5)
        again = await e.compress(DOCS, "q1", 0.5, memo=False)
        assert again.misses == 2  # not read: computed again
        await e.compress(DOCS, "q2", 0.5, memo=False)
        await until(lambda: not e.memo._landing)
        assert (await e.compress(DOCS, "q2", 0.5)).misses == 2  # not written either
        agnostic = engine(HalfWords())
        await agnostic.compress(DOCS, "q1", 0.5)
        assert (await agnostic.compress(DOCS, "q2", 0.5, memo=False)).hits == 2  # per chunk

    asyncio.run(scenario())


class Gated(HalfWords):
    """Blocks in the worker until the test releases it (no sleeps, no races)."""

    def __init__(self):
        super().__init__()
        self.started, self.release = threading.Event(), threading.Event()

    def compress(self, documents, *, question, budget):
        self.started.set()
        assert self.release.wait(10), "the test never released the worker"
        return super().compress(documents, question=question, budget=budget)


def test_timeout_includes_the_queue_and_a_queued_job_is_cancelled():
    async def scenario():
        c = Gated()
        e = engine(c, timeout=5.0)
        first = asyncio.create_task(e.compress(DOCS, "q", 0.5))
        await until(c.started.is_set)  # in the worker, blocked
        e.timeout = 0.1
        assert e.expected_wait_ms(1.0) > 0
        with pytest.raises(TimeoutError):  # queued behind it: times out and is dropped
            await e.compress(["other"], "q", 0.5)
        c.release.set()
        assert (await first).misses == 2
        await until(lambda: e._running == 0 and e.expected_wait_ms(1.0) == 0)
        out = await e.compress(["other doc"], "q", 0.5)
        assert out.misses == 1 and c.calls == 2  # the cancelled job never ran
        e.close()

    asyncio.run(scenario())


def test_a_running_job_past_its_timeout_fails():
    async def scenario():
        c = Gated()
        e = engine(c, timeout=0.1)
        with pytest.raises(TimeoutError):
            await e.compress(DOCS, "q", 0.5)
        c.release.set()
        e.close()

    asyncio.run(scenario())


def test_expected_wait_counts_the_work_queued_ahead():
    async def scenario():
        c = Gated()
        e = engine(c, timeout=5.0)
        assert e.expected_wait_ms(2.0) == 0  # a worker is free
        first = asyncio.create_task(e.compress(["x" * 300], "q", 0.5))
        await until(c.started.is_set)
        second = asyncio.create_task(e.compress(["y" * 100], "q", 0.5))
        await until(lambda: e._running == 2)
        assert e.expected_wait_ms(2.0) == pytest.approx(400 * 2.0)  # prior: 2 ms per char
        c.release.set()
        done = await first
        await second
        assert done.work_ms > 0 and done.wait_ms >= 0 and done.ms >= done.work_ms
        await until(lambda: e._running == 0)
        assert list(e._ms_per_char) == [pytest.approx(done.work_ms / 300)]  # 100 chars: too few
        e.close()

    asyncio.run(scenario())


def test_warm_up_measures_the_compressor_for_the_gate():
    async def scenario():
        e = engine(HalfWords(delay=0.05))
        await e.warm()
        c = e.calibration
        assert c.misses == 4 and c.tokens_before > 250 and c.work_ms >= 50  # ~280 words
        g = CostGate(
            "auto",
            prior_ms_per_1k=120.0,
            min_context_tokens=0,
            max_added_ms=1e4,
            pool=EndpointPool(),
        )
        g.observe_compression(c)
        assert c.ms >= c.work_ms  # the hand-off to the worker and back counts too
        assert g.compressor_ms_per_token() == pytest.approx((c.ms - c.wait_ms) / c.tokens_before)
        e.close()

    asyncio.run(scenario())


def test_loading_compressor_refuses_at_once():
    async def scenario():
        e = engine(HalfWords())
        e.state = "loading"
        with pytest.raises(CompressionBusy):
            await e.compress(DOCS, "q", 0.5)
        e.close()

    asyncio.run(scenario())


def test_app_wiring_gives_question_aware_compressors_a_shared_budget():
    from proxy.components import build
    from proxy.settings import Settings

    c = Pooled()
    parts = build(Settings(backends=["http://127.0.0.1:9"]), compressor=c)
    asyncio.run(parts.compression.engine.compress(DOCS, "q", 0.5))
    assert c.budgets[-1].target_tokens is not None
    parts.compression.engine.close()

"""A compression that overruns its timeout really stops (issue 23): the client had
`failed-open:timeout` after 5 s while the worker thread ran ~80 s more."""

import asyncio
import time

import pytest

from cache.memo import ChunkMemo
from cache.store import MemoryStore
from compressors import (
    CompressionResult,
    DeadlineExceeded,
    DocumentResult,
    Protector,
    split_sentences,
)
from proxy.compression.engine import CompressionEngine
from tests.support.compressor_doubles import HalfWords


class Slow(HalfWords):
    """Works document by document through the shared building blocks, 20 ms each."""

    name = "slow"

    def __init__(self):
        self.done = 0

    def compress(self, documents, *, question, budget):
        out = []
        for doc in documents:
            split_sentences(doc, Protector().spans(doc))  # the checkpoints
            time.sleep(0.02)
            self.done += 1
            out.append(DocumentResult(doc, 1, 1))
        return CompressionResult(self.name, tuple(out))


def test_an_overrun_job_stops_at_its_next_checkpoint_and_frees_its_worker():
    async def scenario():
        slow = Slow()
        engine = CompressionEngine(slow, ChunkMemo(MemoryStore()), timeout=0.2, workers=1)
        docs = [f"Document {i}. It has two sentences." for i in range(500)]  # ~10 s of work
        with pytest.raises((TimeoutError, DeadlineExceeded)):  # whichever comes first
            await engine.compress(docs, "q", 0.5)
        await asyncio.sleep(0.3)
        stopped_at = slow.done
        await asyncio.sleep(0.3)
        assert slow.done == stopped_at < 40  # stopped, within a checkpoint of 0.2 s
        assert engine._running == 0  # nothing left counted against the queue
        fresh = await engine.compress(["Next one."], "q", 0.5)  # a worker is free at once
        assert fresh.texts == ("Next one.",)

    asyncio.run(scenario())

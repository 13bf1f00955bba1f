"""CompressionEngine: a compressor, memoized per document, run off the event loop.

Used by the compress stage, by POST /v1/compress (warming at ingest) and by the
LangChain integration. Documents found in the memo cost a lookup; the others go to
a worker thread (torch releases the GIL) under a timeout. When every worker is busy
the engine refuses at once (`CompressionBusy`): waiting would make the request slower.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from cache.keys import content_key
from cache.memo import ChunkMemo, MemoEntry
from compressors.base import Budget, Compressor, TokenCounter


class CompressionBusy(Exception):
    """Every compression worker is busy; the caller forwards the original."""


@dataclass(frozen=True)
class Outcome:
    texts: tuple[str, ...]
    tokens_before: int
    tokens_after: int
    hits: int
    misses: int
    ms: float

    @property
    def ratio(self) -> float:
        return self.tokens_before / self.tokens_after if self.tokens_after else 1.0


class CompressionEngine:
    def __init__(self, compressor: Compressor, memo: ChunkMemo, *, timeout: float, workers: int,
                 count: TokenCounter | None = None):  # fmt: skip
        self.compressor = compressor
        self.count = count
        self.memo = memo
        self.timeout = timeout
        self.workers = workers
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="ragtrim-compress")
        self._running = 0
        self.state = "cold"  # cold -> loading -> ready | failed

    async def warm(self, torch_threads: int = 0) -> None:
        """Load the model in a worker before traffic needs it. Meanwhile requests find
        the worker busy and are forwarded uncompressed (never slower)."""
        self.state = "loading"
        try:
            if torch_threads:
                await asyncio.wrap_future(self._pool.submit(_set_torch_threads, torch_threads))
            await self._run(["ragtrim warms its compressor up."], "warm up?", 0.5)
        except Exception:  # noqa: BLE001 - a broken compressor fails open per request
            self.state = "failed"
            raise
        self.state = "ready"

    @property
    def name(self) -> str:
        return self.compressor.name

    def fingerprint(self, rate: float) -> str:
        return f"{self.compressor.fingerprint()}|rate={rate:.3f}"

    def _scope(self, documents: Sequence[str], question: str) -> str | None:
        """What besides the document a memo entry depends on. Question-agnostic: nothing
        (each chunk is cached on its own, across requests). Question-aware compressors
        share one budget across the documents (a relevant document keeps more than a
        distractor), so an entry depends on the question and the whole document set."""
        if not self.compressor.question_aware:
            return None
        return question + "\x00" + content_key(*documents)

    async def lookup(self, documents: Sequence[str], question: str, rate: float):
        scope = self._scope(documents, question)
        return await self.memo.lookup(self.fingerprint(rate), documents, scope)

    async def compress(self, documents: Sequence[str], question: str, rate: float) -> Outcome:
        start = time.perf_counter()
        entries = await self.lookup(documents, question, rate)
        missing = [i for i, e in enumerate(entries) if e is None]
        if missing and self.compressor.question_aware:
            missing = list(range(len(documents)))  # one shared budget: redo them together
        if missing:
            fresh = await self._run([documents[i] for i in missing], question, rate)
            for i, entry in zip(missing, fresh, strict=True):
                entries[i] = entry
            scope = self._scope(documents, question)
            await self.memo.remember(
                self.fingerprint(rate), [documents[i] for i in missing], scope, fresh
            )
        done = [e for e in entries if e is not None]
        return Outcome(
            texts=tuple(e.text for e in done),
            tokens_before=sum(e.tokens_before for e in done),
            tokens_after=sum(e.tokens_after for e in done),
            hits=len(documents) - len(missing),
            misses=len(missing),
            ms=(time.perf_counter() - start) * 1000,
        )

    async def _run(self, documents: list[str], question: str, rate: float) -> list[MemoEntry]:
        if self._running >= self.workers:
            raise CompressionBusy(f"{self._running} compressions already running")
        loop = asyncio.get_running_loop()

        def call():  # in the worker: token counting for the budget included
            budget = self._budget(documents, rate)
            return self.compressor.compress(documents, question=question, budget=budget)

        job = self._pool.submit(call)
        self._running += 1  # until the thread really finishes, timeout or not
        job.add_done_callback(lambda _: self._finished_from_thread(loop))
        waiting = asyncio.shield(asyncio.wrap_future(job))
        result = await (
            asyncio.wait_for(waiting, self.timeout) if self.state != "loading" else waiting
        )
        return [MemoEntry(d.text, d.tokens_before, d.tokens_after) for d in result.documents]

    def _budget(self, documents: list[str], rate: float) -> Budget:
        if not self.compressor.question_aware or self.count is None:
            return Budget(rate=rate)
        total = sum(self.count(d) for d in documents)  # runs in the worker thread
        return Budget(rate=rate, target_tokens=max(1, round(total * rate)))

    def _finished(self) -> None:
        self._running -= 1

    def _finished_from_thread(self, loop: asyncio.AbstractEventLoop) -> None:
        if not loop.is_closed():
            loop.call_soon_threadsafe(self._finished)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _set_torch_threads(n: int) -> None:
    try:
        import torch
    except ImportError:  # compressors without torch
        return
    torch.set_num_threads(n)

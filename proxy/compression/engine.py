"""CompressionEngine: a compressor, memoized per document, run off the event loop.

Used by the compress stage, POST /v1/compress (ingest) and the LangChain integration.
Memo hits cost a lookup (keyed by the documents' digests: cache/analysis.py
`document_names`); the rest go to a worker (torch releases the GIL) under a timeout.

Under load, jobs queue for the `workers` threads (FIFO); the gate adds the expected wait
(`expected_wait_ms`: characters queued ahead × measured worker ms per character) to
a compression's cost. A job still queued when its request times out is cancelled; one
in a worker stops at its next checkpoint (compressors/deadline.py), freeing the worker.
While the compressor loads, requests are refused at once (`CompressionBusy`). A small job
over memoized features runs on the loop (features.py `FeaturePath.inline`).
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from cache.analysis import DocumentAnalyses, document_names
from cache.features import FeatureCache
from cache.keys import content_key
from cache.memo import ChunkMemo, MemoEntry
from compressors import (
    AUTO,
    AdaptiveBudget,
    Budget,
    Compressor,
    FeatureCompressor,
    TokenCounter,
    calibration,
    within,
)
from proxy.compression.features import FeaturePath
from proxy.compression.fingerprints import Fingerprints
from proxy.compression.outcome import CompressionBusy, WorkerCrashed
from proxy.gate.job_cost import MAX_MS_PER_TOKEN
from proxy.outcome.job import Outcome

__all__ = ["CompressionBusy", "CompressionEngine", "WorkerCrashed"]


class CompressionEngine:
    def __init__(self, compressor: Compressor, memo: ChunkMemo, *, timeout: float, workers: int,
                 count: TokenCounter | None = None, features: FeatureCache | None = None,
                 analyses: DocumentAnalyses | None = None):  # fmt: skip
        self.compressor = compressor
        self._scoped = bool(getattr(compressor, "scoped_cache", False))  # its cache per tenant
        featured = features is not None and isinstance(compressor, FeatureCompressor)
        self.features = FeaturePath(compressor, features, analyses=analyses) if featured else None
        self.analyses = analyses
        self.count = count
        self.fingerprint = Fingerprints(compressor, count, lambda: self.state == "ready")
        self.memo = memo
        self.timeout = timeout
        self.workers = workers
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="ragtrim-compress")
        self._running = 0  # jobs submitted and not finished (queued or in a worker)
        self._backlog_chars = 0  # characters of those jobs
        self._ms_per_char: deque[float] = deque(maxlen=32)
        self.state = "cold"  # cold -> loading -> ready | failed
        self.calibration: Outcome | None = None  # measured at warm-up, for the gate

    async def warm(self, torch_threads: int = 0) -> None:
        """Load the model in a worker first; meanwhile requests go uncompressed."""
        self.state = "loading"
        try:
            if torch_threads:
                await asyncio.wrap_future(self._pool.submit(_set_torch_threads, torch_threads))
            await self._run(["ragtrim warms its compressor up."], "warm up?", 0.5)
        except Exception:  # noqa: BLE001 - a broken compressor fails open per request
            self.state = "failed"
            raise
        self.calibration = await self.calibrate()
        self.state = "ready"

    async def calibrate(self, copies: int = 1) -> Outcome | None:
        """One measured compression of the calibration workload (~450 tokens a copy),
        loaded already (compressors/calibration.py says why); None when it fails."""
        docs, timing = calibration.workload(copies), {}
        start = time.perf_counter()
        try:
            entries = await self._run(docs, calibration.QUESTION, 0.5, timing)
        except Exception:  # noqa: BLE001 - the gate keeps its prior
            return None
        ms = (time.perf_counter() - start) * 1000  # the hand-off to the worker and back too
        return Outcome.of(entries, range(len(docs)), ms, timing, in_flight=1)

    @property
    def name(self) -> str:
        return self.compressor.name

    @property
    def idle(self) -> bool:  # no compression queued or running
        return self._running == 0

    def _scope(self, names: Sequence[str], question: str) -> str | None:
        """What besides the document a memo entry depends on. Question-agnostic: nothing
        (each chunk is cached on its own, across requests). Question-aware compressors
        share one budget across the documents (a relevant document keeps more than a
        distractor), so an entry depends on the question and the whole document set."""
        if not self.compressor.question_aware:
            return None
        return question + "\x00" + content_key(*names)

    async def lookup(self, documents: Sequence[str], question: str, rate: float,
                     tenant: str = ""):  # fmt: skip
        names = document_names(self.analyses, tenant, documents)  # the memo keys' digests
        scope = self._scope(names, question)
        return await self.memo.lookup(self.fingerprint(rate), names, scope, tenant)

    def expected_wait_ms(self, prior_ms_per_char: float) -> float:
        """How long a new job would queue before a worker takes it: the work ahead
        spread over the workers (0 while one is free). Jobs in a worker count whole:
        an overestimate by at most one job, on the safe side."""
        if self._running < self.workers:
            return 0.0
        measured = statistics.median(self._ms_per_char) if self._ms_per_char else None
        per_char = prior_ms_per_char if measured is None else measured
        return self._backlog_chars * per_char / self.workers

    async def compress(self, documents: Sequence[str], question: str, rate: float,
                       tenant: str = "", memo: bool = True) -> Outcome:  # fmt: skip
        """`tenant` scopes the memo: one tenant's entries never serve another. `memo=False`:
        a question-aware compressor's output memo is neither read nor written (decision 0001)."""
        if self.state == "loading":
            raise CompressionBusy("the compressor is still loading")
        start = time.perf_counter()
        timing: dict[str, float] = {}
        in_flight = self.in_flight()
        entries, missing = await self._resolve(documents, question, rate, timing, tenant, memo)
        ms = (time.perf_counter() - start) * 1000
        return Outcome.of(entries, missing, ms, timing, in_flight)

    async def _resolve(self, documents: Sequence[str], question: str, rate: float,
                       timing: dict[str, float], tenant: str, memo: bool = True):  # fmt: skip
        """Each document's entry, and which were computed now. A small seen set is
        computed on the loop (features.py `inline`), for less than a memo round trip:
        neither looked up nor stored. Else the memo, then a job for its misses (all of
        them for a question-aware compressor: one shared budget)."""
        blobs = await self.features.fetch(documents, tenant) if self.features else None
        everything = list(range(len(documents)))
        if blobs is not None and self.state == "ready" and self.features.inline(documents, blobs):
            timing["seen"] = len(documents)
            job = self._job(documents, question, rate, timing, blobs, tenant)
            return _entries(job()), everything
        keys: list[str] | None = None
        entries: list[MemoEntry | None] = [None] * len(documents)
        if memo or not self.compressor.question_aware:  # else keyed by an unseen question
            names = document_names(self.analyses, tenant, documents)
            scope = self._scope(names, question)
            keys = self.memo.keys(self.fingerprint(rate), names, scope, tenant)
            entries = await self.memo.get(keys)
        missing = [i for i, e in enumerate(entries) if e is None]
        if missing and self.compressor.question_aware:
            missing = everything
        if missing:
            known = None if blobs is None else [blobs[i] for i in missing]
            fresh = await self._fresh([documents[i] for i in missing], question, rate, timing,
                                      tenant, known)  # fmt: skip
            for i, entry in zip(missing, fresh, strict=True):
                entries[i] = entry
            if keys is not None:  # off the request path
                self.memo.put_later([keys[i] for i in missing], fresh)
        return entries, missing  # type: ignore[return-value]

    def in_flight(self) -> int:  # compressions a new one would share the CPUs with, itself too
        return self._running + 1

    async def seen_documents(self, documents: Sequence[str], tenant: str = "") -> int:
        return await self.features.seen(documents, tenant) if self.features else 0  # priced cheap

    async def precompute(self, documents: Sequence[str], tenant: str = "") -> int:
        """Store unseen `documents`' features (ingest; any question finds them seen)."""
        f = self.features
        return await f.precompute(documents, tenant, self._pool, self.timeout) if f else 0

    async def _fresh(self, documents: list[str], question: str, rate: float,
                     timing: dict[str, float], tenant: str,
                     blobs: list[bytes | None] | None) -> list[MemoEntry]:  # fmt: skip
        """Compress `documents` in a worker, from their memoized features where found
        (`blobs`, fetched; None: no feature path)."""
        if blobs is None or self.features is None:
            return await self._run(documents, question, rate, timing, tenant=tenant)
        found = list(blobs)
        timing["seen"] = sum(b is not None for b in found)
        entries = await self._run(documents, question, rate, timing, blobs, tenant)
        await self.features.keep(documents, blobs, found, tenant)
        return entries

    def _work(self, documents: list[str], question: str, rate, blobs: list | None, tenant: str):
        """In the worker: the compression (from features when `blobs` is given)."""
        if blobs is None or self.features is None:
            scope = {"scope": tenant} if self._scoped else {}
            budget = self._budget(documents, rate)
            return self.compressor.compress(documents, question=question, budget=budget, **scope)
        budget_for = lambda tokens: self._budget(documents, rate, tokens)  # noqa: E731
        return self.features.compress(documents, question, blobs, budget_for, tenant)

    async def _run(self, documents: list[str], question: str, rate: float,
                   timing: dict[str, float] | None = None, blobs: list[bytes | None] | None = None,
                   tenant: str = "") -> list[MemoEntry]:  # fmt: skip
        loop = asyncio.get_running_loop()
        timing = {} if timing is None else timing
        chars = sum(len(d) for d in documents)
        timing["chars"] = chars
        job = self._pool.submit(self._job(documents, question, rate, timing, blobs, tenant))
        self._running += 1  # until the thread really finishes (or the job is cancelled)
        self._backlog_chars += chars
        job.add_done_callback(lambda _: self._finished_from_thread(loop, chars, timing))
        wrapped = asyncio.wrap_future(job)
        waiting = asyncio.shield(wrapped)
        try:
            result = await (
                asyncio.wait_for(waiting, self.timeout) if self.state != "loading" else waiting
            )
        except TimeoutError:
            if not job.cancel():  # still queued: it never runs; in a worker: replace it
                self._replace_worker(timing)
            # it ends at its next checkpoint (DeadlineExceeded): nobody awaits it now
            wrapped.add_done_callback(lambda f: f.cancelled() or f.exception())
            raise
        return _entries(result)

    def _job(self, documents: list[str], question: str, rate, timing: dict[str, float],
             blobs: list | None, tenant: str = ""):  # fmt: skip
        """The call a worker runs: token counting for the budget included. It stops at its
        next checkpoint once its timeout has passed (compressors/deadline.py)."""
        submitted = time.perf_counter()
        deadline = None if self.state == "loading" else time.monotonic() + self.timeout

        def call():
            began = time.perf_counter()
            timing["wait_ms"] = (began - submitted) * 1000
            try:
                with within(deadline):
                    out = self._work(documents, question, rate, blobs, tenant)
            except Exception:
                raise
            except BaseException as exc:  # noqa: BLE001 - must not reach the event loop
                raise WorkerCrashed(type(exc).__name__) from exc
            timing["work_ms"] = (time.perf_counter() - began) * 1000
            # the question's part, timed by the compressor, priced apart
            timing["question_ms"] = min(timing["work_ms"], getattr(out, "question_ms", 0.0))
            return out

        return call

    def _budget(self, documents: list[str], rate: float, tokens: list[int] | None = None) -> Budget:
        """`tokens`: counts from the features, if by this counter (no tokenizing again)."""
        if rate == AUTO or not self.compressor.question_aware or self.count is None:
            return AdaptiveBudget() if rate == AUTO else Budget(rate=rate)  # auto: a margin
        same = tokens is not None and getattr(self.compressor, "count_tokens", None) is self.count
        total = sum(tokens) if same else sum(self.count(d) for d in documents)  # in the worker
        return Budget(rate=rate, target_tokens=max(1, round(total * rate)))

    def _replace_worker(self, timing: dict[str, float]) -> None:
        """A job overran its timeout in a worker, which it may never leave (a hang): new jobs
        go to a fresh pool, the old one exits after its jobs (Python cannot stop a thread)."""
        old = self._pool
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="ragtrim-compress")
        old.shutdown(wait=False)
        self._running -= 1
        self._backlog_chars -= int(timing.get("chars", 0))
        timing["abandoned"] = 1.0

    def _finished(self, chars: int, timing: dict[str, float]) -> None:
        if timing.get("abandoned"):
            return  # uncounted when its worker was replaced
        self._running -= 1
        self._backlog_chars -= chars
        if "work_ms" in timing and chars >= 256:  # short jobs: fixed costs dominate
            # the documents' part only: a giant question is no document's cost
            work = timing["work_ms"] - timing.get("question_ms", 0.0)  # a char: at most a token
            self._ms_per_char.append(min(MAX_MS_PER_TOKEN, max(0.0, work) / chars))

    def _finished_from_thread(self, loop: asyncio.AbstractEventLoop, chars: int,
                              timing: dict[str, float]) -> None:  # fmt: skip
        if not loop.is_closed():
            loop.call_soon_threadsafe(self._finished, chars, timing)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _entries(result) -> list[MemoEntry]:
    return [MemoEntry(d.text, d.tokens_before, d.tokens_after) for d in result.documents]


def _set_torch_threads(n: int) -> None:
    with contextlib.suppress(ImportError):  # compressors without torch
        import torch

        torch.set_num_threads(n)

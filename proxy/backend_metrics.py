"""Prefill cost from vLLM's own metrics, so the cost gate learns without streaming clients.

A non-streamed response gives ragtrim no time-to-first-token, and many RAG clients
never stream (batch jobs, `chain.invoke`). vLLM itself records, per finished request,
the time spent in prefill and the KV tokens it computed (cached ones excluded):

    vllm:request_prefill_time_seconds_{sum,count}        (histogram)
    vllm:request_prefill_kv_computed_tokens_{sum,count}  (histogram)

(vllm/v1/metrics/loggers.py in vllm 0.32; recorded in the engine's output loop before
the response leaves.) After a response from a backend the scraper reads that
backend's `/metrics` (at most once per `min_interval`; a response meanwhile schedules
one more read when the interval ends) and turns the increments since the last read
into one sample: mean computed tokens and mean prefill ms of the requests in between
— a point on the backend's `base + per_token × tokens` line, which the gate fits.
The first read gives the averages since vLLM started. Only the lines it needs are
parsed (vLLM's page is ~100 kB; no full Prometheus parse on the event loop). A
backend without these metrics (404, not vLLM) is left alone for `retry_s`. Fails open.

The same read gives the backend's queue, for the gate's queue term (proxy/gate.py):
the gauges `vllm:num_requests_waiting` and `vllm:num_requests_running` (the scheduler's
WAITING and RUNNING lists; the gateway API inference extension's endpoint picker reads
the same two), handed to `queue(backend, waiting, running)` on every read. Under load
reads come at most every `min_interval`; idle, none come, and the gate lets a reading
age out.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import httpx

log = logging.getLogger("ragtrim.prefill")
TIME = "vllm:request_prefill_time_seconds"
TOKENS = "vllm:request_prefill_kv_computed_tokens"
WANTED = tuple(f"{name}_{part}" for name in (TIME, TOKENS) for part in ("sum", "count"))
GAUGES = ("vllm:num_requests_waiting", "vllm:num_requests_running")
Observe = Callable[[str, float, float], None]  # (backend, tokens, ms)
Queue = Callable[[str, float, float], None]  # (backend, waiting, running)


def parse_totals(text: str) -> dict[str, float]:
    """Sum of each wanted series over its label sets (engines, models)."""
    totals: dict[str, float] = {}
    for line in text.splitlines():
        if not line.startswith(WANTED):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name not in WANTED:
            continue
        try:
            totals[name] = totals.get(name, 0.0) + float(line.rsplit(" ", 1)[-1])
        except ValueError:
            continue
    return totals


def parse_gauges(text: str) -> dict[str, float]:
    """The queue gauges, summed over engines (a label set per engine)."""
    gauges: dict[str, float] = {}
    for line in text.splitlines():
        if not line.startswith(GAUGES):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in GAUGES:
            try:
                gauges[name] = gauges.get(name, 0.0) + float(line.rsplit(" ", 1)[-1])
            except ValueError:
                continue
    return gauges


def sample_between(before: dict[str, float] | None, now: dict[str, float]):
    """(mean computed tokens, mean prefill ms) of the requests finished in between."""
    if any(name not in now for name in WANTED):
        return None
    before = before or dict.fromkeys(WANTED, 0.0)
    n = now[f"{TIME}_count"] - before[f"{TIME}_count"]
    if n <= 0 or now[f"{TOKENS}_count"] - before[f"{TOKENS}_count"] != n:
        return None  # nothing new, a restart (counters fell), or read mid-update
    tokens = (now[f"{TOKENS}_sum"] - before[f"{TOKENS}_sum"]) / n
    ms = (now[f"{TIME}_sum"] - before[f"{TIME}_sum"]) * 1000 / n
    return (tokens, ms) if tokens > 0 and ms >= 0 else None


class MetricsScraper:
    def __init__(self, client: httpx.AsyncClient, observe: Observe, *, min_interval: float,
                 timeout: float = 2.0, retry_s: float = 60.0,
                 queue: Queue | None = None):  # fmt: skip
        self.client = client
        self.observe = observe
        self.queue = queue
        self.min_interval = min_interval
        self.timeout = timeout
        self.retry_s = retry_s
        self._last: dict[str, dict[str, float]] = {}
        self._read_at: dict[str, float] = {}
        self._off_until: dict[str, float] = {}
        self._again: set[str] = set()
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def poke(self, backend: str) -> None:
        """A response from `backend` finished: read its metrics soon."""
        if time.monotonic() < self._off_until.get(backend, 0.0):
            return
        if backend in self._tasks:
            self._again.add(backend)
            return
        task = asyncio.create_task(self._run(backend))
        self._tasks[backend] = task
        task.add_done_callback(lambda _: self._tasks.pop(backend, None))

    async def _run(self, backend: str) -> None:
        while True:
            wait = self._read_at.get(backend, -1e9) + self.min_interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._again.discard(backend)
            await self.scrape(backend)
            if backend not in self._again:
                return

    async def scrape(self, backend: str) -> tuple[float, float] | None:
        self._read_at[backend] = time.monotonic()
        try:
            resp = await self.client.get(f"{backend}/metrics", timeout=self.timeout)
            resp.raise_for_status()
            now = parse_totals(resp.text)
            gauges = parse_gauges(resp.text)
        except httpx.HTTPError as exc:
            log.info("no prefill metrics from %s (%r); retry in %.0f s", backend, exc,
                     self.retry_s)  # fmt: skip
            self._off_until[backend] = time.monotonic() + self.retry_s
            return None
        if self.queue is not None and len(gauges) == len(GAUGES):
            self.queue(backend, gauges[GAUGES[0]], gauges[GAUGES[1]])
        sample = sample_between(self._last.get(backend), now)
        if now:
            self._last[backend] = now
        if sample is not None:
            self.observe(backend, *sample)
        return sample

    async def drain(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

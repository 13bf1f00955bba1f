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

The same read gives the backend's queue, for the gate's queue term (proxy/gate/decide.py):
the gauges `vllm:num_requests_waiting` and `vllm:num_requests_running` (the scheduler's
WAITING and RUNNING lists; the gateway API inference extension's endpoint picker reads
the same two), handed to `queue(backend, waiting, running)` on every read. Under load
reads come at most every `min_interval`; idle, none come, and the gate lets a reading
age out.

Where each backend's reads stand (`ScrapeCursor`) lives on its record in the pool
(proxy/backends/endpoint.py): a backend that leaves the pool is forgotten with it, and
a read in progress is cancelled. Reads go over the data plane's transport and error
mapping (proxy/upstream/control.py); a read that failed for ragtrim's own reasons
(EMFILE) says nothing about the backend and does not turn its reads off.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from proxy.backends.endpoint import Endpoint, EndpointPool
from proxy.errors import LocalResourceError, UpstreamError
from proxy.metrics import Metrics
from proxy.upstream.control import call
from proxy.upstream.transport import Transport

log = logging.getLogger("ragtrim.prefill")
TIME = "vllm:request_prefill_time_seconds"
TOKENS = "vllm:request_prefill_kv_computed_tokens"
WANTED = tuple(f"{name}_{part}" for name in (TIME, TOKENS) for part in ("sum", "count"))
GAUGES = ("vllm:num_requests_waiting", "vllm:num_requests_running")


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


@dataclass(eq=False)
class MetricsScraper:
    """Reads a backend's /metrics after its responses and writes what it read into the
    backend's record: the prefill sample into `ep.prefill`, the law the gate
    prices with (source "metrics", which outranks TTFTs), the queue gauges into `ep.queue`.
    Nothing is wired to it after construction; the feedback only pokes it."""

    pool: EndpointPool
    transport: Transport
    metrics: Metrics
    min_interval: float = field(kw_only=True)
    timeout: float = field(default=2.0, kw_only=True)
    retry_s: float = field(default=60.0, kw_only=True)

    def __post_init__(self) -> None:
        self.pool.on_removed.append(self.forget)

    def poke(self, backend: str) -> None:
        """A response from `backend` finished: read its metrics soon."""
        ep = self.pool.get(backend)
        if ep is None or time.monotonic() < ep.scrape.off_until:
            return
        cursor = ep.scrape
        if cursor.task is not None:
            cursor.again = True
            return
        cursor.task = asyncio.create_task(self._run(ep))
        cursor.task.add_done_callback(lambda _: setattr(cursor, "task", None))

    def forget(self, ep: Endpoint) -> None:
        """`ep` left the pool: stop reading it (its cursor goes with its record)."""
        if ep.scrape.task is not None:
            ep.scrape.task.cancel()

    async def _run(self, ep: Endpoint) -> None:
        cursor = ep.scrape
        while True:
            wait = cursor.read_at + self.min_interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            cursor.again = False
            await self.scrape(ep)
            if not cursor.again:
                return

    async def read(self, ep: Endpoint) -> str | None:
        """The backend's metrics page; None (and its reads off for `retry_s` unless the
        failure was ragtrim's own) when there is none."""
        try:
            reply = await call(
                self.transport,
                "GET",
                f"{ep.url}/metrics",
                timeout=self.timeout,
                phase="metrics scrape",
            )
        except LocalResourceError as exc:
            log.info("metrics of %s not read: %s", ep.url, exc.message)
            return None
        except UpstreamError as exc:
            why = exc.message
        else:
            if reply.status == 200:
                return reply.body.decode("utf-8", "replace")
            why = f"HTTP {reply.status}"
        log.info("no prefill metrics from %s (%s); retry in %.0f s", ep.url, why, self.retry_s)
        ep.scrape.off_until = time.monotonic() + self.retry_s
        return None

    async def scrape(self, ep: Endpoint) -> tuple[float, float] | None:
        ep.scrape.read_at = time.monotonic()
        text = await self.read(ep)
        if text is None or self.pool.get(ep.url) is not ep:
            return None
        now, gauges = parse_totals(text), parse_gauges(text)
        if len(gauges) == len(GAUGES):
            ep.observe_queue(gauges[GAUGES[0]], gauges[GAUGES[1]])
        sample = sample_between(ep.scrape.last, now)
        if now:
            ep.scrape.last = now
        if sample is not None:
            tokens, ms = sample
            self.metrics.prefill_samples.labels(ep.url, "metrics").inc()
            ep.prefill.add(ms, tokens, "metrics")
        return sample

    async def drain(self) -> None:
        tasks = [ep.scrape.task for ep in self.pool.endpoints if ep.scrape.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

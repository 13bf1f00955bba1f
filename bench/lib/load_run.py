"""bench.load's load generator: open-loop arrivals, streamed TTFT, per-level figures.

Open loop: each request leaves at its scheduled time whatever the earlier ones are
doing (a closed loop would slow down with the server and hide the queue), and its
TTFT counts from that scheduled time, so a generator that falls behind shows as
latency, not as a lighter load. TTFT = the first streamed chunk with content (vLLM's
first chunk may carry only the role). One aiohttp session, asyncio: cheap enough to
share a core with ragtrim at these rates (tens of requests/s).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field

import aiohttp

from bench.lib.common import percentile


@dataclass
class Row:
    ttft_ms: float | None = None
    error: str = ""
    decision: str = ""
    prompt_tokens: int = 0
    done_at: float = 0.0  # seconds after the level's start
    headers: dict = field(default_factory=dict)


def _first_content(line: bytes) -> bool:
    if not line.startswith(b"data: {"):
        return False
    chunk = json.loads(line[6:])
    return any((c.get("delta") or {}).get("content") or c.get("text")
               for c in chunk.get("choices") or [])  # fmt: skip


async def one(session: aiohttp.ClientSession, url: str, body: dict, t0: float, start: float,
              timeout: float) -> Row:  # fmt: skip
    row = Row()
    try:
        async with asyncio.timeout(timeout):
            async with session.post(f"{url}/v1/chat/completions", json=body) as resp:
                row.decision = resp.headers.get("x-ragtrim-decision", "")
                row.headers = {k.lower(): v for k, v in resp.headers.items()
                               if k.lower().startswith("x-ragtrim")}  # fmt: skip
                if resp.status != 200:
                    row.error = f"http {resp.status}"
                    await resp.read()
                    return row
                async for line in resp.content:
                    if row.ttft_ms is None and _first_content(line):
                        row.ttft_ms = (time.perf_counter() - t0) * 1000
                        row.done_at = time.perf_counter() - start
                    elif line.startswith(b'data: {"id"') and b'"usage"' in line:
                        usage = json.loads(line[6:]).get("usage") or {}
                        row.prompt_tokens = usage.get("prompt_tokens", 0)
        if row.ttft_ms is None:
            row.error = "no content"
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        row.error = type(exc).__name__
    return row


async def open_loop(url: str, schedule: list[tuple[float, dict]], timeout: float) -> list[Row]:
    """Send each body at its offset (seconds); wait for all."""
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn) as session:
        start = time.perf_counter()
        tasks = []
        for at, body in schedule:
            delay = start + at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(session, url, body, start + at, start, timeout)))
        return list(await asyncio.gather(*tasks))


async def closed_loop(url: str, bodies: list[dict], concurrency: int, timeout: float,
                      accept=lambda row: not row.error) -> float:  # fmt: skip
    """Accepted requests/s with `concurrency` always in flight: the server's capacity."""
    queue: asyncio.Queue = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    done = 0

    async def worker(session):
        nonlocal done
        while not queue.empty():
            now = time.perf_counter()
            row = await one(session, url, queue.get_nowait(), now, now, timeout)
            done += bool(accept(row))

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        start = time.perf_counter()
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
        return done / (time.perf_counter() - start)


def level_figures(rows: list[Row], offered: float, slo_ms: float) -> dict:
    """TTFT percentiles, achieved and good requests/s, errors of one level and path."""
    ok = [r for r in rows if not r.error]
    ttfts = [r.ttft_ms for r in ok]
    span = max((r.done_at for r in ok), default=0.0) or float("nan")
    good = sum(t <= slo_ms for t in ttfts)
    compressed = [r for r in ok if r.decision.startswith("compress")]
    return {
        "offered_rps": round(offered, 3),
        "requests": len(rows),
        "errors": len(rows) - len(ok),
        "ttft_p50_ms": round(percentile(ttfts, 50), 1),
        "ttft_p90_ms": round(percentile(ttfts, 90), 1),
        "ttft_p99_ms": round(percentile(ttfts, 99), 1),
        "achieved_rps": round(len(ok) / span, 3),
        "goodput_rps": round(good / span, 3),
        "within_slo": round(good / len(rows), 3) if rows else None,
        "compressed_share": round(len(compressed) / len(ok), 3) if ok else None,
        "decisions": dict(Counter(r.decision.split("(", 1)[0] for r in ok if r.decision)),
        "meets_slo": bool(ttfts) and len(ok) == len(rows) and percentile(ttfts, 90) <= slo_ms,
    }

"""bench.fleet's runs: a fresh simulated fleet (its own process), ragtrim in a mode in
front of it (another), and the schedule replayed by an async client (this process).

Every run starts from empty caches (a fresh fleet), so no mode inherits another's.
"random" has no proxy: the client sends each request to a replica drawn at random
(seeded), as a plain Service in front of the pods does; the proxies' own overhead
(about a millisecond) is small against the TTFTs compared here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import httpx

from bench.lib.common import ROOT, free_port, percentile, spawn_ragtrim, stop
from bench.lib.fleet_workload import Arrival
from bench.lib.prefix_kv import probe_pubs

TOKENIZER = ROOT / ".models" / "smollm2-135m-instruct"
JSON = {"content-type": "application/json"}
BASE = {"RAGTRIM_COMPRESSION__ENABLED": "false", "RAGTRIM_WARMUP__ENABLED": "false"}
MODES = {
    "random": None,
    "roundrobin": {"RAGTRIM_ROUTING__SCORERS": '[{"name": "roundrobin"}]',
                   "RAGTRIM_ROUTING__PICKER__NAME": "highest"},
    "rendezvous": {},  # ragtrim's default: affinity:1, load:0.3, bounded
    "kv": {"RAGTRIM_ROUTING__SCORERS": '[{"name": "kv_cache", "weight": 1}, '
                                       '{"name": "load", "weight": 0.3}]',
           "RAGTRIM_ROUTING__PICKER__NAME": "cost"},
}  # fmt: skip
# kv with cache-aware compression on (issue 24's gate, issue 29's stable forms): the
# gate learns each replica's prefill speed from its /metrics and streamed TTFTs
MODES["kv_compress"] = {**MODES["kv"], "RAGTRIM_COMPRESSION__ENABLED": "true",
                        "RAGTRIM_COMPRESSION__TOKENIZER": str(TOKENIZER),
                        "RAGTRIM_COMPRESSION__STABLE__BLOCK_SIZE": "16"}  # fmt: skip


@contextlib.contextmanager
def fleet(replicas: int, preset: str, tokenizer: Path, cache_blocks: int | None) -> Iterator:
    """{url: {pub, replay}} of a fresh fleet process; stopped whatever happens."""
    out = Path(tempfile.mkdtemp()) / "endpoints.json"
    args = [sys.executable, "-m", "tests.doubles.fleet", "--replicas", str(replicas),
            "--preset", preset, "--tokenizer", str(tokenizer), "--out", str(out)]  # fmt: skip
    if cache_blocks:
        args += ["--cache-blocks", str(cache_blocks)]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not out.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the simulated fleet did not start")
            time.sleep(0.1)
        time.sleep(0.2)  # the file is written whole, but give the writer its close
        yield json.loads(out.read_text())
    finally:
        stop(proc)


@contextlib.contextmanager
def proxy(mode: str, endpoints: dict) -> Iterator[str | None]:
    """ragtrim's URL in `mode` in front of the fleet (None for random: no proxy)."""
    if MODES[mode] is None:
        yield None
        return
    env = {**BASE, **MODES[mode]}
    if mode.startswith("kv"):
        env |= {"RAGTRIM_ROUTING__KV_EVENTS__ENABLED": "true",
                "RAGTRIM_ROUTING__KV_EVENTS__TOPIC": "kv",
                "RAGTRIM_ROUTING__KV_EVENTS__ENDPOINTS": json.dumps(endpoints)}  # fmt: skip
    port = free_port()
    proc = spawn_ragtrim(list(endpoints), port, env)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


async def _one(session: aiohttp.ClientSession, url: str, arrival: Arrival, body: bytes,
               t0: float) -> dict:  # fmt: skip
    await asyncio.sleep(max(0.0, t0 + arrival.at - time.monotonic()))
    sent = time.monotonic()
    rec = {"tenant": arrival.tenant, "sent": sent - t0, "sent_at": sent, "ttft": None,
           "usage": None}  # fmt: skip
    try:
        async with session.post(f"{url}/v1/chat/completions", data=body, headers=JSON) as r:
            rec["status"] = r.status
            async for raw in r.content:  # one SSE line at a time
                if not raw.startswith(b"data: ") or raw.startswith(b"data: [DONE]"):
                    continue
                if rec["ttft"] is None:
                    rec["ttft"] = time.monotonic() - sent
                chunk = json.loads(raw[6:])
                rec["usage"] = chunk.get("usage") or rec["usage"]
    except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
        rec["error"] = repr(exc)
    rec["done"] = time.monotonic() - t0
    return rec


async def replay(schedule: list[Arrival], proxy_url: str | None, replicas: list[str],
                 seed: int = 0) -> list[dict]:  # fmt: skip
    """Every arrival at its time, to the proxy or (random) to a seeded random replica.

    The client is aiohttp with the bodies encoded beforehand: with httpx, encoding and
    streaming took ~90 % of a core at 72 requests/s (16 replicas × 4.5/s; top,
    2026-12-04), and a client at its core's limit queues its own requests, which
    showed as seconds of TTFT in every mode ("host-bound" runs)."""
    rng = random.Random(seed)
    targets = [proxy_url or rng.choice(replicas) for _ in schedule]
    bodies = [json.dumps(a.body).encode() for a in schedule]
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        t0 = time.monotonic() + 0.5
        return await asyncio.gather(*(_one(session, u, a, b, t0) for u, a, b
                                      in zip(targets, schedule, bodies, strict=True)))  # fmt: skip


def replica_counts(replicas: list[str]) -> list[int]:
    """Requests each replica started (its /stub/stats)."""
    return [httpx.get(f"{u}/stub/stats", timeout=10).json()["started"] for u in replicas]


def engine_quantiles(replicas: list[str], records: list[dict], warmup: float) -> dict:
    """The replicas' own TTFT p50 / p90 over the arrivals the client measured (after
    `warmup`; the fleet's clock is this host's monotonic one), and the client's p50 less
    the engines': what ragtrim, HTTP and the client added in the middle of the run."""
    if not records:
        return {}
    since = records[0]["sent_at"] - records[0]["sent"] + warmup
    ttfts = [ttft * 1000 for u in replicas
             for at, ttft in httpx.get(f"{u}/stub/stats", timeout=10).json()["first_tokens"]
             if at >= since]  # fmt: skip
    client = [r["ttft"] * 1000 for r in records
              if r.get("ttft") is not None and r["sent"] >= warmup]  # fmt: skip
    if not ttfts or not client:
        return {}
    p50 = percentile(ttfts, 50)
    return {"engine_ttft_p50_ms": round(p50, 1),
            "engine_ttft_p90_ms": round(percentile(ttfts, 90), 1),
            "added_ttft_p50_ms": round(percentile(client, 50) - p50, 1)}  # fmt: skip


def engine_figures(replicas: list[str]) -> dict:
    """The replicas' own TTFT and queue time (first token at the engine, no HTTP or
    proxy), means over every request of the run, from their vLLM histograms' sums."""
    sums: dict[str, float] = {}
    for url in replicas:
        for line in httpx.get(f"{url}/metrics", timeout=10).text.splitlines():
            for name in ("time_to_first_token_seconds", "request_queue_time_seconds"):
                for part in ("_sum", "_count"):
                    if line.startswith(f"vllm:{name}{part}{{"):
                        key = name + part
                        sums[key] = sums.get(key, 0.0) + float(line.rsplit(" ", 1)[1])

    def mean_ms(name: str) -> float | None:
        count = sums.get(f"{name}_count", 0)
        return round(sums[f"{name}_sum"] / count * 1000, 1) if count else None

    return {"engine_ttft_mean_ms": mean_ms("time_to_first_token_seconds"),
            "engine_queue_mean_ms": mean_ms("request_queue_time_seconds")}  # fmt: skip


def ingest(url: str, documents: list[str], batch: int = 50) -> dict:
    """The RAG application's indexing step, before its traffic: its documents through
    ragtrim's POST /v1/compress, so their question-independent features are memoized
    and a request's compression costs the seen rate (proxy/compression/ingest.py). Unmeasured."""
    started, tokens = time.monotonic(), 0
    for i in range(0, len(documents), batch):
        r = httpx.post(f"{url}/v1/compress", json={"documents": documents[i : i + batch]},
                       timeout=300)  # fmt: skip
        r.raise_for_status()
        tokens += r.json()["tokens_before"]
    return {"documents": len(documents), "tokens": tokens,
            "wall_s": round(time.monotonic() - started, 1)}  # fmt: skip


def compress_figures(url: str) -> dict:
    """ragtrim's compression counters (decisions by action, stable choices, tokens)."""
    keep = ("ragtrim_compress_decisions_total", "ragtrim_stable_choices_total",
            "ragtrim_compress_tokens_total", "ragtrim_compress_failures_total",
            "ragtrim_compress_seconds_sum", "ragtrim_compress_seconds_count")  # fmt: skip
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return {k: float(v) for k, v in (ln.rsplit(" ", 1) for ln in text.splitlines()
                                     if ln.startswith(keep))}  # fmt: skip


def bare_subscriber(endpoints: dict) -> contextlib.AbstractContextManager[dict]:
    """The bare subscriber on every replica's PUB while the block runs (the lag floor)."""
    return probe_pubs([e["pub"] for e in endpoints.values()])

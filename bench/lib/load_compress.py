"""Compression capacity: RAG requests/s that ragtrim can compress, at ~1k and ~4k context
tokens, with one worker process and with `--workers 2`.

Every request's documents are new (a unique tag appended to each), so each one is a
cold compression: the memo and any per-document cache miss, the worst case. ragtrim
runs `policy=always` in front of an instant stub (tests/doubles/stub_vllm.py), so its
CPU is the only limit; 8 requests in flight (closed loop). One worker: ragtrim on one
core, the stub and this load generator on the other (bench/lib/load_backends.py); two
workers: the processes share both cores (the generator and the stub take some of
them: a lower bound). The k8s manifests size ragtrim's CPU request from this figure.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace

from bench.lib import load_backends as lb
from bench.lib.common import free_port, spawn
from bench.lib.load_run import closed_loop
from bench.lib.squad import build_cases
from bench.lib.squad_render import render_llamaindex

SIZES = {"1k": (900, 1100), "4k": (3600, 4400)}
REQUESTS = {"1k": 160, "4k": 50}  # per worker process


def cold_bodies(cases, n: int, model: str) -> list[dict]:
    out = []
    for i in range(n):
        case = cases[i % len(cases)]
        docs = tuple(f"{d} [ref {i}-{j}]" for j, d in enumerate(case.documents))
        gold = docs[case.gold_index]
        case = replace(case, documents=docs, gold=gold)
        out.append({"model": model, "messages": render_llamaindex(case), "max_tokens": 4,
                    "stream": True})  # fmt: skip
    return out


def compressed(row) -> bool:
    """Only a request ragtrim compressed counts (not one that failed open)."""
    return not row.error and row.decision.startswith("compress")


def measure(stub: str, workers: int, compressor: str, rate: float, cases: dict) -> dict:
    env = {"RAGTRIM_COMPRESSION__COMPRESSOR": compressor,
           "RAGTRIM_COMPRESSION__RATE": str(rate),
           "RAGTRIM_COMPRESSION__POLICY": "always",
           "RAGTRIM_COMPRESSION__TIMEOUT_S": "60",
           "RAGTRIM_COMPRESSION__TOKENIZER": str(lb.SIM_MODEL_DIR),
           "RAGTRIM_WORKERS": str(workers)}  # fmt: skip
    placement = lb.cores()
    core = placement[1] if placement and workers == 1 else None
    out = {}
    with lb.ragtrim(stub, core, env) as proxy:
        for size, pool in cases.items():
            bodies = cold_bodies(pool, REQUESTS[size] * workers, "stub-model")
            warm = 8 * workers  # every worker process's path and compressor warm
            asyncio.run(closed_loop(proxy, bodies[:warm], 8, 60))
            rps = asyncio.run(closed_loop(proxy, bodies[warm:], 8, 60, accept=compressed))
            out[size] = round(rps, 2)
    return out


def compress_capacity(compressor: str, rate: float, seed: int = 23) -> dict:
    placement = lb.cores()
    cases = {size: build_cases(12, seed=seed, min_tokens=lo, max_tokens=hi)
             for size, (lo, hi) in SIZES.items()}  # fmt: skip
    port = free_port()
    with lb.pinned(placement[0] if placement else None):
        stub = spawn([sys.executable, "-m", "tests.doubles.stub_vllm", "--port", str(port)],
                     f"http://127.0.0.1:{port}/health")  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        by_workers = {f"workers_{w}": measure(url, w, compressor, rate, cases) for w in (1, 2)}
    finally:
        from bench.lib.common import stop

        stop(stub)
    result = {f"{size}_workers_{w}": by_workers[f"workers_{w}"][size]
              for w in (1, 2) for size in SIZES}  # fmt: skip
    result["unit"] = "RAG requests/s, every document cold (never seen), policy always"
    print(f"compress_capacity ({compressor}): {result}", flush=True)
    return result


if __name__ == "__main__":
    compress_capacity(sys.argv[1] if len(sys.argv) > 1 else "fast_extractive", 0.33)

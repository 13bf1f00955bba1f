"""bench.ttft's paired cells, shared with bench.ttft_sim and its reuse regime: each case
sent on every path (direct, then ragtrim cold, then warm after POST /v1/compress), one
`cache_salt` per path, and a cell's ratio the median of per-case ragtrim/direct TTFTs.
The pairing and the paths are described in bench/ttft.py.
"""

from __future__ import annotations

import statistics
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from bench.lib.common import ROOT, free_port, percentile, spawn_ragtrim
from bench.lib.squad import answer_retained, build_cases
from bench.lib.squad_render import render_llamaindex
from bench.lib.stream import stream_chat
from proxy.prompt.segment import Segmenter

MODEL_DIR = ROOT / ".models" / "smollm2-135m-instruct"
SERVED = "smollm2"
BUCKETS = ((450, 650), (950, 1250), (1800, 2200), (2700, 3100))
PATHS = ("direct", "cold", "warm")
PROXIED = ("cold", "warm")


def request(case, path: str, model: str = SERVED) -> dict:
    return {
        "model": model,
        "messages": render_llamaindex(case),
        "max_tokens": 24,
        "temperature": 0,
        "seed": 0,
        "cache_salt": f"bench-ttft-{path}",  # one prefix-cache namespace per path
    }


def documents_of(case) -> tuple[list[str], str]:
    seg = Segmenter().chat(render_llamaindex(case))
    return [slot.text for slot in seg.documents], seg.question


def compress_via(client: httpx.Client, proxy: str, case, rate: float) -> list[str]:
    docs, question = documents_of(case)
    body = {"documents": docs, "question": question, "rate": rate}
    resp = client.post(f"{proxy}/v1/compress", json=body, timeout=300)
    resp.raise_for_status()
    return [d["text"] for d in resp.json()["documents"]]


def sent_retains_gold(client, proxy: str, timing, case, rate: float) -> tuple[bool, bool]:
    """(was it compressed, is the gold answer in the context ragtrim sent)."""
    compressed = timing.headers.get("x-ragtrim-decision", "").startswith("compress") and (
        "x-ragtrim-tokens-after" in timing.headers
    )
    # compressed: the memo holds exactly the texts sent (a hit, nothing recomputed)
    texts = compress_via(client, proxy, case, rate) if compressed else documents_of(case)[0]
    return compressed, answer_retained("\n\n".join(texts), case.answers)


def run_batch(client, urls: dict, batch: list, rate: float, model: str) -> dict:
    """The batch on each path in turn (direct, cold, warm), len(batch) at a time. Cold
    and warm share one ragtrim: the cold requests run before the batch is sent to
    /v1/compress (what the warm path measures), so they never find it memoized."""

    def one(path: str, case):
        return stream_chat(client, urls[path], request(case, path, model))

    out = {}
    with ThreadPoolExecutor(len(batch)) as pool:
        for path in PATHS:
            if path == "warm":  # precomputed at ingest (a memo hit where cold compressed)
                for case in batch:
                    compress_via(client, urls["warm"], case, rate)
            out[path] = list(pool.map(lambda c, p=path: one(p, c), batch))
    return out


def summarize_path(rows: list, direct: list | None) -> dict:
    ttfts = [t.ttft_ms for t, _ in rows]
    cell = {
        "ttft_p50_ms": round(percentile(ttfts, 50), 1),
        "ttft_p90_ms": round(percentile(ttfts, 90), 1),
        "n": len(rows),
        "answer_match": sum(answer_retained(t.text, c.answers) for t, c in rows),
    }
    if direct is None:
        return cell
    ratios = [t.ttft_ms / d.ttft_ms for (t, _), (d, _) in zip(rows, direct, strict=True)]
    before = sum(int(t.headers.get("x-ragtrim-tokens-before", 0)) for t, _ in rows)
    after = sum(int(t.headers.get("x-ragtrim-tokens-after", 0)) for t, _ in rows)
    spent = [float(t.headers["x-ragtrim-compress-ms"]) for t, _ in rows
             if "x-ragtrim-compress-ms" in t.headers]  # fmt: skip
    cell.update(
        compress_ms_p50=round(statistics.median(spent), 1) if spent else None,
        ratios=[round(r, 3) for r in ratios],
        ratio_p50=round(statistics.median(ratios), 3),
        tokens_saved=before - after,
        decisions=sorted({t.headers.get("x-ragtrim-decision", "").split("(")[0] for t, _ in rows}),
    )
    return cell


def run_cell(client, urls: dict, cases: list, concurrency: int, rate: float, model: str):
    rows = {p: [] for p in PATHS}
    for i in range(0, len(cases), concurrency):
        batch = cases[i : i + concurrency]
        for path, timings in run_batch(client, urls, batch, rate, model).items():
            rows[path] += list(zip(timings, batch, strict=True))
    cell = {"direct": summarize_path(rows["direct"], None)}
    for path in PROXIED:
        cell[path] = summarize_path(rows[path], rows["direct"])
        sent = [sent_retains_gold(client, urls[path], t, c, rate) for t, c in rows[path]]
        cell[path]["compressed"] = sum(c for c, _ in sent)
        cell[path]["gold_retention"] = round(sum(k for _, k in sent) / len(sent), 3)
    return cell


def prime(client, urls: dict, cases, model: str = SERVED) -> None:
    """Uncompressed requests on every path: vLLM caches the system prompt under each
    path's salt, the gate learns this backend's prefill cost."""
    for case in cases:
        for path in PATHS:
            headers = {"x-ragtrim-compress": "off"} if path in PROXIED else None
            stream_chat(client, urls[path], request(case, path, model), headers)


def run_all(client, urls: dict, cases_by_bucket: dict, per_cell: int, rate: float,
            model: str = SERVED) -> list:  # fmt: skip
    cells = []
    for concurrency in (1, 4):
        n = per_cell if concurrency == 1 else 4
        for bucket, pool in cases_by_bucket.items():
            cases = [pool.pop() for _ in range(n)]
            cell = run_cell(client, urls, cases, concurrency, rate, model)
            cell.update(context_tokens=list(bucket), concurrency=concurrency)
            cells.append(cell)
            print(
                f"  cell {bucket} c={concurrency}: direct {cell['direct']['ttft_p50_ms']} ms, "
                f"cold x{cell['cold']['ratio_p50']}, warm x{cell['warm']['ratio_p50']}"
            )
    return cells


def median_of(cells: list, path: str) -> float | None:
    values = [c[path]["ratio_p50"] for c in cells]
    return round(statistics.median(values), 3) if values else None


def headline(cells: list, rate: float) -> dict:
    answers = {
        p: sum(c[p]["answer_match"] for c in cells) / sum(c[p]["n"] for c in cells) for p in PATHS
    }
    by_c = {k: [c for c in cells if c["concurrency"] == k] for k in (1, 4)}
    sent = [c[p]["gold_retention"] for c in cells for p in PROXIED]
    return {
        "pairing": "per-case",
        "warm_ratio_p50": median_of(cells, "warm"),
        "cold_ratio_p50": median_of(cells, "cold"),
        "cold_ratio_p50_c1": median_of(by_c[1], "cold"),
        "cold_ratio_p50_c4": median_of(by_c[4], "cold"),
        "warm_ratio_p50_c4": median_of(by_c[4], "warm"),
        "worst_ratio": max(max(c["cold"]["ratio_p50"], c["warm"]["ratio_p50"]) for c in cells),
        "gold_retention": round(statistics.mean(sent), 3),
        "answer_match_direct": round(answers["direct"], 3),
        "answer_match_ragtrim": round((answers["cold"] + answers["warm"]) / 2, 3),
        "rate": rate,
        "definitions": {
            "pairing": "each case sent on every path; one cache_salt per path",
            "ratio_p50": "median over a cell's cases of ragtrim TTFT / direct TTFT (same case)",
            "warm_ratio_p50/cold_ratio_p50": "median over cells (_c1/_c4: one concurrency)",
            "worst_ratio": "max over cells of ratio_p50 (cold and warm)",
            "gold_retention": "share of requests whose sent context holds a gold answer "
            "(compressed texts when compressed, else the original), mean over cells/paths",
            "answer_match": "share of answers containing a normalised gold answer",
        },
        "cells": cells,
    }


def bucket_cases(buckets, per_cell: int, seed: int) -> dict:
    need = per_cell + 4
    return {
        b: build_cases(need, seed=seed + i, min_tokens=b[0], max_tokens=b[1])
        for i, b in enumerate(buckets)
    }


def measure(urls: dict, cases: dict, priming, args, model: str = SERVED) -> list:
    with httpx.Client(timeout=600) as client:
        prime(client, urls, priming, model)
        return run_all(client, urls, cases, args.per_cell, args.rate, model)


def cases_and_priming(buckets, args) -> tuple[dict, list]:
    """The cells' cases (`args.per_cell` per bucket) and the two priming cases, seeded
    from `args.seed`."""
    cases = bucket_cases(buckets, args.per_cell, args.seed)
    return cases, build_cases(2, seed=args.seed + 99, min_tokens=1500, max_tokens=2500)


def start_ragtrim(backend: str, args, tokenizer: Path,
                  extra_env: dict | None = None) -> tuple[subprocess.Popen, str]:  # fmt: skip
    """ragtrim in front of `backend` as the TTFT benchmarks run it: `args.compressor` at
    `args.rate`, a 60 s compression timeout, tokens counted with the served model's
    `tokenizer` (and any `extra_env` settings). Returns the process and its base URL."""
    env = {
        **(extra_env or {}),
        "RAGTRIM_COMPRESSION__COMPRESSOR": args.compressor,
        "RAGTRIM_COMPRESSION__RATE": str(args.rate),
        "RAGTRIM_COMPRESSION__TIMEOUT_S": "60",
        "RAGTRIM_COMPRESSION__TOKENIZER": str(tokenizer),
    }
    port = free_port()
    return spawn_ragtrim([backend], port, env), f"http://127.0.0.1:{port}"

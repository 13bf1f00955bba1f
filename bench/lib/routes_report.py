"""bench.routes_ttft's result: per route, the ratios of ragtrim to direct on the same
case, gold retention beside chat's, and the headline keys.

    summarize(rows)           -> one route's figures
    headline(cases, rate)     -> the result file's top-level keys (and `routes`, `cases`)
"""

from __future__ import annotations

import statistics

from bench.lib.common import percentile
from bench.lib.route_bodies import ROUTES


def summarize(rows: list[dict]) -> dict:
    """One route's rows: TTFT and prompt_tokens ratios (median of per-case ragtrim/direct),
    gold retention, what was decided."""
    prompt = [r["ragtrim_prompt_tokens"] / r["direct_prompt_tokens"] for r in rows]
    spent = [r["compress_ms"] for r in rows if r["compress_ms"] is not None]
    return {
        "n": len(rows),
        "ttft_ratio_p50": round(statistics.median(r["ttft_ratio"] for r in rows), 3),
        "prompt_tokens_ratio_p50": round(statistics.median(prompt), 3),
        "direct_ttft_p50_ms": round(percentile([r["direct_ttft_ms"] for r in rows], 50), 1),
        "ragtrim_ttft_p50_ms": round(percentile([r["ragtrim_ttft_ms"] for r in rows], 50), 1),
        "direct_prompt_tokens": sum(r["direct_prompt_tokens"] for r in rows),
        "ragtrim_prompt_tokens": sum(r["ragtrim_prompt_tokens"] for r in rows),
        "gold_retention": round(sum(r["gold_retained"] for r in rows) / len(rows), 3),
        "compressed": sum(r["compressed"] for r in rows),
        "readback_hits": sum(r["readback_hit"] for r in rows),
        "decisions": sorted({r["decision"] for r in rows}),
        "compress_ms_p50": round(statistics.median(spent), 1) if spent else None,
        "answer_match_direct": sum(r["answer_direct"] for r in rows),
        "answer_match_ragtrim": sum(r["answer_ragtrim"] for r in rows),
    }


def same_prompt(cases: list[dict]) -> bool:
    """Whether vLLM counted the same prompt_tokens for a case on every route, direct
    (the three bodies render the same prompt)."""
    return all(len({c[r]["direct_prompt_tokens"] for r in ROUTES}) == 1 for c in cases)


def by_bucket(cases: list[dict]) -> dict:
    """route -> context-token bucket ("450-650") -> median per-case TTFT ratio."""
    buckets: dict[str, list[dict]] = {}
    for case in cases:
        buckets.setdefault("-".join(map(str, case["context_tokens"])), []).append(case)
    return {
        r: {
            b: round(statistics.median(c[r]["ttft_ratio"] for c in cs), 3)
            for b, cs in buckets.items()
        }  # fmt: skip
        for r in ROUTES
    }


def headline(cases: list[dict], rate: float) -> dict:
    routes = {r: summarize([c[r] for c in cases]) for r in ROUTES}
    chat = routes["chat"]
    others = [r for r in ROUTES if r != "chat"]
    out: dict = {}
    for r in ROUTES:
        out[f"{r}_vs_direct_ttft_p50"] = routes[r]["ttft_ratio_p50"]
        out[f"{r}_vs_direct_prompt_tokens"] = routes[r]["prompt_tokens_ratio_p50"]
        out[f"{r}_retention"] = routes[r]["gold_retention"]
    gaps = [abs(routes[r]["gold_retention"] - chat["gold_retention"]) for r in others]
    ttft_gaps = [abs(routes[r]["ttft_ratio_p50"] - chat["ttft_ratio_p50"]) for r in others]
    return {
        **out,
        "retention_gap_max": round(max(gaps), 3),
        "ttft_ratio_gap_max": round(max(ttft_gaps), 3),
        "worst_route_vs_direct_ttft_p50": max(routes[r]["ttft_ratio_p50"] for r in others),
        "same_direct_prompt_tokens": same_prompt(cases),
        "rate": rate,
        "routes": routes,
        "ttft_ratio_by_bucket": by_bucket(cases),
        "definitions": DEFINITIONS,
        "cases": cases,
    }


DEFINITIONS = {
    "pairing": "each case sent on every route, direct to vLLM and through ragtrim; "
    "one tenant (API key) per route on ragtrim, one cache_salt per route direct",
    "<route>_vs_direct_ttft_p50": "median over cases of ragtrim TTFT / direct TTFT "
    "(same case, same route); TTFT = first event carrying output text",
    "<route>_vs_direct_prompt_tokens": "median over cases of ragtrim / direct "
    "prompt_tokens (vLLM's usage, read from the route's own stream events)",
    "<route>_retention": "share of requests whose sent context holds a gold answer "
    "(compressed texts read back from the route tenant's memo when compressed, else "
    "the original), as bench.ttft's gold_retention",
    "retention_gap_max": "max over responses and messages of |retention - chat_retention|",
    "ttft_ratio_gap_max": "max over responses and messages of |ttft ratio - chat's|",
    "same_direct_prompt_tokens": "every case's direct prompt_tokens equal on all routes",
}

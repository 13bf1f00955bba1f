"""bench.fleet's figures: a run's summary, each regime's ratios, the issue's top-level keys.

Per run (a mode on a fresh fleet): TTFT p50/p90/p99 and the prefix-cache hit ratio
(cached / prompt tokens, from usage) of the arrivals after the warm-up; output tokens/s
(completion tokens of every answer over the time from the first arrival to the last
answer); requests each replica started (max/mean); errors (a status other than 200 or
no first token, warm-up included).
"""

from __future__ import annotations

import statistics

from bench.lib.common import percentile

# regime: (mode, other mode, figure, key): key = mode's figure / other's at the regime's
# ratio size (the "Must show"; the `engine_` ones are the same at the replicas, their
# own TTFT: what the routing did without ragtrim's CPU on the cores the fleet shares)
RATIOS = {
    "shared_context": (("kv", "random", "ttft_p90_ms", "kv_vs_random_ttft_p90"),
                       ("kv", "rendezvous", "ttft_p90_ms", "kv_vs_rendezvous_ttft_p90"),
                       ("kv", "roundrobin", "output_tps", "kv_vs_roundrobin_output_tps"),
                       ("kv", "rendezvous", "engine_ttft_p90_ms",
                        "kv_vs_rendezvous_engine_ttft_p90")),
    "one_application": (("kv", "rendezvous", "ttft_p50_ms", "kv_vs_rendezvous_ttft_p50"),
                        ("kv", "roundrobin", "ttft_p50_ms", "kv_vs_roundrobin_ttft_p50"),
                        ("kv", "roundrobin", "engine_ttft_p50_ms",
                         "kv_vs_roundrobin_engine_ttft_p50")),
    "one_application_light": (("kv", "rendezvous", "ttft_p50_ms",
                               "light_kv_vs_rendezvous_ttft_p50"),),
    "rag": (("kv_compress", "kv", "ttft_p50_ms", "kv_compress_vs_kv_ttft_p50"),),
}  # fmt: skip
# regime: (mode, figure, key): one mode's own figure, stated as is
FIGURES = {
    "one_application": (("kv", "max_mean_load", "kv_max_mean_load"),),
    "one_application_light": (("kv", "max_mean_load", "light_kv_max_mean_load"),),
    "rag": (("kv_compress", "errors", "kv_compress_errors"),),
}
# the size whose ratios are the top-level keys (the issue's: 16 replicas for llm-d's)
RATIO_SIZE = {"shared_context": 16, "one_application": 8, "one_application_light": 8, "rag": 8}


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
        "prompt_tokens_mean": round(prompt / len(usage), 1) if usage else None,
        "max_mean_load": round(max(counts) / statistics.mean(counts), 3) if any(counts) else None,
        "per_replica": counts,
        "error_samples": sorted({str(r.get("error") or r.get("status")) for r in records
                                 if r.get("status") != 200 or r["ttft"] is None})[:3],
    }  # fmt: skip


def host_bound(run: dict) -> bool:
    """The client waited far longer than the replicas took to answer (TTFT p50 over
    twice the replicas' own mean TTFT plus 50 ms): the 2 cores, not the routing, set
    this run's figures (16 simulated replicas, ragtrim and the client share them)."""
    engine = run.get("engine_ttft_mean_ms")
    return engine is not None and run["ttft_p50_ms"] > 2 * engine + 50


def ratios(regime: str, by_mode: dict) -> dict:
    """The regime's keys that this size's modes allow; `host_bound_keys` names those
    taken from a host-bound run."""
    out: dict = {}
    flagged = []
    for mode, other, figure, key in RATIOS.get(regime, ()):
        if by_mode.get(mode, {}).get(figure) is not None and by_mode.get(other, {}).get(figure):
            out[key] = round(by_mode[mode][figure] / by_mode[other][figure], 4)
            if by_mode[mode].get("host_bound") or by_mode[other].get("host_bound"):
                flagged.append(key)
    if flagged:
        out["host_bound_keys"] = flagged
    for mode, figure, key in FIGURES.get(regime, ()):
        if mode in by_mode:
            out[key] = by_mode[mode][figure]
    return out


def keys_of(regime: str) -> list[str]:
    return [r[3] for r in RATIOS.get(regime, ())] + [f[2] for f in FIGURES.get(regime, ())]


def top_level(regimes: dict) -> dict:
    """Each regime's keys at its ratio size (else its largest), and the worst event lag
    of any kv run beside the bare subscriber's in the same runs."""
    out: dict = {"ratios_at_replicas": {}}
    lags, bare = [], []
    for name, regime in regimes.items():
        sizes = regime["sizes"]
        want = str(RATIO_SIZE.get(name, 0))
        size = want if want in sizes else max(sizes, key=int)
        out["ratios_at_replicas"][name] = int(size)
        out |= {k: sizes[size][k] for k in keys_of(name) if k in sizes[size]}
        out.setdefault("host_bound_keys", []).extend(sizes[size].get("host_bound_keys", []))
        for s in sizes.values():
            for mode, run in s["modes"].items():
                if mode.startswith("kv") and run.get("event_lag_p99_ms") is not None:
                    lags.append(run["event_lag_p99_ms"])
                    bare.append(run.get("event_lag_p99_ms_bare_subscriber"))
    out["kv_event_lag_p99_ms"] = max(lags, default=None)
    out["kv_event_lag_p99_ms_bare_subscriber"] = max((b for b in bare if b is not None),
                                                     default=None)  # fmt: skip
    return out

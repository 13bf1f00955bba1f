"""bench.fleet: routing modes on a simulated GPU fleet, one arrival schedule for all (issue 30).

    .venv/bin/python -m bench.fleet [--regimes shared_context,one_application,rag]
        [--sizes 8,16] [--modes random,kv] [--duration S] [--keep]

Replicas: tests/doubles/fleet.py (vLLM v1's step loop at a preset model's speed, its KV
cache sized from GPU memory, KV events as vLLM 0.32 publishes them), a fresh fleet per
run. Modes (bench/lib/fleet_run.py): random (no proxy, a seeded random replica),
roundrobin, rendezvous (ragtrim's default affinity + load, bounded), kv (precise:
kv_cache + load, the cost picker, subscribed to every replica's events), kv_compress
(kv with cache-aware compression: issue 24's gate at the replicas' learned prefill
speed, issue 29's stable forms; the RAG application's documents go through POST
/v1/compress first, its indexing step, so their features are memoized). Regimes
(`REGIMES`), each with its own preset, sizes, modes, rate and cache:

- shared_context, llm-d's (bench/lib/fleet_workload.py): tenants with a 6k-token shared
  context and short new questions on Qwen3-32B TP-2 replicas. llm-d's 150 tenants ×
  6k tokens (900k) against a replica's 309k-token cache is 2.9× a replica's cache; the
  default keeps that ratio with 40 tenants (240k tokens) against 5,170 blocks (82.7k
  tokens) a replica, at 4.5 arrivals/s a replica (`--tenants 150 --cache-blocks 0`:
  llm-d's own numbers, longer runs needed for the steady state).
- one_application, issue 20's (fleet_workload.one_application): one system prompt,
  conversations of 5 turns 2.5 s apart, ~400 tokens a turn (a 965-token system prompt,
  2.5k tokens at the last turn), on the same replicas, at 6 arrivals/s a replica. About
  100 conversations are alive at once, owning ~6.8k blocks besides the system prompt's
  60; a replica's cache (2,000 blocks, issue 20's 0.6 share at half this rate) holds
  30 % of them, so the few replicas one prefix's hash picks evict histories and queue,
  8 replicas that split them do not. one_application_light is the same at 3 arrivals/s
  (the easy regime beside it: the replicas mostly idle, engine queue ~4 ms; kv and
  rendezvous only, to stay within the 15 minutes).
- rag (bench/lib/fleet_rag.py): 12 of 1,000 SQuAD paragraphs a request (~2.2k tokens),
  Zipf-popular, a new question each time, on Llama-3.1-8B replicas (one H100 each: 0.03
  ms a prefill token, the gate's GPU speed) with the preset's whole cache, at 1 arrival/s
  a replica: the bound is ragtrim's own CPU, not the replicas' (at 3/s on the 2 shared
  cores ragtrim's TTFT p50 was 2.5 s while the replicas' own mean was 36 ms).

Default modes per regime keep the whole run within 15 minutes on 2 cores: random and
round-robin (the same even spread) and rendezvous run in the shared-context regime at
both sizes, round-robin and rendezvous in one_application; `--regimes rag --modes
random,roundrobin,rendezvous,kv,kv_compress` runs every mode in a regime.

Figures per regime, size and mode (bench/lib/fleet_report.py): TTFT p50/p90/p99, output
tokens/s, hit ratio, requests per replica (max/mean), errors, the replicas' own mean
TTFT and queue time, their own TTFT p50/p90 over the measured arrivals and the client's
p50 less theirs (`added_ttft_p50_ms`: ragtrim, HTTP, the client); for kv modes,
ragtrim's event lag beside a bare subscriber's.
Top-level keys: each regime's ratios (fleet_report.RATIOS) at its size, the event lag,
the index's scale (bench/lib/fleet_scale.py). Writes bench/results/fleet.json; the
last line ends in kv_vs_random_ttft_p90 at 16 replicas.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from dataclasses import dataclass, replace

from bench.lib import fleet_scale
from bench.lib.common import RESULTS, write_result
from bench.lib.fleet_report import host_bound, ratios, summarize, top_level
from bench.lib.fleet_run import (
    TOKENIZER,
    bare_subscriber,
    compress_figures,
    engine_figures,
    engine_quantiles,
    fleet,
    ingest,
    proxy,
    replay,
    replica_counts,
)
from bench.lib.fleet_workload import one_application, shared_context
from bench.lib.prefix_kv import kv_proxy_figures
from tests.doubles.kv_replica import FLEET_PRESETS


@dataclass(frozen=True)
class Regime:
    preset: str
    sizes: str
    modes: str
    rate_per_replica: float  # request arrivals a second per replica
    duration: float  # seconds of arrivals (conversations' starts for one_application)
    cache_blocks: int  # a replica's; 0: the preset's
    warmup: float  # seconds of arrivals left out of TTFT and the hit ratio


REGIMES = {
    "shared_context": Regime("qwen3-32b-2xh100", "8,16", "random,roundrobin,rendezvous,kv",
                             4.5, 30.0, 5170, 10.0),
    "one_application": Regime("qwen3-32b-2xh100", "8", "roundrobin,rendezvous,kv",
                              6.0, 20.0, 2000, 5.0),
    "one_application_light": Regime("qwen3-32b-2xh100", "8", "rendezvous,kv",
                                    3.0, 20.0, 2000, 5.0),
    "rag": Regime("8b-h100", "8", "kv,kv_compress", 1.0, 20.0, 0, 5.0),
}  # fmt: skip
SCALE_PRESET = "qwen3-32b-2xh100"


def schedule_for(name: str, regime: Regime, size: int, args) -> tuple[list, list[str]]:
    """The regime's arrivals at `size` replicas, and the documents a RAG application
    indexes (kv_compress ingests them before its traffic; none for the other regimes)."""
    rate = regime.rate_per_replica * size
    if name == "shared_context":
        return shared_context(args.tenants, args.context_tokens, rate, regime.duration,
                              seed=args.seed), []  # fmt: skip
    if name.startswith("one_application"):
        return one_application(rate / args.turns, regime.duration, turns=args.turns,
                               seed=args.seed), []  # fmt: skip
    from bench.lib.fleet_rag import rag, squad_corpus

    corpus = squad_corpus(args.documents, args.seed)
    return rag(corpus, rate, regime.duration, k=args.k, seed=args.seed), [p.text for p in corpus]


def run_mode(mode: str, size: int, work: tuple, regime: Regime, seed: int) -> dict:
    schedule, documents = work
    extra = {}
    with fleet(size, regime.preset, TOKENIZER, regime.cache_blocks or None) as endpoints:
        replicas = list(endpoints)
        with proxy(mode, endpoints) as url, bare_subscriber(endpoints) as bare:
            if mode == "kv_compress" and documents:
                extra["ingest"] = ingest(url, documents)
            records = asyncio.run(replay(schedule, url, replicas, seed))
            kv = kv_proxy_figures(url) if mode.startswith("kv") else None
            if mode == "kv_compress":
                extra["compression"] = compress_figures(url)
        out = summarize(records, replica_counts(replicas), regime.warmup)
        out |= engine_figures(replicas) | engine_quantiles(replicas, records, regime.warmup)
        out |= extra
        out["host_bound"] = host_bound(out)
    if kv is not None:
        out["event_lag_p50_ms"] = kv["event_lag_p50_ms"]
        out["event_lag_p99_ms"] = kv["event_lag_p99_ms"]
        out["event_lag_p99_ms_bare_subscriber"] = bare.get("lag_p99_ms")
        out["kv_metrics"] = kv["metrics"]
    return out


def run_regime(name: str, regime: Regime, old: dict, args) -> dict:
    """Every size and mode of one regime (merged into `old`'s with --keep)."""
    out = {"preset": regime.preset, "regime": asdict_short(regime), "sizes": old.get("sizes", {})}
    for size in [int(s) for s in regime.sizes.split(",")]:
        work = schedule_for(name, regime, size, args)
        by_mode = out["sizes"].get(str(size), {}).get("modes", {})
        for mode in regime.modes.split(","):
            started, load = time.monotonic(), os.getloadavg()[0]
            by_mode[mode] = run_mode(mode, size, work, regime, args.seed)
            by_mode[mode]["wall_s"] = round(time.monotonic() - started, 1)
            # the machine's 1-minute load before and after: the replicas' clocks and
            # ragtrim share its cores, so a busy machine shows in every TTFT
            by_mode[mode]["load_avg_1m"] = [round(load, 2), round(os.getloadavg()[0], 2)]
            m = by_mode[mode]
            print(f"{name} {size} {mode}: p50/p90 {m['ttft_p50_ms']}/{m['ttft_p90_ms']} ms, "
                  f"engine p50/p90 {m.get('engine_ttft_p50_ms')}/{m.get('engine_ttft_p90_ms')} ms, "
                  f"{m['output_tps']} tok/s, hit {m['hit_ratio']}, errors {m['errors']}, "
                  f"{m['wall_s']} s", flush=True)  # fmt: skip
        out["sizes"][str(size)] = {"modes": by_mode, "arrivals": len(work[0]),
                                   **ratios(name, by_mode)}  # fmt: skip
    return out


def asdict_short(regime: Regime) -> dict:
    return {k: getattr(regime, k) for k in regime.__dataclass_fields__}


def regimes_of(args) -> dict[str, Regime]:
    """The regimes asked for, with the command line's overrides."""
    out = {}
    for name in args.regimes.split(","):
        regime = REGIMES[name]
        given = {k: getattr(args, k) for k in ("sizes", "modes", "duration", "rate_per_replica",
                                               "cache_blocks", "warmup")}  # fmt: skip
        out[name] = replace(regime, **{k: v for k, v in given.items() if v is not None})
    return out


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--regimes", default=",".join(REGIMES))
    p.add_argument("--sizes", help="replicas, comma-separated (default: each regime's)")
    p.add_argument("--modes", help="comma-separated (default: each regime's)")
    p.add_argument("--rate-per-replica", type=float, help="arrivals/s a replica")
    p.add_argument("--duration", type=float, help="seconds of arrivals per run")
    p.add_argument("--cache-blocks", type=int, help="a replica's; 0: the preset's")
    p.add_argument("--warmup", type=float, help="seconds of arrivals left out of TTFT")
    p.add_argument("--tenants", type=int, default=40, help="shared_context")
    p.add_argument("--context-tokens", type=int, default=6000, help="shared_context")
    p.add_argument("--turns", type=int, default=5, help="one_application")
    p.add_argument("--documents", type=int, default=1000, help="rag: corpus size")
    p.add_argument("--k", type=int, default=12, help="rag: documents a request")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--keep", action="store_true",
                   help="keep fleet.json's other regimes, sizes and modes")  # fmt: skip
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    started = time.monotonic()
    old = RESULTS / "fleet.json"
    kept = json.loads(old.read_text()).get("regimes", {}) if args.keep and old.exists() else {}
    result: dict = {"regimes": dict(kept)}
    for name, regime in regimes_of(args).items():
        result["regimes"][name] = run_regime(name, regime, kept.get(name, {}), args)
    scale = fleet_scale.measure(16, FLEET_PRESETS[SCALE_PRESET].capacity_blocks)
    result |= top_level(result["regimes"])
    result |= {"scale": scale, "scale_preset": SCALE_PRESET, "seed": args.seed,
               "shared_context_workload": {"tenants": args.tenants,
                                           "context_tokens": args.context_tokens},
               "one_application_turns": args.turns,
               "rag_workload": {"documents": args.documents, "k": args.k},
               "wall_s": round(time.monotonic() - started, 1),
               **{k: scale[k] for k in ("kv_index_bytes_per_block", "kv_lookup_us_per_request_p50",
                                        "kv_consumer_cpu_ms_per_1k_events")}}  # fmt: skip
    write_result("fleet", result)
    if result.get("host_bound_keys"):
        print("host-bound runs (the cores, not the routing, set them):",
              ", ".join(result["host_bound_keys"]), flush=True)  # fmt: skip
    print(" ".join(f"{k} {result[k]}" for k in (
        "kv_vs_rendezvous_ttft_p90", "kv_vs_roundrobin_output_tps", "kv_vs_rendezvous_ttft_p50",
        "kv_vs_roundrobin_ttft_p50", "kv_max_mean_load", "light_kv_vs_rendezvous_ttft_p50",
        "light_kv_max_mean_load", "kv_compress_vs_kv_ttft_p50",
        "kv_event_lag_p99_ms", "kv_vs_rendezvous_engine_ttft_p90",
        "kv_vs_roundrobin_engine_ttft_p50", "kv_vs_random_ttft_p90") if k in result))  # fmt: skip
    return result


if __name__ == "__main__":
    main()

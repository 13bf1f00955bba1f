"""Compression cost per 1k input tokens, cold (all memo misses) and warm (all hits),
through the proxy's CompressionEngine; LLMLingua-2 ours vs llmlingua's compress_prompt.

    .venv/bin/python -m bench.compress_cost [--tokens 6000] [--reps 3] [--threads 1] [--out NAME]

Documents: whole seeded SQuAD RAG cases (bench.lib.squad) up to `--tokens` SmolLM2 tokens;
LongLLMLingua (slow) gets one smaller case. Models load before timing (load_s: a first
call on a warm-up text). Costs are CPU time of the whole process (time.process_time:
event loop, memo, worker thread, token counting, everything) with torch on `--threads`
(default 1, the proxy's default), on inputs no compressor instance has seen; wall time
is beside it (`*_wall_ms_per_1k`). The engine gets the target tokenizer as the proxy's
does, so question-aware compressors get one pooled budget. `request_path_compressor`
(fast_extractive) must stay ≤ 10 ms per 1k cold and ≤ 0.1 warm (issue 9) and cost
≤ 1.0 seen (issue 18: `seen_ms_per_1k`, every document's features memoized by the cold
pass, each seen pass a question never asked; `feature_bytes_per_1k` what they take); its
single-signal variants (_bm25, _static) are the candidates it was chosen against.
The LLMLingua-2 models are random-weight stand-ins (no real weights offline): costs are
real for the architecture, decisions rest on random scores. Its headline speedup is at
the precision the compressor uses by default ("auto": measured at load), the others
beside it (compress_cost_lingua.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version

from bench.lib.common import ROOT, write_result
from bench.lib.compress_cost_lingua import MIN_AGREE, load_s_first_call, versus_reference
from bench.lib.squad import RagCase, build_cases, load_squad

MODELS = ROOT / ".models"
TARGET = MODELS / "smollm2-135m-instruct"
LINGUA2 = MODELS / "lingua2-standin-bert-base-multilingual-cased"
LINGUA2_MINILM = MODELS / "lingua2-standin-minilm-bert-base-multilingual-cased"
TIKTOKEN_DIR = ROOT / ".cache" / "tiktoken"
REQUEST_PATH = "fast_extractive"
TARGETS = (("warm_ms_per_1k_max", 5.0), ("extractive_cold_ms_per_1k_max", 150.0),
           ("request_path_cold_ms_per_1k_max", 10.0), ("request_path_warm_ms_per_1k_max", 0.1),
           ("request_path_seen_ms_per_1k_max", 1.0),
           ("llmlingua2_speedup_min", 3.0), ("llmlingua2_agreement_min", MIN_AGREE))  # fmt: skip
# entry -> (registry name, options); the canonical names run the defaults, a "variant"
# is bench-only (bench/lib/variants)
ENTRIES = (
    ("identity", "identity", ()), ("extractive", "extractive", ()),
    ("extractive_bf16", "extractive", (("precision", "bf16"),)),
    ("extractive_int8", "extractive", (("precision", "int8"),)),
    ("fast_extractive", "fast_extractive", ()),
    ("fast_extractive_bm25", "fast_extractive", (("variant", "bm25"),)),
    ("fast_extractive_static", "fast_extractive", (("variant", "static"),)),
    ("llmlingua2", "llmlingua2", (("model_path", str(LINGUA2)),)),
    ("llmlingua2_fp32", "llmlingua2", (("model_path", str(LINGUA2)), ("precision", "fp32"))),
    ("llmlingua2_bf16", "llmlingua2", (("model_path", str(LINGUA2)), ("precision", "bf16"))),
    ("llmlingua2_int8", "llmlingua2", (("model_path", str(LINGUA2)), ("precision", "int8"))),
    ("llmlingua2_minilm", "llmlingua2", (("model_path", str(LINGUA2_MINILM)),)),
    ("longllmlingua", "longllmlingua", (("model_path", str(TARGET)),)),
)  # fmt: skip
# --llml-tokens: LongLLMLingua's smaller case; --reps: reference vs ours, interleaved
OPTIONS = (("--tokens", 6000), ("--llml-tokens", 400), ("--rate", 0.33), ("--reps", 3),
           ("--warm-reps", 5), ("--threads", 1), ("--seed", 7))  # fmt: skip
PRECISIONS = (("fp32", "llmlingua2_fp32"), ("bf16", "llmlingua2_bf16"),
              ("int8", "llmlingua2_int8"))  # fmt: skip


def _take(cases: list[RagCase], tokens: int, count) -> list[RagCase]:
    """Whole cases, in order, until `tokens`; a case sharing a document is skipped."""
    picked, seen, total = [], set(), 0
    for case in cases:
        if total < tokens and seen.isdisjoint(case.documents):
            picked.append(case)
            seen.update(case.documents)
            total += sum(count(d) for d in case.documents)
    return picked


def _document_sets(args, count) -> tuple[list[RagCase], list[RagCase]]:
    articles = load_squad("train")
    many = build_cases(args.tokens // 1500 + 2, seed=args.seed, count_tokens=count,
                       articles=articles)  # fmt: skip
    low, high = args.llml_tokens, args.llml_tokens * 3 // 2
    small = build_cases(1, seed=args.seed, min_tokens=low, max_tokens=high,
                        count_tokens=count, articles=articles)  # fmt: skip
    return _take(many, args.tokens, count), small


def _describe(cases: list[RagCase], count) -> dict:
    docs = [d for c in cases for d in c.documents]
    return {"case_ids": [c.case_id for c in cases], "n_documents": len(docs),
            "n_tokens": sum(count(d) for d in docs)}  # fmt: skip


def _asked(cases: list[RagCase], i: int, turn: int) -> str:
    """Turn 0: the case's own question; later turns: another case's, numbered, so every
    seen pass asks each document set a question it has never been asked."""
    if not turn:
        return cases[i].question
    return f"{cases[(i + turn) % len(cases)].question} ({turn})"


async def _pass(engine, cases: list[RagCase], rate: float, turn: int = 0) -> dict:
    ms = cpu = before = after = hits = misses = seen = 0
    for i, case in enumerate(cases):
        start = time.process_time()
        out = await engine.compress(list(case.documents), _asked(cases, i, turn), rate)
        cpu += (time.process_time() - start) * 1000
        ms, hits, misses = ms + out.ms, hits + out.hits, misses + out.misses
        before, after = before + out.tokens_before, after + out.tokens_after
        seen += out.seen
    return {"ms": ms, "cpu_ms": cpu, "before": before, "after": after, "hits": hits,
            "misses": misses, "seen": seen}  # fmt: skip


async def _cold_warm(compressor, cases: list[RagCase], rate: float, warm_reps: int, count):
    """Cold (nothing seen), warm (same question: the output memo) and, for compressors
    split in a document and a request part, seen (features memoized, new question)."""
    from cache.features import FeatureCache
    from cache.memo import ChunkMemo
    from cache.store import MemoryStore
    from proxy.compression.engine import CompressionEngine

    written: list[int] = []
    features = FeatureCache(MemoryStore(), on_write=written.append)
    engine = CompressionEngine(compressor, ChunkMemo(MemoryStore()), timeout=3600, workers=1,
                               count=count, features=features)  # fmt: skip
    try:
        cold = await _pass(engine, cases, rate)
        warm = [await _pass(engine, cases, rate) for _ in range(warm_reps)]
        seen = []
        if engine.features is not None:
            seen = [await _pass(engine, cases, rate, t + 1) for t in range(warm_reps)]
    finally:
        engine.close()
    return cold, warm, seen, sum(written)


def _entry(compressor, cases: list[RagCase], args, count) -> dict:
    load_s = load_s_first_call(compressor, args.rate)
    cold, warm, seen, feature_bytes = asyncio.run(
        _cold_warm(compressor, cases, args.rate, args.warm_reps, count)
    )
    per_1k = 1000 / max(1, cold["before"])

    def median(key: str, passes=warm) -> float:
        return round(statistics.median(w[key] for w in passes) * per_1k, 4)

    seen_keys = {}
    if seen:
        seen_keys = {"seen_ms_per_1k": median("cpu_ms", seen),
                     "seen_wall_ms_per_1k": median("ms", seen),
                     "seen_documents": min(p["seen"] for p in seen),
                     "seen_misses": min(p["misses"] for p in seen),
                     "feature_bytes_per_1k": round(feature_bytes * per_1k)}  # fmt: skip

    return {
        "cold_ms_per_1k": round(cold["cpu_ms"] * per_1k, 3),
        "warm_ms_per_1k": median("cpu_ms"),
        "cold_wall_ms_per_1k": round(cold["ms"] * per_1k, 3), "warm_wall_ms_per_1k": median("ms"),
        "n_tokens": cold["before"], "tokens_after": cold["after"],
        "n_documents": cold["misses"] + cold["hits"], "n_requests": len(cases),
        "load_s": round(load_s, 3), "cold_ms": round(cold["cpu_ms"], 1),
        "cold_misses": cold["misses"], "warm_hits": min(w["hits"] for w in warm),
        "warm_ms_median_of": len(warm), "fingerprint": compressor.fingerprint(), **seen_keys,
        **({"chosen_precision": compressor.chosen_precision}
           if hasattr(compressor, "chosen_precision") else {}),
    }  # fmt: skip


def _measure_all(cases, small, args, count) -> tuple[dict, dict]:
    from bench.lib.variants import build_compressor

    results, built = {}, {}
    for name, registry_name, options in ENTRIES:
        compressor = build_compressor(registry_name, {**dict(options), "count_tokens": count})
        mine = small if name == "longllmlingua" else cases
        results[name] = _entry(compressor, mine, args, count)
        built[name] = compressor
        print(f"  {name}: {json.dumps(results[name])}", file=sys.stderr, flush=True)
    return results, built


def _settings(args) -> dict:
    import torch

    with ThreadPoolExecutor(1) as pool:  # the engine's compressions run in a worker thread
        worker_threads = pool.submit(torch.get_num_threads).result()
    stand_in = json.loads((LINGUA2 / "ragtrim_build.json").read_text())
    return {
        "torch_threads": args.threads, "torch_threads_set_by": "torch.set_num_threads",
        "cost_clock": "time.process_time (CPU of the whole process)",
        "machine_note": "2 cores shared with other work unless the run says otherwise",
        "torch_threads_in_worker_thread": worker_threads, "rate": args.rate,
        "seed": args.seed, "token_counter": f"hf:{TARGET.name}", "cpu_count": os.cpu_count(),
        "torch": torch.__version__, "transformers": version("transformers"),
        "llmlingua": version("llmlingua"), "device": "cpu",
        "llmlingua2_model": LINGUA2.name, "llmlingua2_build": stand_in,
        "llmlingua2_note": "random-weight stand-in, no real weights offline: costs of the "
        "llmlingua-2-bert-base architecture (not xlm-roberta-large); decisions are random",
    }  # fmt: skip


def _targets(results: dict, versus: dict) -> dict:
    limits = dict(TARGETS)
    warm = max(r["warm_ms_per_1k"] for r in results.values())
    cold = results["extractive"]["cold_ms_per_1k"]
    fast = results[REQUEST_PATH]
    return {**limits, "worst_warm_ms_per_1k": warm,
            "warm_met": warm <= limits["warm_ms_per_1k_max"],
            "extractive_cold_met": cold <= limits["extractive_cold_ms_per_1k_max"],
            "request_path_cold_met":
                fast["cold_ms_per_1k"] <= limits["request_path_cold_ms_per_1k_max"],
            "request_path_warm_met":
                fast["warm_ms_per_1k"] <= limits["request_path_warm_ms_per_1k_max"],
            "request_path_seen_met":
                fast.get("seen_ms_per_1k", 1e9) <= limits["request_path_seen_ms_per_1k_max"],
            "llmlingua2_speedup_met": versus["speedup"] >= limits["llmlingua2_speedup_min"],
            "llmlingua2_agreement_met": versus["agreement"] >= MIN_AGREE}  # fmt: skip


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, default in OPTIONS:
        parser.add_argument(flag, type=type(default), default=default)
    parser.add_argument("--out", default="compress_cost", help="bench/results/OUT.json")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = _parse(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_DIR))
    import torch

    from compressors import HFTokenCounter, ensure_tiktoken_cache

    ensure_tiktoken_cache(os.environ["TIKTOKEN_CACHE_DIR"])
    torch.set_num_threads(args.threads)
    started, load_start = time.perf_counter(), os.getloadavg()
    count = HFTokenCounter(TARGET)
    cases, small = _document_sets(args, count)
    results, built = _measure_all(cases, small, args, count)
    fast = {p: built[name] for p, name in PRECISIONS}
    versus = versus_reference(fast, built["llmlingua2"], cases, args, count)
    payload = {
        "compressors": results, "request_path_compressor": REQUEST_PATH,
        "llmlingua2_speedup_vs_reference": versus["speedup"],
        "llmlingua2_agreement": versus["agreement"], "llmlingua2_reference": versus,
        "llmlingua2_default_precision": versus["precision"],
        "llmlingua2_speedup_precision": versus["precision"],
        "documents": _describe(cases, count), "documents_longllmlingua": _describe(small, count),
        "targets": _targets(results, versus), "settings": _settings(args),
        "loadavg_start": load_start, "loadavg_end": os.getloadavg(),
        "runtime_s": round(time.perf_counter() - started, 1),
    }  # fmt: skip
    write_result(args.out, payload)
    print(summary(results, versus, args.threads))
    return payload


def summary(results: dict, versus: dict, threads: int) -> str:
    fast, ext = results[REQUEST_PATH], results["extractive"]
    return (f"compress_cost ({threads} thread, CPU ms): {REQUEST_PATH} cold "
            f"{fast['cold_ms_per_1k']:.2f} ms/1k, warm {fast['warm_ms_per_1k']:.4f}, seen "
            f"{fast.get('seen_ms_per_1k')} ({fast.get('feature_bytes_per_1k')} feature bytes "
            f"per 1k tokens); extractive "
            f"cold {ext['cold_ms_per_1k']:.1f}, warm {ext['warm_ms_per_1k']:.4f}; llmlingua2 "
            f"agreement {versus['agreement']} at its default precision {versus['precision']}; "
            f"llmlingua2_speedup_vs_reference {versus['speedup']}")  # fmt: skip


if __name__ == "__main__":
    main()

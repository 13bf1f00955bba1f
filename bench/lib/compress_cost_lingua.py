"""bench.compress_cost, part two: our LLMLingua-2 engine against llmlingua's own.

Agreement (word-level share of equal keep/drop decisions) for every precision; speed of
ours at the precision the compressor uses BY DEFAULT (`precision="auto"`: what it
measured and picked at load on this machine) with the other precisions that keep the
agreement bar beside it, against `PromptCompressor.compress_prompt` on the same cases,
interleaved so machine noise falls on all of them (issue 14: the headline is what a user
gets, not the fastest precision found afterwards).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from functools import partial

from bench.lib.squad import RagCase

MIN_AGREE = 0.99
WARMUP_DOC = "The warm-up paragraph loads the model. It is not part of the measured set."
WARMUP_QUESTION = "What does the warm-up paragraph load?"


def load_s_first_call(compressor, rate: float) -> float:
    from compressors import Budget

    start = time.perf_counter()
    compressor.compress([WARMUP_DOC], question=WARMUP_QUESTION, budget=Budget(rate=rate))
    return time.perf_counter() - start


def _reference_pair(count, rate: float, model_path):
    """llmlingua's engine in our compressor (bench/lib/variants, for .decide) and
    llmlingua's own PromptCompressor set up for LLMLingua-2 as its README does (for
    timing), both loaded and warmed up."""
    from llmlingua import PromptCompressor

    from bench.lib.variants.lingua2_reference import ReferenceLLMLingua2Compressor

    reference = ReferenceLLMLingua2Compressor(count, model_path=model_path, precision="fp32")
    pc = PromptCompressor(model_name=str(model_path), device_map="cpu", use_llmlingua2=True,
                          model_config={"local_files_only": True})  # fmt: skip
    load_s = load_s_first_call(reference, rate)
    pc.compress_prompt([WARMUP_DOC], rate=rate, use_context_level_filter=False)
    return reference, pc, load_s


def _agreement(reference, fast: dict, cases: list[RagCase], rate: float) -> dict:
    """Word-level share of equal keep/drop decisions, reference vs each precision."""
    decided, seconds = {}, {}
    for name, compressor in {"reference": reference, **fast}.items():
        start = time.perf_counter()
        decided[name] = [d for c in cases for d in compressor.decide(c.documents, rate)]
        seconds[name] = round(time.perf_counter() - start, 3)
    agreement, total = {}, 0
    for precision in fast:
        pairs = list(zip(decided["reference"], decided[precision], strict=True))
        if any(a.spans != b.spans for a, b in pairs):
            raise RuntimeError("engines split a document into different words")
        same = sum(x == y for a, b in pairs for x, y in zip(a.keep, b.keep, strict=True))
        total = sum(len(a.keep) for a, _ in pairs)
        agreement[precision] = round(same / max(1, total), 4)
    return {"agreement": agreement, "n_words": total, "decide_s_single_run": seconds}


def _interleaved(calls: dict[str, Callable], cases: list[RagCase], reps: int) -> dict:
    """Seconds per repetition over all cases; within a case the calls alternate, and
    their order flips every repetition, so machine noise falls on all of them."""
    names, times = list(calls), {name: [0.0] * reps for name in calls}
    for rep in range(reps):
        for case in cases:
            for name in names if rep % 2 == 0 else names[::-1]:
                start = time.perf_counter()
                calls[name](case.documents)
                times[name][rep] += time.perf_counter() - start
    return times


def _calls(pc, fast: dict, precisions: list[str], rate: float) -> dict[str, Callable]:
    from compressors import Budget

    budget, ends = Budget(rate=rate), list(fast["fp32"].chunk_end_tokens)
    force = list(fast["fp32"].force_tokens)

    def reference(docs):
        return pc.compress_prompt(list(docs), rate=rate, use_context_level_filter=False,
                                  force_tokens=force, chunk_end_tokens=ends)  # fmt: skip

    ours = {p: partial(fast[p].compress, question="", budget=budget) for p in precisions}
    return {"reference": reference, **ours}


def versus_reference(fast: dict, default, cases: list[RagCase], args, count) -> dict:
    """`fast`: precision -> explicit-precision compressor; `default`: the compressor as
    built with no precision option (auto), already loaded."""
    reference, pc, load_s = _reference_pair(count, args.rate, fast["fp32"].model_path)
    found = _agreement(reference, fast, cases, args.rate)
    agree = found["agreement"]
    picked = default.chosen_precision or default.precision
    timed = list(dict.fromkeys(["fp32", picked, *[p for p in agree if agree[p] >= MIN_AGREE]]))
    times = _interleaved(_calls(pc, fast, timed, args.rate), cases, args.reps)
    median = {name: statistics.median(values) for name, values in times.items()}
    speedup = {p: round(median["reference"] / median[p], 3) for p in timed}
    return {
        "speedup": speedup[picked], "precision": picked, "agreement": agree[picked],
        "default_precision_option": default.precision, "auto_trials": default.precision_trials,
        "speedup_by_precision": speedup, "agreement_by_precision": agree,
        "median_s": {k: round(v, 3) for k, v in median.items()},
        "runs_s": {k: [round(x, 3) for x in v] for k, v in times.items()},
        "reps": args.reps, "rate": args.rate, "n_words": found["n_words"],
        "decide_s_single_run": found["decide_s_single_run"], "reference_load_s": round(load_s, 3),
        "reference_call": "PromptCompressor(use_llmlingua2=True).compress_prompt(docs, rate, "
        "use_context_level_filter=False) per case; ours: LLMLingua2Compressor .compress per case",
        "agreement_via": "bench.lib.variants ReferenceLLMLingua2Compressor .decide "
        "(compress_prompt_llmlingua2, where compress_prompt dispatches, "
        "use_context_level_filter=False) vs LLMLingua2Compressor .decide",
    }  # fmt: skip

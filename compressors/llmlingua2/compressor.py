"""LLMLingua-2: a token classifier scores every word; the least useful words are dropped.

Question-agnostic and per document (llmlingua's context-level filter, which drops whole
documents, is never used), so results are cacheable per chunk. We run the classifier
ourselves with llmlingua-2's rule (words.py). The document is tokenized once (with
offsets) and cut into chunks of ≤ 510 tokens ending at a chunk-end token; each chunk runs
alone ([CLS] chunk [SEP], no padding, inference mode), so a document's result never
depends on what it was batched with; tokens merge into words (BERT "##" pieces; XLM-R "▁"
starts and punctuation); a word's probability is the mean of its tokens'
keep-probabilities (1.0 for a force token); per chunk, the threshold is the
int(100·(1−rate)+1)-th percentile of the word probabilities repeated once per cl100k_base
token of the word; a word is kept above it (or at it when it is 1).
`precision`: "fp32" (same decisions as llmlingua), "bf16" or "int8" (dynamic
quantization of the Linear layers, CPU only): faster or slower depending on the
machine, a few decisions differ; "auto" (default) measures them once at load on a
fixed text and keeps the fastest whose word decisions agree with fp32's on ≥ 99.5 %
(_precision.py); `chosen_precision` and `precision_trials` say what it found.
`device`: "auto" (default: cuda when torch sees one), "cpu" or "cuda".

llmlingua's own `compress_prompt_llmlingua2`, which this engine reproduces, is a bench
variant (bench/lib/variants/lingua2_reference.py: a subclass that overrides
`make_engine`), not a product option: only the agreement benchmark and the
byte-identity tests run it.

Text is rendered from the source: protected spans (protect.py) and the words over them
are kept verbatim, kept words are joined with the source's own whitespace
(sentences.render_kept) — llmlingua's own output is re-detokenized ("word , word") and
loses line breaks. Force tokens must be single tokens of the classifier's vocabulary.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from compressors import deadline
from compressors._fingerprint import counter_field, fingerprint
from compressors._precision import AUTO, candidates, check, choose, prepare, share_equal
from compressors.base import Budget, CompressionResult, DocumentResult, TokenCounter
from compressors.llmlingua2.words import Chunk, WordChunker, WordDecisions, keep_flags, model_kind
from compressors.protect import Protector, Span, fold_protected
from compressors.sentences import render_kept
from compressors.tokens import ApproxTokenCounter

DEFAULT_MODEL = "microsoft/llmlingua-2-xlm-roberta-large-meetingbank"
MIN_RATE = 0.01  # llmlingua's percentile arithmetic fails below this


def with_precision(model, precision: str):
    """`model` converted to `precision` (public: bench's reference engine converts too)."""
    import torch

    if precision == "bf16":
        return model.to(torch.bfloat16)
    if precision == "int8":
        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, torch.qint8)
    return model


def _convert_copy(model, precision: str):
    import copy

    return with_precision(copy.deepcopy(model), precision)


def auto_precision(engine, owner: LLMLingua2Compressor, allowed: tuple[str, ...]):
    """Measure each allowed precision on the calibration text with `engine`, whose
    `model` (fp32) is swapped for a converted copy per trial; keep the winner."""
    from compressors import calibration

    base = engine.model

    def run(precision: str):
        engine.model = base if precision == "fp32" else _convert_copy(base, precision)
        return lambda: [d.keep for d in engine.decide(calibration.DOCUMENTS, 0.33)]

    picked, trials = choose(run, allowed, share_equal)
    engine.model = with_precision(base, picked)
    owner.precision_trials = [t.as_dict() for t in trials]
    return picked


class FastEngine:
    def __init__(self, owner: LLMLingua2Compressor) -> None:
        from transformers import AutoModelForTokenClassification, AutoTokenizer

        from compressors.offline import load_cl100k

        tokenizer = AutoTokenizer.from_pretrained(owner.model_path, local_files_only=True)
        self.chunker = owner.make_chunker(tokenizer)
        model = AutoModelForTokenClassification.from_pretrained(
            owner.model_path, local_files_only=True
        )
        self.device, self.cl100k = owner.device, load_cl100k()
        self.model = model.float().to(owner.device).eval()
        if owner.precision == AUTO:
            owner.chosen_precision = auto_precision(self, owner, candidates(owner.device))
        else:
            self.model = with_precision(self.model, owner.precision)

    def _token_probs(self, ids: list[int]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            logits = self.model(input_ids=torch.tensor([ids], device=self.device)).logits
            return torch.softmax(logits[0].float(), dim=-1)[:, 1].cpu().numpy()

    def _chunk_flags(self, chunk: Chunk, rate: float, memo: dict[str, int]) -> list[bool]:
        deadline.check()  # a checkpoint before each forward (~0.5 s per chunk on a CPU)
        token_probs = self._token_probs(chunk.ids)
        probs = []
        for positions, forced in zip(chunk.words, chunk.forced, strict=True):
            values = [token_probs[p] for p in positions]
            if forced:
                values[0] = 1.0
            probs.append(sum(values) / len(values))
        counts = []
        for text in chunk.texts:
            if text not in memo:
                memo[text] = len(self.cl100k.encode_ordinary(text))
            counts.append(memo[text])
        return keep_flags(probs, counts, rate)

    def decide(self, documents: Sequence[str], rate: float) -> list[WordDecisions]:
        memo: dict[str, int] = {}
        out = []
        for doc in documents:
            spans: list[Span] = []
            keep: list[bool] = []
            for chunk in self.chunker.chunks(doc):
                spans.extend(chunk.spans)
                keep.extend(self._chunk_flags(chunk, rate, memo))
            out.append(WordDecisions(tuple(spans), tuple(keep)))
        return out


class LLMLingua2Compressor:
    name = "llmlingua2"
    version = "1"
    engine = "fast"  # in the fingerprint: results of llmlingua's own code (bench) differ
    prior_ms_per_1k = 1640.0  # ms per 1k cold tokens until measured (dev-machine figure)
    question_aware = False

    def __init__(
        self,
        count_tokens: TokenCounter | None = None,
        *,
        model_path: str | Path = DEFAULT_MODEL,
        model_id: str | None = None,
        device: str = "auto",
        precision: str = AUTO,
        force_tokens: Sequence[str] = (),
        chunk_end_tokens: Sequence[str] = (".", "\n"),
        max_seq_len: int = 512,
        protector: Protector | None = None,
        num_threads: int | None = None,
    ) -> None:
        check(device, precision)
        self.count_tokens = count_tokens or ApproxTokenCounter()
        self.model_path, self.device = str(model_path), device
        self.precision = precision
        self.chosen_precision: str | None = None if precision == AUTO else precision
        self.precision_trials: list[dict] = []
        self.model_id = model_id or Path(self.model_path).name
        self.kind = model_kind(self.model_path)
        self.force_tokens, self.chunk_end_tokens = tuple(force_tokens), tuple(chunk_end_tokens)
        self.max_seq_len, self.num_threads = max_seq_len, num_threads
        self.protector = protector or Protector()
        self._engine = None  # FastEngine, built on the first compress()
        self._lock = threading.Lock()

    def fingerprint(self) -> str:
        return fingerprint(
            self,
            self.model_id,
            f"engine={self.engine}",
            f"device={self.device}",
            f"precision={self.chosen_precision or self.precision}",
            f"force={list(self.force_tokens)}",
            f"ends={list(self.chunk_end_tokens)}",
            f"seq={self.max_seq_len}",
            counter_field(self),
        )

    def make_chunker(self, tokenizer) -> WordChunker:
        return WordChunker(
            tokenizer, self.kind, self.force_tokens, self.chunk_end_tokens, self.max_seq_len
        )

    def make_engine(self) -> FastEngine:
        """The engine that decides words; called once, under the lock, at first use."""
        return FastEngine(self)

    def _load(self):
        with self._lock:
            if self._engine is None:
                self.device = prepare(self.device, self.precision, self.num_threads)
                self._engine = self.make_engine()
        return self._engine

    def decide(self, documents: Sequence[str], rate: float) -> list[WordDecisions]:
        """The engine's keep/drop decision for each word (before protected spans)."""
        rate = min(1.0, max(MIN_RATE, rate))
        live = [i for i, d in enumerate(documents) if d.strip()]
        out = [WordDecisions((), ()) for _ in documents]
        if rate < 1.0 and live:
            decided = (self._engine or self._load()).decide([documents[i] for i in live], rate)
            for i, result in zip(live, decided, strict=True):
                out[i] = result
        return out

    def compress(
        self, documents: Sequence[str], *, question: str, budget: Budget
    ) -> CompressionResult:
        docs = list(documents)
        before = [self.count_tokens(d) for d in docs]
        rate = budget.keep_rate(sum(before))
        if rate >= 1.0:
            return CompressionResult(
                self.name, tuple(DocumentResult(d, n, n) for d, n in zip(docs, before, strict=True))
            )
        results = []
        for doc, n, verdict in zip(docs, before, self.decide(docs, rate), strict=True):
            units, keep = fold_protected(verdict.spans, verdict.keep, self.protector.spans(doc))
            text = render_kept(doc, units, keep) if doc.strip() else doc
            results.append(DocumentResult(text, n, self.count_tokens(text)))
        return CompressionResult(self.name, tuple(results))

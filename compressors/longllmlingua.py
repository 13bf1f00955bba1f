"""LongLLMLingua: question-aware token dropping with a small causal LM (llmlingua 0.2.2).

Two stages, both llmlingua's own code driven per document, so every document comes back
on its own, in its original place (llmlingua only returns one joined string):

1. rank (several documents and a question): llmlingua's "longllmlingua" ranking — the
   perplexity of the question after each document. With `dynamic_ratio` r, the best
   document keeps r more than the base rate, the worst r less, linearly in between
   (llmlingua's `dynamic_context_compression_ratio`); no document is dropped or moved.
2. compress each document alone: `compress_prompt([doc], question=…)` with
   `rank_method="longllmlingua"`, `condition_in_question="after"`,
   `condition_compare=True` (contrastive perplexity against the question),
   `reorder_context="original"`, no context-level filter, no question appended.
   Tokens overlapping a protected span (protect.py) are force-kept through llmlingua's
   own `keep_flag` path (see `ProtectingCompressor`); the rest's target is lowered by
   what protection keeps. Without a question: plain LLMLingua perplexity, no ranking.
   `iterative_size=None` (default) makes the whole document one window: llmlingua's
   window arithmetic assumes full windows, so a document shorter than the window (most
   RAG chunks, at its default 200) comes back uncompressed, and a longer one keeps its
   last partial window uncompressed (measured: 867 tokens at rate 0.3 kept 0.44 with
   ~200-token windows, 0.30 with one window). One window is capped at half the model's
   positions minus the question (about 4k tokens for SmolLM2's 8k).

Budget: `rate` is per document (in LM tokens); `target_tokens` sets the base rate to
target / total tokens. Output is llmlingua's detokenized kept tokens (BPE fragments can
merge where tokens were dropped), with the document's leading/trailing whitespace kept.

The KV-cache fix: llmlingua's `get_ppl` slices and passes a legacy list of (key, value)
tensors, which transformers ≥ 4.57 / 5.x no longer accept or return (upstream #210/#215).
`LegacyCacheLM` wraps the model: the legacy list goes in as a `DynamicCache`, and the
returned cache comes back as a legacy list. site-packages are not touched.

llmlingua's constructor loads cl100k_base through tiktoken: offline, the caller first runs
`offline.ensure_tiktoken_cache(dir)` and sets TIKTOKEN_CACHE_DIR.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

from compressors._fingerprint import counter_field, fingerprint
from compressors._precision import prepare
from compressors.base import Budget, CompressionResult, DocumentResult, TokenCounter
from compressors.protect import Protector, Span, overlaps
from compressors.tokens import ApproxTokenCounter


def to_legacy(cache) -> list[tuple]:
    """A transformers cache object as llmlingua's list of (key, value) per layer."""
    if cache is None:
        return None
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    if hasattr(cache, "to_legacy_cache"):
        return list(cache.to_legacy_cache())
    return [tuple(kv[:2]) for kv in cache]


def from_legacy(legacy):
    """llmlingua's list of (key, value) as a transformers DynamicCache."""
    from transformers import DynamicCache

    if legacy is None:
        return None
    pairs = [(k, v) for k, v, *_ in legacy]
    if hasattr(DynamicCache, "from_legacy_cache"):
        return DynamicCache.from_legacy_cache(tuple(pairs))
    return DynamicCache(ddp_cache_data=pairs)


class LegacyCacheLM:
    """Calls a causal LM the way llmlingua's get_ppl expects (legacy KV cache)."""

    def __init__(self, model) -> None:
        self.model = model
        params = inspect.signature(model.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"

    def __getattr__(self, name: str):
        return getattr(self.model, name)

    def __call__(self, input_ids, attention_mask=None, past_key_values=None, use_cache=True):
        kwargs = {self._cache_arg: from_legacy(past_key_values)}
        out = self.model(
            input_ids=input_ids, attention_mask=attention_mask, use_cache=use_cache, **kwargs
        )
        cache = getattr(out, "cache", None)
        if cache is None:
            cache = out.past_key_values
        return SimpleNamespace(logits=out.logits, past_key_values=to_legacy(cache))


def _adapter_class():
    from llmlingua import PromptCompressor

    class ProtectingCompressor(PromptCompressor):
        """llmlingua's own force-keep path (`keep_flag`, built for keep_split) carries our
        protected-token mask; split_token_id=-1 turns keep_split's newline rule off."""

        protect_mask = None  # set per call (under the owner's lock), consumed once

        def iterative_compress_prompt(self, context, target_token, *args, **kwargs):
            kwargs.update(keep_split=True, split_token_id=-1)
            return super().iterative_compress_prompt(context, target_token, *args, **kwargs)

        def get_compressed_input(self, *args, keep_flag=None, **kwargs):
            if self.protect_mask is not None and keep_flag is not None:
                keep_flag, self.protect_mask = self.protect_mask.to(keep_flag.device), None
            return super().get_compressed_input(*args, keep_flag=keep_flag, **kwargs)

    return ProtectingCompressor


def protected_token_mask(tokenizer, joined: str, doc_start: int, spans: Sequence[Span]):
    """1 for each token of `joined` overlapping a protected span of the document that
    starts at `doc_start`, else 0 (a torch tensor, llmlingua's keep_flag layout). A span
    takes the whitespace character before it along, so kept numbers do not run together
    when a tokenizer makes the space its own token."""
    import torch

    enc = tokenizer(joined, add_special_tokens=False, return_offsets_mapping=True)
    shifted = []
    for s, e in spans:
        s, e = s + doc_start, e + doc_start
        shifted.append((s - 1 if s > doc_start and joined[s - 1].isspace() else s, e))
    flags = [int(overlaps(shifted, s, max(e, s + 1))) for s, e in enc["offset_mapping"]]
    return torch.tensor(flags, dtype=torch.long)


def rank_deltas(order: Sequence[int], spread: float) -> dict[int, float]:
    """llmlingua's dynamic ratio: best-ranked document +spread … worst −spread."""
    n = len(order)
    if n < 2 or spread <= 0:
        return {i: 0.0 for i in order}
    return {doc: spread * (n - 1 - 2 * rank) / (n - 1) for rank, doc in enumerate(order)}


class LongLLMLinguaCompressor:
    name = "longllmlingua"
    version = "1"
    prior_ms_per_1k = 3000.0  # ms per 1k cold tokens until measured (dev-machine figure)
    question_aware = True

    def __init__(
        self,
        count_tokens: TokenCounter | None = None,
        *,
        model_path: str | Path,
        model_id: str | None = None,
        device: str = "cpu",
        dynamic_ratio: float = 0.3,
        condition_compare: bool = True,
        iterative_size: int | None = None,
        min_rate: float = 0.05,
        protector: Protector | None = None,
        num_threads: int | None = None,
    ) -> None:
        self.count_tokens = count_tokens or ApproxTokenCounter()
        self.model_path, self.device = str(model_path), device  # "auto": resolved at load
        self.model_id = model_id or Path(self.model_path).name
        self.dynamic_ratio, self.condition_compare = dynamic_ratio, condition_compare
        self.iterative_size, self.min_rate = iterative_size, min_rate
        self.protector = protector or Protector()
        self.num_threads = num_threads
        self._pc = None
        self._lock = threading.Lock()
        self._calls = threading.Lock()  # llmlingua keeps per-call state on its instance

    def fingerprint(self) -> str:
        return fingerprint(
            self,
            self.model_id,
            f"device={self.device}",
            f"dyn={self.dynamic_ratio}",
            f"compare={self.condition_compare}",
            f"iter={self.iterative_size}",
            f"min={self.min_rate}",
            counter_field(self),
        )

    def _load(self):
        with self._lock:
            if self._pc is None:
                self.device = prepare(self.device, num_threads=self.num_threads)
                pc = _adapter_class()(
                    model_name=self.model_path,
                    device_map=self.device,
                    model_config={"local_files_only": True},
                )
                pc.model = LegacyCacheLM(pc.model.eval())
                self._pc = pc
        return self._pc

    def _rates(self, docs: list[str], question: str, base: float) -> list[float]:
        pc = self._pc or self._load()
        if question and len(docs) > 1 and self.dynamic_ratio > 0:
            lengths = [pc.get_token_length(d) for d in docs]
            ranked = pc.get_rank_results(docs, question, "longllmlingua", "after", lengths)
            deltas = rank_deltas([i for i, _ in ranked], self.dynamic_ratio)
        else:
            deltas = {i: 0.0 for i in range(len(docs))}
        return [min(1.0, max(self.min_rate, base + deltas[i])) for i in range(len(docs))]

    def _compress_one(self, doc: str, question: str, rate: float) -> str:
        body = doc.strip()
        if not body or rate >= 1.0:
            return doc
        pc = self._pc or self._load()
        offset = len(doc) - len(doc.lstrip())
        spans = [(s - offset, e - offset) for s, e in self.protector.spans(doc)]
        aware = bool(question) and self.condition_compare
        joined = f"{question}\n\n{body}" if aware else body
        mask = protected_token_mask(pc.tokenizer, joined, len(joined) - len(body), spans)
        n_tokens = pc.get_token_length(body, add_special_tokens=False)
        fixed = int(mask[len(mask) - n_tokens :].sum()) if n_tokens else 0
        target = max(0.0, rate * (n_tokens + 3) - fixed)
        # one window, unless llmlingua would then truncate the question prefix (it does
        # when prefix + 2 windows > the model's positions), which would misalign the mask
        room = (pc.max_position_embeddings - len(mask) + n_tokens - 16) // 2
        window = self.iterative_size or max(64, min(n_tokens + 3, room))
        pc.protect_mask = mask
        try:
            res = pc.compress_prompt(
                [body],
                question=question,
                target_token=target,
                use_context_level_filter=False,
                rank_method="longllmlingua" if question else "llmlingua",
                condition_in_question="after" if question else "none",
                condition_compare=aware,
                reorder_context="original",
                concate_question=False,
                iterative_size=window,
            )
        finally:
            pc.protect_mask = None
        text = res["compressed_prompt"].strip()
        return doc[:offset] + text + doc[len(doc.rstrip()) :] if text else ""

    def compress(
        self, documents: Sequence[str], *, question: str, budget: Budget
    ) -> CompressionResult:
        docs = list(documents)
        before = [self.count_tokens(d) for d in docs]
        base = budget.keep_rate(sum(before))
        if base >= 1.0:
            results = tuple(DocumentResult(d, n, n) for d, n in zip(docs, before, strict=True))
            return CompressionResult(self.name, results)
        asked = question.strip()
        live = [i for i, d in enumerate(docs) if d.strip()]
        with self._calls:
            out = self._run(docs, live, asked, base)
        results = (
            DocumentResult(o, n, self.count_tokens(o)) for o, n in zip(out, before, strict=True)
        )
        return CompressionResult(self.name, tuple(results))

    def _run(self, docs: list[str], live: list[int], asked: str, base: float) -> list[str]:
        rates = dict(zip(live, self._rates([docs[i] for i in live], asked, base), strict=True))
        return [
            self._compress_one(d, asked, rates[i]) if i in rates else d for i, d in enumerate(docs)
        ]

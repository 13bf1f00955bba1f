"""LLMLingua-2 decided by llmlingua's own code: the reference our engine must match.

Why here and not a product option: the product's engine (compressors/llmlingua2/)
reproduces llmlingua 0.2.2's `compress_prompt_llmlingua2` word for word, and only the
agreement benchmark (bench.compress_cost: speed and share of equal decisions) and the
byte-identity tests (tests/unit/compressors/llmlingua2/) run the original beside it.
The subclass swaps the engine (`make_engine`) and nothing else: same word spans
(the product's WordChunker), same protection and rendering, so any difference is a
decision. llmlingua's constructor loads cl100k_base through tiktoken: offline, the
caller first runs `compressors.ensure_tiktoken_cache(dir)` and sets TIKTOKEN_CACHE_DIR.
"""

from __future__ import annotations

from collections.abc import Sequence

from compressors import LLMLingua2Compressor, TokenCounter
from compressors._precision import AUTO, candidates
from compressors.llmlingua2.compressor import auto_precision, with_precision
from compressors.llmlingua2.words import WordDecisions

SEP = "\t\t|\t\t"  # llmlingua's word separator in its labelled output


class ReferenceEngine:
    """Words decided by `PromptCompressor.compress_prompt_llmlingua2`, labels read back
    with `return_word_label=True`."""

    def __init__(self, owner: ReferenceLLMLingua2Compressor) -> None:
        from llmlingua import PromptCompressor

        self.owner = owner
        self.pc = PromptCompressor(
            model_name=owner.model_path,
            device_map=owner.device,
            use_llmlingua2=True,
            model_config={"local_files_only": True},
        )
        self.chunker = owner.make_chunker(self.pc.tokenizer)
        if owner.precision == AUTO:  # llmlingua's own code cannot read bf16 probabilities
            allowed = tuple(p for p in candidates(owner.device) if p != "bf16")
            owner.chosen_precision = auto_precision(self, owner, allowed)
        else:
            self.pc.model = with_precision(self.pc.model, owner.precision)

    @property
    def model(self):
        return self.pc.model

    @model.setter
    def model(self, value) -> None:
        self.pc.model = value

    def decide(self, documents: Sequence[str], rate: float) -> list[WordDecisions]:
        res = self.pc.compress_prompt_llmlingua2(
            list(documents),
            rate=rate,
            use_context_level_filter=False,
            return_word_label=True,
            word_sep=SEP,
            force_tokens=list(self.owner.force_tokens),
            chunk_end_tokens=list(self.owner.chunk_end_tokens),
        )
        text = res["fn_labeled_original_prompt"]
        labels = [w.rsplit(" ", 1)[1] == "1" for w in text.split(SEP)] if text else []
        out, pos = [], 0
        for doc in documents:
            spans = [s for c in self.chunker.chunks(doc) for s in c.spans]
            out.append(WordDecisions(tuple(spans), tuple(labels[pos : pos + len(spans)])))
            pos += len(spans)
        if pos != len(labels):
            raise RuntimeError(f"llmlingua labelled {len(labels)} words, we found {pos}")
        return out


class ReferenceLLMLingua2Compressor(LLMLingua2Compressor):
    """LLMLingua2Compressor whose words llmlingua's own code decides."""

    engine = "reference"  # in the fingerprint: never mistaken for the product's results

    def __init__(
        self, count_tokens: TokenCounter | None = None, *, device: str = "auto",
        precision: str = AUTO, **options,
    ) -> None:  # fmt: skip
        if precision == "bf16":
            raise ValueError("llmlingua's own code cannot read bf16 probabilities")
        super().__init__(count_tokens, device=device, precision=precision, **options)

    def make_engine(self) -> ReferenceEngine:
        return ReferenceEngine(self)

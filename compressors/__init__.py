"""compressors: the public face. Consumers (the proxy, bench, tests of the product)
import from here, not from the modules behind it.

What is exported is what the package promises, and nothing else is (why a face:
docs/decisions/0010-compressors-face-and-packages.md):

- the protocol: `Compressor`, `CompressionResult`, `DocumentResult`, `TokenCounter`,
  `Budget` (base.py);
- the compressors, and `build_compressor` / `REGISTRY` (registry.py: name -> class);
- the token counters (tokens.py): `ApproxTokenCounter`, `HFTokenCounter`,
  `make_token_counter`, `counter_name`, `count_spans`;
- what the proxy's engine needs around a compression: the deadline (`within`,
  `DeadlineExceeded`: deadline.py), the features protocol (`FeatureCompressor`,
  `ChunkFeatures`, `encode_features` / `decode_features`: features.py), the adaptive
  budget (`AdaptiveBudget`, `AUTO`: adaptive.py), documents kept verbatim
  (`is_opaque`, `partition_verbatim` / `merge_verbatim`: verbatim.py), and the
  calibration workload (`from compressors import calibration`, a public submodule);
- the pieces every compressor shares and bench reads: `Protector` (protect.py),
  `split_sentences`, `render_kept`, `MAX_SENTENCE_CHARS` (sentences.py), and
  `ensure_tiktoken_cache`, `load_cl100k` (offline.py: cl100k_base without a network).

Lazy: a name is imported on first use (PEP 562 `__getattr__`), so `import compressors`
imports no module behind it, and none of them imports torch, transformers or llmlingua
at module level; a compressor loads its model on its first compress(). The proxy starts
without a model library (tests/unit/compressors/test_face.py checks it).

Private: the helpers of one compressor live in its sub-package (fast_extractive/,
llmlingua2/); those shared by several compressors and no consumer are `_name.py`
(_selection.py, _precision.py, _chunked_tokens.py: tokens memoized per chunk, for the
counters and the static embedder, in _token_tables.py's tables, one per tenant).
Bench-only variants (llmlingua's own engine, single-signal scorers, a cl100k counter) are
in bench/lib/variants/, not here.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

# public name -> (module, attribute in it)
_EXPORTS: Mapping[str, tuple[str, str]] = {
    **{
        n: ("compressors.base", n)
        for n in ("Budget", "CompressionResult", "Compressor", "DocumentResult", "TokenCounter")
    },
    "IdentityCompressor": ("compressors.identity", "IdentityCompressor"),
    "ExtractiveCompressor": ("compressors.extractive", "ExtractiveCompressor"),
    "FastExtractiveCompressor": (
        "compressors.fast_extractive.compressor",
        "FastExtractiveCompressor",
    ),
    "LLMLingua2Compressor": ("compressors.llmlingua2.compressor", "LLMLingua2Compressor"),
    "LongLLMLinguaCompressor": ("compressors.longllmlingua", "LongLLMLinguaCompressor"),
    "REGISTRY": ("compressors.registry", "REGISTRY"),
    "build_compressor": ("compressors.registry", "build_compressor"),
    **{
        n: ("compressors.tokens", n)
        for n in (
            "ApproxTokenCounter",
            "HFTokenCounter",
            "count_spans",
            "counter_name",
            "make_token_counter",
        )
    },
    "DeadlineExceeded": ("compressors.deadline", "DeadlineExceeded"),
    "within": ("compressors.deadline", "within"),
    "AUTO": ("compressors.adaptive", "AUTO"),
    "AdaptiveBudget": ("compressors.adaptive", "AdaptiveBudget"),
    "ChunkFeatures": ("compressors.features", "ChunkFeatures"),
    "FeatureCompressor": ("compressors.features", "FeatureCompressor"),
    "encode_features": ("compressors.features", "encode"),
    "decode_features": ("compressors.features", "decode"),
    "is_opaque": ("compressors.verbatim", "is_opaque"),
    "partition_verbatim": ("compressors.verbatim", "partition"),
    "merge_verbatim": ("compressors.verbatim", "merge"),
    "Protector": ("compressors.protect", "Protector"),
    **{
        n: ("compressors.sentences", n)
        for n in ("MAX_SENTENCE_CHARS", "render_kept", "split_sentences")
    },
    "ensure_tiktoken_cache": ("compressors.offline", "ensure_tiktoken_cache"),
    "load_cl100k": ("compressors.offline", "load_cl100k"),
}

__all__ = (
    "AdaptiveBudget",
    "ApproxTokenCounter",
    "AUTO",
    "Budget",
    "build_compressor",
    "ChunkFeatures",
    "CompressionResult",
    "Compressor",
    "count_spans",
    "counter_name",
    "DeadlineExceeded",
    "decode_features",
    "DocumentResult",
    "encode_features",
    "ensure_tiktoken_cache",
    "ExtractiveCompressor",
    "FastExtractiveCompressor",
    "FeatureCompressor",
    "HFTokenCounter",
    "IdentityCompressor",
    "is_opaque",
    "LLMLingua2Compressor",
    "load_cl100k",
    "LongLLMLinguaCompressor",
    "make_token_counter",
    "MAX_SENTENCE_CHARS",
    "merge_verbatim",
    "partition_verbatim",
    "Protector",
    "REGISTRY",
    "render_kept",
    "split_sentences",
    "TokenCounter",
    "within",
)


def __getattr__(name: str) -> Any:
    """The exported object, its module imported on first use (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'compressors' has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    return getattr(importlib.import_module(module), attribute)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what a type checker and an IDE see; nothing is imported at run time
    from compressors.adaptive import AUTO, AdaptiveBudget
    from compressors.base import (
        Budget,
        CompressionResult,
        Compressor,
        DocumentResult,
        TokenCounter,
    )
    from compressors.deadline import DeadlineExceeded, within
    from compressors.extractive import ExtractiveCompressor
    from compressors.fast_extractive.compressor import FastExtractiveCompressor
    from compressors.features import ChunkFeatures, FeatureCompressor
    from compressors.features import decode as decode_features
    from compressors.features import encode as encode_features
    from compressors.identity import IdentityCompressor
    from compressors.llmlingua2.compressor import LLMLingua2Compressor
    from compressors.longllmlingua import LongLLMLinguaCompressor
    from compressors.offline import ensure_tiktoken_cache, load_cl100k
    from compressors.protect import Protector
    from compressors.registry import REGISTRY, build_compressor
    from compressors.sentences import MAX_SENTENCE_CHARS, render_kept, split_sentences
    from compressors.tokens import (
        ApproxTokenCounter,
        HFTokenCounter,
        count_spans,
        counter_name,
        make_token_counter,
    )
    from compressors.verbatim import is_opaque
    from compressors.verbatim import merge as merge_verbatim
    from compressors.verbatim import partition as partition_verbatim

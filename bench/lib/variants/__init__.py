"""Bench-only variants of product compressors and counters, and one way to build them.

Why apart from compressors/: they exist to check the product's choices (llmlingua's own
LLMLingua-2 against ours, each fast_extractive signal alone against the mix, cl100k
counts as llmlingua counts), never to serve a request; keeping them out of the product
removed its `engine` and `scorer` options (issue 21). Each is a subclass of the product
class (or a plain counter), built with the registry's option handling
(compressors.registry.construct), so a variant differs from the product only where it
says.

`build_compressor(name, options)`: the product's `compressors.build_compressor`, unless
`options["variant"]` names a variant of `name` (VARIANTS).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from compressors import Compressor
from compressors import build_compressor as build_product

# registry name -> variant -> (module, class, fixed options); imported when built
VARIANTS: Mapping[str, Mapping[str, tuple[str, str, Mapping[str, Any]]]] = {
    "fast_extractive": {
        signal: ("bench.lib.variants.fast_single_signal", "SingleSignalFastExtractive",
                 {"signal": signal})
        for signal in ("bm25", "static")
    },
    "llmlingua2": {
        "reference": ("bench.lib.variants.lingua2_reference", "ReferenceLLMLingua2Compressor", {}),
    },
}  # fmt: skip


def build_compressor(name: str, options: Mapping[str, Any] | None = None) -> Compressor:
    """A product compressor, or the variant of it that `options["variant"]` names."""
    from compressors.registry import construct

    opts = dict(options or {})
    variant = opts.pop("variant", None)
    if variant is None:
        return build_product(name, opts)
    known = VARIANTS.get(name, {})
    if variant not in known:
        raise ValueError(f"no variant {variant!r} of {name!r}; known: {sorted(known)}")
    module, class_name, fixed = known[variant]
    cls = getattr(importlib.import_module(module), class_name)
    return construct(cls, name, {**fixed, **opts})

"""Compressors by name: `build_compressor(name, options)`.

Importing this module imports no model library; each constructor module is imported
when its name is built. `options` are the constructor's keyword arguments, plus:

- `tokenizer_path`: build `count_tokens` from the target model's tokenizer folder
  (tokens.HFTokenCounter) unless `count_tokens` is given; neither → regex approximation;
- `protect_kinds` / `protect_patterns`: build the `protector` (protect.Protector) unless
  `protector` is given (not for identity);
- `device` ("auto" | "cpu" | "cuda"): passed to compressors that run a model on torch
  (extractive, llmlingua2, longllmlingua) and dropped for the others (identity,
  fast_extractive: numpy on the CPU), so one setting serves every compressor.

Unknown names raise ValueError; unknown options raise TypeError (from the constructor).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any

from compressors.base import Compressor

# name -> (module, class)
REGISTRY: Mapping[str, tuple[str, str]] = {
    "identity": ("compressors.identity", "IdentityCompressor"),
    "extractive": ("compressors.extractive", "ExtractiveCompressor"),
    "fast_extractive": ("compressors.fast_extractive.compressor", "FastExtractiveCompressor"),
    "llmlingua2": ("compressors.llmlingua2.compressor", "LLMLingua2Compressor"),
    "longllmlingua": ("compressors.longllmlingua", "LongLLMLinguaCompressor"),
}


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def _prepare(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    from compressors.protect import KINDS, Protector
    from compressors.tokens import make_token_counter

    kwargs = dict(options)
    tokenizer_path = kwargs.pop("tokenizer_path", None)
    if kwargs.get("count_tokens") is None:
        kwargs["count_tokens"] = make_token_counter(tokenizer_path)
    kinds = kwargs.pop("protect_kinds", None)
    patterns = kwargs.pop("protect_patterns", None)
    wanted = kinds is not None or patterns is not None
    if wanted and name != "identity" and kwargs.get("protector") is None:
        kwargs["protector"] = Protector(KINDS if kinds is None else kinds, patterns or ())
    return kwargs


def construct(cls: type, name: str, options: Mapping[str, Any]) -> Compressor:
    """`cls(**options)` with the options above resolved as for the registered `name`
    (its class or a subclass: bench/lib/variants builds its variants through this)."""
    kwargs = _prepare(name, options)
    if "device" in kwargs and "device" not in inspect.signature(cls).parameters:
        kwargs.pop("device")
    return cls(**kwargs)


def build_compressor(name: str, options: Mapping[str, Any] | None = None) -> Compressor:
    """A new compressor instance; models load lazily on its first compress()."""
    if name not in REGISTRY:
        raise ValueError(f"unknown compressor {name!r}; known: {sorted(REGISTRY)}")
    module_name, class_name = REGISTRY[name]
    cls = getattr(importlib.import_module(module_name), class_name)
    return construct(cls, name, options or {})


def accepted_options(name: str) -> frozenset[str]:
    """The `options` keys `build_compressor(name, options)` uses: the constructor's
    keyword arguments and the ones `_prepare` turns into them (an unknown name: none)."""
    if name not in REGISTRY:
        return frozenset()
    module_name, class_name = REGISTRY[name]
    cls = getattr(importlib.import_module(module_name), class_name)
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    params = {n for n, p in inspect.signature(cls).parameters.items() if p.kind in kinds}
    built = {"tokenizer_path"} | (
        set() if name == "identity" else {"protect_kinds", "protect_patterns"}
    )
    return frozenset(params | built)

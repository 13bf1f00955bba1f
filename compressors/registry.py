"""Compressors by name. Imports are lazy: importing the registry loads no torch."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from compressors.base import Compressor

REGISTRY: Mapping[str, tuple[str, str]] = {
    "identity": ("compressors.identity", "IdentityCompressor"),
    "extractive": ("compressors.extractive", "ExtractiveCompressor"),
    "llmlingua2": ("compressors.llmlingua2", "LLMLingua2Compressor"),
    "longllmlingua": ("compressors.longllmlingua", "LongLLMLinguaCompressor"),
}


def build_compressor(name: str, options: Mapping[str, Any] | None = None) -> Compressor:
    """Build the compressor `name` with constructor keyword `options`."""
    try:
        module_name, class_name = REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown compressor {name!r}; known: {sorted(REGISTRY)}") from None
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(**dict(options or {}))

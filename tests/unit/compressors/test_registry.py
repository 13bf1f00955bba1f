import subprocess
import sys

import pytest

from compressors import (
    ApproxTokenCounter,
    Budget,
    Compressor,
    ExtractiveCompressor,
    FastExtractiveCompressor,
    HFTokenCounter,
    IdentityCompressor,
    LLMLingua2Compressor,
    LongLLMLinguaCompressor,
    Protector,
)
from compressors.registry import REGISTRY, build_compressor, names


def test_every_name_builds_without_loading_a_model(minilm_path):
    built = {
        "identity": build_compressor("identity"),
        "extractive": build_compressor("extractive", {"model_path": minilm_path}),
        "fast_extractive": build_compressor("fast_extractive", {"device": "cuda"}),
        "llmlingua2": build_compressor("llmlingua2"),
        "longllmlingua": build_compressor("longllmlingua", {"model_path": "/m/smollm2"}),
    }
    assert set(built) == set(names()) == set(REGISTRY)
    classes = (IdentityCompressor, ExtractiveCompressor, FastExtractiveCompressor,
               LLMLingua2Compressor, LongLLMLinguaCompressor)  # fmt: skip
    for (name, compressor), cls in zip(built.items(), classes, strict=True):
        assert isinstance(compressor, cls) and isinstance(compressor, Compressor)
        assert compressor.name == name
        assert compressor.fingerprint().startswith(f"{name}:v")
    assert built["llmlingua2"]._engine is None and built["extractive"]._model is None
    assert built["fast_extractive"]._content is None  # `device` dropped: it runs no torch


def test_device_reaches_torch_compressors_only():
    assert build_compressor("llmlingua2", {"device": "cpu"}).device == "cpu"
    assert build_compressor("extractive", {"device": "cuda"}).device == "cuda"
    assert build_compressor("identity", {"device": "cuda"}).name == "identity"
    with pytest.raises(ValueError, match="CPU only"):
        build_compressor("llmlingua2", {"device": "cuda", "precision": "int8"})


def test_options(minilm_path):
    c = build_compressor("identity", {"tokenizer_path": str(minilm_path)})
    assert isinstance(c.count_tokens, HFTokenCounter)
    assert isinstance(build_compressor("identity").count_tokens, ApproxTokenCounter)
    counter = len
    c = build_compressor("extractive", {"count_tokens": counter, "protect_kinds": ["code"]})
    assert c.count_tokens is counter and c.protector.kinds == ("code",)
    c = build_compressor("llmlingua2", {"protect_patterns": [r"SKU-\d+"]})
    assert c.protector.fingerprint() != Protector().fingerprint()
    assert (
        build_compressor("identity", {"count_tokens": len})
        .compress(["abc"], question="", budget=Budget())
        .tokens_before
        == 3
    )


def test_errors():
    with pytest.raises(ValueError, match="unknown compressor"):
        build_compressor("gzip")
    with pytest.raises(TypeError):
        build_compressor("identity", {"rate": 0.5})
    with pytest.raises(ValueError):
        build_compressor("llmlingua2", {"precision": "int4"})
    with pytest.raises(TypeError):  # bench-only modes are no product options (issue 21)
        build_compressor("llmlingua2", {"engine": "reference"})
    with pytest.raises(TypeError):
        build_compressor("fast_extractive", {"scorer": "bm25"})


def test_importing_the_registry_loads_no_model_library():
    code = (
        "import sys, compressors.registry as r; r.build_compressor('llmlingua2');"
        "r.build_compressor('extractive', {'device': 'auto', 'precision': 'auto'});"
        "r.build_compressor('fast_extractive');"
        "r.build_compressor('longllmlingua', {'model_path': '/m', 'device': 'auto'});"
        "print(sorted(m for m in ('torch', 'transformers', 'llmlingua',"
        " 'sentence_transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

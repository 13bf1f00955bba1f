"""Bench-only variants (bench/lib/variants): built with the registry's option handling,
differing from the product only where they say, and refused where they cannot work."""

import pytest

from bench.lib.variants import build_compressor
from bench.lib.variants.fast_single_signal import SingleSignalFastExtractive
from bench.lib.variants.lingua2_reference import ReferenceLLMLingua2Compressor
from bench.lib.variants.tiktoken_counter import TiktokenCounter
from compressors import FastExtractiveCompressor, LLMLingua2Compressor, Protector


def test_no_variant_is_the_product():
    built = build_compressor("fast_extractive", {"device": "cpu"})
    assert type(built) is FastExtractiveCompressor


def test_single_signal_variants_keep_one_weight_and_the_registry_options():
    bm25 = build_compressor("fast_extractive", {"variant": "bm25", "device": "cuda",
                                                "protect_patterns": [r"SKU-\d+"]})  # fmt: skip
    assert isinstance(bm25, SingleSignalFastExtractive) and bm25.weights == {"bm25": 1.0}
    assert bm25.protector.fingerprint() != Protector().fingerprint()  # resolved, device dropped
    static = build_compressor("fast_extractive", {"variant": "static"})
    assert static.weights == {"cos": 1.0} and static.fingerprint() != bm25.fingerprint()
    assert static.feature_fingerprint() == FastExtractiveCompressor().feature_fingerprint()
    with pytest.raises(ValueError, match="signal must be one of"):
        SingleSignalFastExtractive(signal="tfidf")
    with pytest.raises(TypeError):
        SingleSignalFastExtractive(signal="bm25", weights={"cos": 1.0})


STANDIN = "/not/loaded/lingua2-standin-bert-base-multilingual-cased"  # built, never loaded


def test_the_reference_lingua2_differs_in_its_engine_only():
    options = {"model_path": STANDIN, "device": "cpu", "precision": "fp32"}
    ours = build_compressor("llmlingua2", options)
    reference = build_compressor("llmlingua2", {**options, "variant": "reference"})
    assert isinstance(reference, ReferenceLLMLingua2Compressor)
    assert type(ours) is LLMLingua2Compressor and reference.device == "cpu"  # device kept
    assert reference.fingerprint() == ours.fingerprint().replace("engine=fast", "engine=reference")
    assert reference._engine is None  # llmlingua loads on the first compress, not here
    with pytest.raises(ValueError, match="bf16"):
        ReferenceLLMLingua2Compressor(model_path=STANDIN, precision="bf16")


def test_unknown_variants_are_refused():
    with pytest.raises(ValueError, match="no variant 'reference' of 'fast_extractive'"):
        build_compressor("fast_extractive", {"variant": "reference"})
    with pytest.raises(ValueError, match="no variant"):
        build_compressor("identity", {"variant": "bm25"})


def test_tiktoken_counter_counts_cl100k_tokens():
    count = TiktokenCounter()
    assert count("hello world") == 2 and count.name == "tiktoken:cl100k_base"

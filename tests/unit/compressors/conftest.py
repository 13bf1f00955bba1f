"""Fixtures for compressor tests: offline hub, seeded tiktoken cache, small local models.

Models are built once per session in a temp folder: a 2-layer stand-in LLMLingua-2
classifier (deploy.local.build_lingua_standin, random weights) and a tiny random
causal LM with a byte-level BPE tokenizer trained on stdlib docstrings. Neither says
anything about compression quality; they exercise the real code paths.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from deploy.local import build_lingua_standin
from tests.support.models import _torch, minilm_path, static_model  # noqa: F401 - fixtures

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tiktoken_cache(tmp_path_factory):
    """cl100k_base seeded into a temp TIKTOKEN_CACHE_DIR (llmlingua's constructor needs it)."""
    from compressors import ensure_tiktoken_cache

    folder = tmp_path_factory.mktemp("tiktoken")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(folder))
        ensure_tiktoken_cache(folder)
        yield folder


@pytest.fixture(scope="session")
def builder():
    return build_lingua_standin


@pytest.fixture(scope="session")
def lingua_standin(tmp_path_factory, builder) -> Path:
    """A small stand-in LLMLingua-2 model (2 layers, hidden 128, random weights)."""
    _torch()
    out = tmp_path_factory.mktemp("models") / "standin-bert-base-multilingual-cased"
    args = argparse.Namespace(
        seed=0, layers=2, hidden=128, vocab_size=4000, head_scale=8.0,
        corpus_chars=300_000, encoder_from=None,
    )  # fmt: skip
    builder.build(out, args)
    return out


@pytest.fixture(scope="session")
def tiny_causal_lm(tmp_path_factory, builder) -> Path:
    """A tiny random Llama (2 layers, hidden 64) + byte-level BPE tokenizer, saved locally."""
    torch = _torch()
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = tmp_path_factory.mktemp("models") / "tiny-llama"
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(builder.stdlib_corpus(300_000), trainer=trainer)
    eos = tok.token_to_id("<|endoftext|>")
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>"
    )
    wrapped.save_pretrained(str(out))
    config = LlamaConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=2048, eos_token_id=eos, pad_token_id=eos, bos_token_id=eos,
        architectures=["LlamaForCausalLM"],
    )  # fmt: skip
    torch.manual_seed(0)
    LlamaForCausalLM(config).eval().save_pretrained(out, safe_serialization=True)
    return out

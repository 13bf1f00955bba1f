"""Small local models the compressor tests and the app tests that run a real compressor
share, built once per session: MiniLM's own folder (extractive) and a static-embedding
folder laid out like build_static_minilm.py's (fast_extractive)."""

from __future__ import annotations

from pathlib import Path

import pytest


def _torch(threads: int = 1):
    import torch

    torch.set_num_threads(threads)
    return torch


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    from compressors.extractive import default_model_path

    _torch()
    return default_model_path()


@pytest.fixture(scope="session")
def static_model(tmp_path_factory, minilm_path) -> Path:
    """A static model folder laid out like build_static_minilm.py's: MiniLM's real
    WordPiece tokenizer, but a seeded RANDOM 32-dim table (distilling the real one takes
    ~20 s): lexical (BM25) behaviour is real, embedding similarity is noise."""
    import numpy as np
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer

    out = tmp_path_factory.mktemp("models") / "static-test"
    out.mkdir()
    tokenizer = Tokenizer.from_file(str(minilm_path / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    tokenizer.save(str(out / "tokenizer.json"))
    rng = np.random.default_rng(0)
    table = rng.standard_normal((tokenizer.get_vocab_size(), 32)).astype(np.float16)
    save_file({"embeddings": table}, str(out / "model.safetensors"))
    return out

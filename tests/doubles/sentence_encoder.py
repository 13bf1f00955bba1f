"""A stand-in sentence encoder for the `extractive` compressor (its `_model`): a fixed
unit vector per text, and every text it encodes counted, which is what an embedding
cache hit saves, and so what a tenant could measure by time (issue 44)."""

from __future__ import annotations

import zlib

import numpy as np


class CountingEncoder:
    def __init__(self, dim: int = 8) -> None:
        self.dim = dim
        self.encoded: list[str] = []

    def encode(self, texts, **_) -> np.ndarray:
        self.encoded += texts
        rows = [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(self.dim)
                for t in texts]  # fmt: skip
        return np.stack([r / np.linalg.norm(r) for r in rows]).astype(np.float32)

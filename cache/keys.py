"""Stable content keys: sha256 over length-prefixed parts (no ambiguity between
("ab", "c") and ("a", "bc")), hex encoded."""

from __future__ import annotations

import hashlib


def content_key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode()
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


def memo_key(compressor_fingerprint: str, document: str, question: str | None) -> str:
    """Key of one compressed document; the question only for question-aware compressors."""
    parts = ("doc", compressor_fingerprint, document)
    if question is not None:
        parts += (question,)
    return "memo:" + content_key(*parts)

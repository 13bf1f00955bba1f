"""A compressor's fingerprint, built one way for every model-backed compressor:
`name:vVERSION:model=ID`, then the compressor's own settings in its own order (the
token counter among them, `counter_field`), then the protector's fingerprint.

Why: the fingerprint is the compressor's part of every memo key (cache/keys.py
`memo_key`), so two compressors that would keep different text must never share one;
the head and the tail are the same for all of them, and each one's settings are what
makes its own output. The strings are those the compressors wrote before this helper
existed (the memo keys already stored stay valid)."""

from __future__ import annotations

from typing import Any

from compressors.tokens import counter_name


def fingerprint(compressor: Any, model: str, *fields: str) -> str:
    """`compressor`'s name, version and `model`, `fields` in order, its protector's."""
    head = f"{compressor.name}:v{compressor.version}:model={model}"
    return ":".join((head, *fields, compressor.protector.fingerprint()))


def counter_field(compressor: Any) -> str:
    """The token counter's field (its stable name, compressors/tokens.py)."""
    return f"counter={counter_name(compressor.count_tokens)}"

"""`compression.options`, checked against the compressor they are for.

The proxy builds three constructor arguments itself: `count_tokens` from
`compression.tokenizer` (or the backend model's own tokenizer: proxy/compression/token_counter.py),
which is why a `tokenizer_path` entry never took effect, and `device` from
`compression.device` (dropped for compressors without torch). An entry naming one of
them, or one the compressor has no parameter for, would change nothing, so ragtrim
refuses to start and names the setting to use, or the entries that compressor accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compressors.registry import REGISTRY, accepted_options

OWNED = {
    "tokenizer_path": "compression.tokenizer (RAGTRIM_COMPRESSION__TOKENIZER)",
    "count_tokens": "compression.tokenizer (RAGTRIM_COMPRESSION__TOKENIZER)",
    "device": "compression.device (RAGTRIM_COMPRESSION__DEVICE)",
}


def check_options(compressor: str, options: Mapping[str, Any]) -> None:
    """ValueError for the first entry of `options` that `compressor` would ignore."""
    if compressor not in REGISTRY:
        return  # build_compressor names the known compressors
    accepted = sorted(accepted_options(compressor) - set(OWNED))
    for key in options:
        if key in OWNED:
            raise ValueError(
                f"compression.options.{key} is not used by the proxy: set {OWNED[key]}"
            )
        if key not in accepted:
            raise ValueError(
                f"compression.options.{key}: compressor {compressor!r} has no such option; "
                f"it accepts: {', '.join(accepted)}"
            )

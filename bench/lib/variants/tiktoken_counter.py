"""cl100k_base token counts: what llmlingua's own code counts its budget in.

Why here and not in compressors/tokens.py: the product counts in the target model's
tokens (HFTokenCounter) or approximates them; cl100k_base only matters where our
LLMLingua-2 is compared word for word with llmlingua's (bench.compress_cost and the
byte-identity tests), whose percentile threshold is weighted by cl100k tokens.
The encoding is the packaged file (compressors.load_cl100k), never a download.
"""

from __future__ import annotations

import threading


class TiktokenCounter:
    """cl100k_base counts, the encoding loaded on the first call."""

    name = "tiktoken:cl100k_base"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._encoding = None

    def __call__(self, text: str) -> int:
        if self._encoding is None:
            with self._lock:
                if self._encoding is None:
                    from compressors import load_cl100k

                    self._encoding = load_cl100k()
        return len(self._encoding.encode_ordinary(text))

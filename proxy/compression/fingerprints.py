"""The compressor's part of every memo and stable-form key, per rate, made once.

The fingerprint joins the compressor's name, model, settings and its token counter's
name (compressors/_fingerprint.py). Everything in it is fixed once the compressor has
loaded (an `auto` precision is chosen by the load: compressors/extractive.py), except
the counter's name: the target model's tokenizer is found once a backend names its
model (proxy/compression/token_counter.py). So fingerprints are kept only once `ready`
says the compressor has loaded (the engine's warm-up), keyed by the counter's name.
Rates come from clients (`x-ragtrim-rate`), so the table is bounded: past MAX_KEPT
entries it starts over. Why: docs/decisions/0044-compression-service-path.md.
"""

from __future__ import annotations

from collections.abc import Callable

from compressors import AUTO, Compressor, TokenCounter
from compressors.tokens import counter_name

MAX_KEPT = 64


class Fingerprints:
    def __init__(
        self,
        compressor: Compressor,
        count: TokenCounter | None = None,
        ready: Callable[[], bool] = lambda: True,
    ):
        self.compressor = compressor
        self.count = count
        self.ready = ready
        self._made: dict[tuple[str, float | str], str] = {}

    def __call__(self, rate: float | str) -> str:
        key = (counter_name(self.count) if self.count is not None else "", rate)
        made = self._made.get(key)
        if made is None:
            shown = rate if rate == AUTO else f"{rate:.3f}"
            made = f"{self.compressor.fingerprint()}|rate={shown}"
            if self.ready():
                if len(self._made) >= MAX_KEPT:
                    self._made.clear()
                self._made[key] = made
        return made

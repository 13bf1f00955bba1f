"""Token counts in the target model's tokenizer, not tiktoken.

The tokenizer dir comes from settings, or else from the backend itself: vLLM's
/v1/models card names the model's `root`; when that dir exists locally (local vLLM,
sidecar with a shared volume) its tokenizer is used. Otherwise an approximation,
and the `name` says so.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from pathlib import Path

from compressors import ApproxTokenCounter, HFTokenCounter
from compressors.tokens import count_spans, count_spans_many
from proxy.backends.endpoint import EndpointPool


class TargetTokenCounter:
    def __init__(self, pool: EndpointPool, explicit_dir: str):
        self.pool = pool
        self._counter: HFTokenCounter | ApproxTokenCounter | None = (
            HFTokenCounter(explicit_dir) if explicit_dir else None
        )
        self._approx = ApproxTokenCounter()

    @property
    def name(self) -> str:
        return getattr(self._resolve(), "name", "approx")

    def _resolve(self):
        if self._counter is None:
            root = self._local_root()
            if root is None:
                return self._approx  # try again once a backend reports its model
            self._counter = HFTokenCounter(root)
        return self._counter

    def _local_root(self) -> str | None:
        return local_model_root(self.pool)

    def __call__(self, text: str) -> int:
        return self._resolve()(text)

    def count_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> tuple[int, list[int]]:
        """The resolved counter's one-encode count of every span of `text`
        (compressors/tokens.py): the total and each span's count."""
        return count_spans(self._resolve(), text, spans)

    def count_spans_many(
        self,
        texts: Sequence[str],
        spans: Sequence[Sequence[tuple[int, int]]],
        scope: str | None = None,
    ):
        return count_spans_many(self._resolve(), texts, spans, scope)


def local_model_root(
    pool: EndpointPool, model: str | None = None, known: Container[str] = ()
) -> str | None:
    """A model root (its tokenizer.json) on this machine, from the backends' cards.

    Every healthy backend's cards, not the pool's merged view (first backend wins per
    model id there): one replica's root may be local when another's is not. `model`
    narrows to the cards of that served name. Roots in `known` (tokenizers already
    loaded from them) are taken without a stat: the kv scorer asks for every request."""
    for ep in pool.healthy():
        for card in ep.model_cards:
            if model is not None and card.get("id") != model:
                continue
            root = card.get("root") or ""
            if root and (root in known or (Path(root) / "tokenizer.json").exists()):
                return root
    return None

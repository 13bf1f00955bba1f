"""The body adapter's base (proxy/prompt/body.py): a body ragtrim does not look into,
and the one write every adapter goes through (`set`, `remove`, `encode`).

Its own module so the adapters of other files (proxy/prompt/view.py: the Responses and
Messages APIs) subclass it without an import cycle through body.py's `prompt_for`.
"""

from __future__ import annotations

from typing import Any

from proxy.prompt.exact_json import dumps
from proxy.prompt.prefix import CanonicalResult, CanonicalRules
from proxy.prompt.segment import Position, Segmentation, Segmenter


class Prompt:
    """A body ragtrim does not look into (the pass-through routes)."""

    def __init__(self, body: dict[str, Any]):
        self.body = body
        self.modified = False

    @property
    def model(self) -> str | None:
        """The model asked for; None when the body names none (vLLM then answers with
        its served model) or on a pass-through route's body."""
        model = self.body.get("model")
        return model if isinstance(model, str) else None

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    def set(self, key: str, value: Any) -> None:
        """THE write: every change to the body goes through here (or `remove`)."""
        if self.body.get(key) != value:
            self.body[key] = value
            self.modified = True

    def remove(self, key: str) -> None:
        if key in self.body:
            del self.body[key]
            self.modified = True

    def encode(self, raw: bytes) -> bytes:
        """The bytes to send upstream: the client's own unless something changed.
        Integers beyond 64 bits stay exact (proxy/prompt/exact_json.py), at orjson's
        speed: this runs on the event loop."""
        if not self.modified:
            return raw
        return dumps(self.body)

    def request_usage(self) -> bool:
        """Make a streamed request report usage; True when the client had not asked.
        Only the final usage chunk: vLLM honours `continuous_usage_stats` only with
        `include_usage`, so a client that sent it alone gets no usage from vLLM, and
        must get none through ragtrim either."""
        options = self.body.get("stream_options") or {}
        if not self.stream or not isinstance(options, dict) or options.get("include_usage"):
            return False
        added = {**options, "include_usage": True}
        if options.get("continuous_usage_stats"):
            added["continuous_usage_stats"] = False
        self.set("stream_options", added)
        return True

    def segment(self, segmenter: Segmenter, field: dict | None) -> Segmentation | None:
        return None

    def apply(self, seg: Segmentation, texts: list[str]) -> None:
        raise ValueError("nothing to apply a segmentation to")

    def canonicalize(self, rules: CanonicalRules, end: Position | None) -> CanonicalResult | None:
        return None

    def replay(self, static_end: Position | None) -> dict[str, Any] | None:
        """The static part of this request as a max_tokens=1 request (for warm-up)."""
        return None

    def _replay_head(self) -> dict[str, Any]:
        head: dict[str, Any] = {"max_tokens": 1, "temperature": 0}
        if self.model is not None:  # none named: vLLM's served model, as for the client
            head["model"] = self.model
        if "cache_salt" in self.body:
            head["cache_salt"] = self.body["cache_salt"]
        return head

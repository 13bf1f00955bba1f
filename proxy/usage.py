"""Reading vLLM's own account of a request: usage and cached tokens.

ragtrim asks for usage on every streamed request (`stream_options.include_usage`);
`UsageTap` watches the SSE bytes for the final usage chunk (`choices: []`) and, when
the client had not asked for it, removes that chunk so the client sees exactly the
stream it asked for. Whole events pass through unchanged, as they arrive.
"""

from __future__ import annotations

import json
import time
from typing import Any

import orjson

_EMPTY_CHOICES = (b'"choices":[]', b'"choices": []')


def cached_tokens(usage: dict[str, Any] | None) -> int:
    details = (usage or {}).get("prompt_tokens_details") or {}
    return int(details.get("cached_tokens") or 0)


def usage_from_json(body: bytes) -> dict[str, Any] | None:
    try:
        usage = orjson.loads(body).get("usage")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return usage if isinstance(usage, dict) else None


class UsageTap:
    def __init__(self, strip: bool):
        self.strip = strip
        self.usage: dict[str, Any] | None = None
        self.first_chunk_at: float | None = None
        self._tail = b""

    def __call__(self, chunk: bytes) -> bytes:
        if self.first_chunk_at is None:
            self.first_chunk_at = time.perf_counter()
        if not self._tail and chunk.endswith(b"\n\n") and b'"usage"' not in chunk:
            return chunk  # the common case: whole events, nothing to read
        events = (self._tail + chunk).split(b"\n\n")
        self._tail = events.pop()
        kept = [e + b"\n\n" for e in events if not self._is_usage_event(e)]
        return b"".join(kept)

    def flush(self) -> bytes:
        tail, self._tail = self._tail, b""
        return tail

    def _is_usage_event(self, event: bytes) -> bool:
        if b'"usage"' not in event or not any(m in event for m in _EMPTY_CHOICES):
            return False
        try:
            usage = json.loads(event.removeprefix(b"data: ")).get("usage")
        except (ValueError, AttributeError):
            return False
        if isinstance(usage, dict):
            self.usage = usage
        return self.strip

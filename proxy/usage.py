"""Reading vLLM's own account of a request: usage and cached tokens.

ragtrim asks for usage on every streamed request (`stream_options.include_usage`);
`UsageTap` watches the SSE bytes for the final usage chunk (`choices: []`) and, when
the client had not asked for it, removes that chunk so the client sees exactly the
stream it asked for. Whole events pass through unchanged, as soon as they end
(proxy/sse.py: every delimiter the SSE spec allows; a bounded buffer).

A backend's usage is data from the network: `sane_usage` keeps it only when every
count is a non-negative integer. Anything else (`"prompt_tokens": "lots"`, a list) is
ignored and counted (`bad`): never an exception after a good completion (issue 23).

A non-streamed body is read as chunks (proxy/upstream/exchange.py) and never joined:
`usage_from_chunks` finds the last `"usage":` key and decodes only what follows it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from proxy.sse import EventSplitter, event_data

_EMPTY_CHOICES = (b'"choices":[]', b'"choices": []')
_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")
_USAGE_KEY = re.compile(rb'(?<!\\)"usage"\s*:\s*')
_USAGE_WINDOW = 64 << 10  # a usage object is a few hundred bytes; decode at most this
_DECODER = json.JSONDecoder()


def _count(value: Any) -> bool:
    return value is None or (type(value) is int and value >= 0)


def sane_usage(usage: Any) -> dict[str, Any] | None:
    """`usage` if every count in it is a non-negative int (or absent), else None."""
    if not isinstance(usage, dict) or not all(_count(usage.get(k)) for k in _COUNTS):
        return None
    details = usage.get("prompt_tokens_details")
    if details is not None and not (
        isinstance(details, dict) and _count(details.get("cached_tokens"))
    ):
        return None
    return usage


def cached_tokens(usage: dict[str, Any] | None) -> int:
    details = (usage or {}).get("prompt_tokens_details") or {}
    return int(details.get("cached_tokens") or 0)


def usage_from_chunks(chunks: Sequence[bytes]) -> tuple[Any, bool]:
    """(the raw `usage` value of a JSON body, whether the key was there), decoding only
    a window after the last `"usage":` key; chunks are scanned from the end, and no
    more than one chunk plus the window is ever copied."""
    for i in range(len(chunks) - 1, -1, -1):
        head = len(chunks[i])
        probe = chunks[i] + chunks[i + 1][:8] if i + 1 < len(chunks) else chunks[i]
        if b'"usage"' not in probe:
            continue
        window, j = chunks[i], i + 1
        while j < len(chunks) and len(window) < head + _USAGE_WINDOW:
            window += chunks[j][: head + _USAGE_WINDOW - len(window)]
            j += 1
        starts = [m for m in _USAGE_KEY.finditer(window) if m.start() < head]
        if not starts:
            continue
        text = window[starts[-1].end() :].decode("utf-8", "replace")
        try:
            return _DECODER.raw_decode(text)[0], True
        except ValueError:
            return None, True
    return None, False


class UsageTap:
    def __init__(self, strip: bool, max_event: int = 4 << 20):
        self.strip = strip
        self.usage: dict[str, Any] | None = None
        self.bad = 0  # usage chunks whose counts were not integers
        self._events = EventSplitter(max_event)

    def __call__(self, chunk: bytes) -> bytes:
        if not self._events.pending and chunk.endswith(b"\n\n") and b'"usage"' not in chunk:
            return chunk  # the common case: whole events, nothing to read
        events = self._events.feed(chunk)
        return b"".join(e for e in events if not self._is_usage_event(e))

    def flush(self) -> bytes:
        return self._events.flush()

    def _is_usage_event(self, event: bytes) -> bool:
        """The usage chunk ragtrim asked for (stripped when the client did not); its
        counts are recorded only when sane."""
        if b'"usage"' not in event or not any(m in event for m in _EMPTY_CHOICES):
            return False
        try:
            data = json.loads(event_data(event))
        except ValueError:
            return False
        if not isinstance(data, dict) or "usage" not in data or data.get("choices") != []:
            return False
        self.usage = sane_usage(data["usage"])
        self.bad += self.usage is None and data["usage"] is not None
        return self.strip

"""One analysis per document: what every request over the same bytes computed again.

Why: at GPU speed a follow-up over seen documents is answered in 12-30 ms, and ragtrim
judged the same documents' scripts and split them into sentences again on every turn
(issue 43: the readable-script check and the stable form's sentence sets were the
largest shares of a follow-up's Python time; 3.4 ms for a 16k-token set's sentences
alone). Each analysis is a pure function of one text, so its result is kept by
content: `get(kind, tenant, text, compute)` runs `compute(text)` once per (kind,
tenant, text) and hands back the same result after.

Keyed by tenant, like every content cache (cache/keys.py, issue 35): a hit is faster
than a miss, so no tenant may learn from the time whether another sent a document.
In process only: an analysis costs microseconds per kilobyte, less than a Redis round
trip would. Bounded in bytes (an estimate of what Python holds) and shared fairly
between tenants (cache/lru.py). Thread-safe: the compress stage runs big contexts'
analyses in worker threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from cache.keys import content_key, tenant_tag
from cache.lru import OVERHEAD, ByteLRU

T = TypeVar("T")
ANALYSIS_BYTES = 32 << 20  # compression.analysis_bytes' default


def analysis_key(kind: str, tenant: str, text: str) -> str:
    tag = tenant_tag(tenant)
    return f"ana:{tag + ':' if tag else ''}{kind}:{content_key('ana', kind, tenant, text)}"


def held_bytes(value: Any) -> int:
    """What Python holds for a result, roughly: a list of spans or a flag."""
    if isinstance(value, list | tuple):
        return OVERHEAD + 72 * len(value)
    return OVERHEAD


class DocumentAnalyses:
    def __init__(self, max_bytes: int = ANALYSIS_BYTES):
        self.order = ByteLRU(max_bytes)
        self._values: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._values)

    def get(self, kind: str, tenant: str, text: str, compute: Callable[[str], T]) -> T:
        """`compute(text)`, computed once per (kind, tenant, text) while kept."""
        key = analysis_key(kind, tenant, text)
        with self._lock:
            if key in self._values:
                self.hits += 1
                self.order.touch(key)
                return self._values[key]
        value = compute(text)  # outside the lock: another thread may compute it too
        with self._lock:
            self.misses += 1
            self._values[key] = value
            for old in self.order.set(key, len(key) + held_bytes(value)):
                self._values.pop(old, None)
        return value

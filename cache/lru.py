"""Least-recently-used order of keys with their sizes, under a byte cap.

Why bytes and not items: the in-process store was capped at 100,000 items, so 400
unique 1 MB system prompts (their replay bodies) grew RSS by 380 MB, and it stayed
(issue 23); a cap in items bounds nothing when one item can be a megabyte. MemoryStore
(cache/store.py) tells this table the size of each key it holds, of any kind (a value,
a hash, a sorted set), and drops the keys it hands back, least recently used first.

Sizes are estimates of what Python holds: the key's and the value's lengths plus
OVERHEAD bytes per key, hash field or set member (the objects around them).
"""

from __future__ import annotations

from collections import OrderedDict

OVERHEAD = 64
# The in-process store's byte cap by default: store.memory_bytes (proxy/config/tenancy.py).
MEMORY_BYTES = 128 << 20


class ByteLRU:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.total = 0
        self._sizes: OrderedDict[str, int] = OrderedDict()

    def size(self, key: str) -> int:
        return self._sizes.get(key, 0)

    def set(self, key: str, size: int) -> list[str]:
        """Record `key` at `size` bytes as most recently used; the keys to evict (least
        recently used first; `key` itself only when it alone is over the cap)."""
        self.total += size - self._sizes.get(key, 0)
        self._sizes[key] = size
        self._sizes.move_to_end(key)
        evicted = []
        while self.total > self.max_bytes and self._sizes:
            old, old_size = self._sizes.popitem(last=False)
            self.total -= old_size
            evicted.append(old)
        return evicted

    def touch(self, key: str) -> None:
        if key in self._sizes:
            self._sizes.move_to_end(key)

    def drop(self, key: str) -> None:
        self.total -= self._sizes.pop(key, 0)

    def clear(self) -> None:
        self._sizes.clear()
        self.total = 0

"""Least-recently-used order of keys with their sizes, under a byte cap, shared fairly.

MemoryStore (cache/store.py) tells this table the size of each key it holds, of any
kind (a value, a hash, a sorted set), and drops the keys it hands back. Why bytes, and
why shared fairly: docs/decisions/0014-content-caches-bytes-tenants-expiry.md.

Each key has an owner (`owner_of`: the tenant tag that
cache/keys.py puts in memo and feature key names; "" for everything else), and when the
cap is exceeded the least recently used key of the owner holding the most bytes goes
first. A flood therefore evicts its own entries as soon as it holds more than anyone
else, and an owner below that share loses nothing to it: max-min fairness, the policy
of per-tenant cache partitioning without fixed quotas (no byte is idle while one tenant
alone is busy). Without tenancy every key has owner "" and this is a plain LRU.

Sizes are estimates of what Python holds: the key's and the value's lengths plus
OVERHEAD bytes per key, hash field or set member (the objects around them). An eviction
costs one pass over the owners (tenants are configured keys: a handful).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from cache.keys import owner_of

OVERHEAD = 64
# The in-process store's byte cap by default: store.memory_bytes (proxy/config/tenancy.py).
MEMORY_BYTES = 128 << 20


class ByteLRU:
    def __init__(
        self, max_bytes: int, owner: Callable[[str], str] = owner_of, max_items: int | None = None
    ) -> None:
        self.max_bytes = max_bytes
        self.max_items = max_items
        self.total = 0
        self.owner = owner
        self._sizes: dict[str, int] = {}
        self._orders: dict[str, OrderedDict[str, None]] = {}  # owner -> its keys, LRU first
        self._owned: dict[str, int] = {}  # owner -> its bytes

    def __len__(self) -> int:
        return len(self._sizes)

    def size(self, key: str) -> int:
        return self._sizes.get(key, 0)

    def owned(self, owner: str) -> int:
        """The bytes `owner` holds."""
        return self._owned.get(owner, 0)

    def set(self, key: str, size: int) -> list[str]:
        """Record `key` at `size` bytes as most recently used; the keys to evict (the
        heaviest owner's least recently used first; `key` itself when it alone is over
        the cap, or when its owner is the heaviest and holds nothing older)."""
        owner = self.owner(key)
        change = size - self._sizes.get(key, 0)
        self.total += change
        self._owned[owner] = self._owned.get(owner, 0) + change
        self._sizes[key] = size
        order = self._orders.setdefault(owner, OrderedDict())
        order[key] = None
        order.move_to_end(key)
        evicted = []
        while self._sizes and (over := self._over()):
            victim = next(iter(self._orders[self._heaviest(over)]))
            self.drop(victim)
            evicted.append(victim)
        return evicted

    def _over(self) -> str:
        """Which cap is exceeded: "bytes", "items" or "" (none)."""
        if self.total > self.max_bytes:
            return "bytes"
        if self.max_items is not None and len(self._sizes) > self.max_items:
            return "items"
        return ""

    def _heaviest(self, by: str) -> str:
        """The owner holding the most of what is over its cap (bytes or keys)."""
        if by == "items":
            return max(self._orders, key=lambda o: len(self._orders[o]))
        return max(self._owned, key=self._owned.__getitem__)

    def touch(self, key: str) -> None:
        if key in self._sizes:
            self._orders[self.owner(key)].move_to_end(key)

    def drop(self, key: str) -> None:
        size = self._sizes.pop(key, None)
        if size is None:
            return
        owner = self.owner(key)
        self.total -= size
        order = self._orders[owner]
        del order[key]
        if order:
            self._owned[owner] -= size
        else:  # an owner with nothing left is forgotten: the table stays bounded
            del self._orders[owner], self._owned[owner]

    def clear(self) -> None:
        self._sizes.clear()
        self._orders.clear()
        self._owned.clear()
        self.total = 0


class ValueLRU:
    """Values by key under a byte cap, shared fairly as ByteLRU shares (the feature
    cache's in-process tier, cache/features.py). A value larger than the whole cap is
    never kept."""

    def __init__(self, max_bytes: int, owner: Callable[[str], str] = owner_of) -> None:
        self.max_bytes = max_bytes
        self.order = ByteLRU(max_bytes, owner)
        self._data: dict[str, bytes] = {}

    @property
    def bytes(self) -> int:
        return self.order.total

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: str) -> bytes | None:
        value = self._data.get(key)
        if value is not None:
            self.order.touch(key)
        return value

    def put(self, key: str, value: bytes) -> None:
        if len(value) > self.max_bytes:
            return
        self._data[key] = value
        for old in self.order.set(key, len(value)):
            del self._data[old]

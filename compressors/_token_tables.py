"""Tables of memoized chunk tokens (compressors/_chunked_tokens.py): one table, and one
table per scope, bounded in all.

A scope is whoever's text a table may learn from (the proxy passes the tenant): a chunk
learnt from one tenant's document makes that tenant's later requests cheaper and no one
else's, so no request's cost tells one tenant what another sent. Once all
tables hold `capacity` tokens (~20 MB at 262,144; measured: 56,724 chunks holding 124k
tokens took 10 MB) the largest goes whole, as the content caches evict the heaviest
owner first (docs/decisions/0014): a tenant's flood drops its own table, and a tenant
holding less loses nothing to it. What a tenant can read from a drop is that it held
the most, not what another sent.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

import numpy as np

BITS = 16  # an entry: (where its tokens start in the table) << BITS | how many
CAPACITY = 262_144  # tokens in all scopes' tables


class TokenTable:
    """Memoized chunks: chunk -> entry, and one array of every entry's tokens (ids,
    starts and ends within the chunk), appended to, never changed in place: a reader
    looks its chunks up, then reads `tokens`, which holds every entry it found."""

    def __init__(self) -> None:
        self.entries: dict[str, int] = {}
        self.tokens = np.zeros((3, 0), np.int32)
        self.used = 0

    def add(self, chunks: Sequence[str], tokens: np.ndarray, cuts: np.ndarray) -> None:
        """`tokens[:, cuts[k]:cuts[k + 1]]` are `chunks[k]`'s."""
        n = tokens.shape[1]
        if self.used + n > self.tokens.shape[1]:
            grown = np.zeros((3, max(2 * self.tokens.shape[1], self.used + n)), np.int32)
            grown[:, : self.used] = self.tokens[:, : self.used]
            self.tokens = grown  # a reader holding the old array still finds its entries
        self.tokens[:, self.used : self.used + n] = tokens
        codes = ((self.used + cuts[:-1]) << BITS) | np.diff(cuts)
        self.used += n
        self.entries.update(zip(chunks, codes.tolist(), strict=True))


Learnt = tuple[Sequence[str], np.ndarray, np.ndarray]  # TokenTable.add's arguments


class ScopedTables:
    """A table per scope, the largest dropped first past `capacity` tokens in all."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self.used = 0  # tokens in the tables held
        self._tables: dict[str, TokenTable] = {}
        self._lock = threading.Lock()

    def get(self, scope: str) -> TokenTable | None:
        return self._tables.get(scope)

    def learn(self, scope: str, seen: TokenTable | None, learnt: Iterable[Learnt]) -> TokenTable:
        """Add to the table the caller read (`seen`: what it found known is there), or
        the scope's, or a new one; the table, to read the request's tokens from. A table
        dropped meanwhile is still written and returned, and freed with its readers."""
        with self._lock:
            table = seen or self._tables.get(scope) or TokenTable()
            before = table.used
            for chunks, tokens, cuts in learnt:
                table.add(chunks, tokens, cuts)
            held = self._tables.get(scope)
            if held is None or held is table:
                self.used += table.used - (before if held is table else 0)
                self._tables[scope] = table
            while self.used > self.capacity and self._tables:
                largest = max(self._tables, key=lambda s: self._tables[s].used)
                self.used -= self._tables.pop(largest).used
        return table

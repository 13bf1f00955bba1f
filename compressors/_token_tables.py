"""Tables of memoized chunk tokens (compressors/_chunked_tokens.py): one table, and one
table per scope, bounded in all.

A scope is whoever's text a table may learn from (the proxy passes the tenant): a chunk
learnt from one tenant's document makes that tenant's later requests cheaper and no one
else's, so no request's cost tells one tenant what another sent (issue 35). Tables are
dropped, least recently used first, once all of them hold `capacity` tokens: ~20 MB at
262,144 (measured: 56,724 chunks holding 124k tokens took 10 MB). What a tenant can read
from that is that other tenants were busy, not what they sent.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np

BITS = 16  # an entry: (where its tokens start in the table) << BITS | how many
CAPACITY = 262_144  # tokens in all scopes' tables


class TokenTable:
    """Memoized chunks: chunk -> entry, and one array of every entry's tokens (ids,
    starts and ends within the chunk), appended to, never changed in place: a reader
    looks its chunks up, then reads `tokens`, which holds every entry it found."""

    def __init__(self, size: int = 0) -> None:
        self.entries: dict[str, int] = {}
        self.tokens = np.zeros((3, size), np.int32)
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
    """A table per scope, the least recently used dropped first past `capacity` tokens."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self.used = 0  # tokens in the tables held
        self._tables: OrderedDict[str, TokenTable] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, scope: str) -> TokenTable | None:
        with self._lock:
            table = self._tables.get(scope)
            if table is not None:
                self._tables.move_to_end(scope)
            return table

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
                self._tables.move_to_end(scope)
            while self.used > self.capacity and self._tables:
                self.used -= self._tables.popitem(last=False)[1].used
        return table

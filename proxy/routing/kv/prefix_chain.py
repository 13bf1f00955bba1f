"""A request's chain hashes, its static prefix's computed once.

The kv_cache scorer hashes every full block of a request (proxy/routing/kv/chain.py):
about 400 blake2b calls for a 6.5k-token prompt, 0.55 ms on one core of the bench host
(Intel Xeon), the largest part of what precise routing costs a request. Most of those
blocks are the static prefix (the system prompt, a tenant's shared context) that
chat_tokens already tokenizes once and caches. Its chain depends only on its ids, the
block size and the first block's extra keys (the cache_salt), so it is kept beside the
cached ids, and a request hashes only the blocks after it, chained from the prefix's
last hash: the same hashes as `chain` over the whole request (a chain commits to every
token before it, and the request's ids start with the prefix's).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from proxy.routing.kv.chain import chain

CHAINS_PER_PREFIX = 8  # (block size, salt) pairs kept a prefix: a fleet has one block size


class StaticPrefix:
    """One cached prefix (static messages, or a conversation's last turn): its rendered
    text, its token ids, its chains. A turn keeps only the text and ids after its
    static prefix (`head`), the ids as a 4-byte array: a tenant's 6k-token context is
    held once, however many of its conversations are remembered."""

    __slots__ = ("head", "own_text", "own", "size", "text_len", "_chains", "_lock")

    def __init__(self, text: str, ids: Sequence[int], head: StaticPrefix | None = None):
        """`text` and `ids`: what follows `head`'s (the whole prefix without one)."""
        self.head, self.own_text, self.own = head, text, ids
        self.size = len(ids) + (head.size if head is not None else 0)
        self.text_len = len(text) + (head.text_len if head is not None else 0)
        self._chains: OrderedDict[tuple[int, str], list[int]] = OrderedDict()
        self._lock = threading.Lock()  # the scorer runs on the loop; warm-up replays too

    @property
    def ids(self) -> list[int]:
        own = self.own if isinstance(self.own, list) else list(self.own)
        return self.head.ids + own if self.head is not None else own

    @property
    def text(self) -> str:
        return self.head.text + self.own_text if self.head is not None else self.own_text

    def starts(self, text: str) -> bool:
        """Whether `text` begins with this prefix's text."""
        at = 0
        if self.head is not None:
            if not self.head.starts(text):
                return False
            at = self.head.text_len
        return text.startswith(self.own_text, at)

    def chain(self, block_size: int, extras: Sequence[Any]) -> list[int]:
        """The hashes of the prefix's full blocks at this size with these extra keys."""
        key = (block_size, repr(list(extras[:1])))  # vLLM puts extra keys on block 0 only
        with self._lock:
            hashes = self._chains.get(key)
            if hashes is not None:
                self._chains.move_to_end(key)
                return hashes
        hashes = chain(self.ids, block_size, extras)
        self.seed(block_size, extras, hashes)
        return hashes

    def seed(self, block_size: int, extras: Sequence[Any], hashes: list[int]) -> None:
        """Keep `hashes` (a chain over ids this prefix starts) as this prefix's chain."""
        key = (block_size, repr(list(extras[:1])))
        with self._lock:
            self._chains[key] = hashes[: self.size // block_size]
            if len(self._chains) > CHAINS_PER_PREFIX:
                self._chains.popitem(last=False)


class TokenIds(list):
    """A request's token ids (a plain list of ints to every reader), with the cached
    prefix they start with, when there is one, the prefix they leave for the
    conversation's next turn (chat_tokens remembers each turn), and their chains by
    (block size, first block's extra keys), hashed once (in the scorer's `prepare`)."""

    __slots__ = ("static", "next_turn", "chains")

    def __init__(
        self,
        ids: list[int],
        static: StaticPrefix | None = None,
        next_turn: StaticPrefix | None = None,
    ):
        super().__init__(ids)
        self.static, self.next_turn = static, next_turn
        self.chains: dict[tuple[int, str], list[int]] = {}


def request_chain(ids: Sequence[int], block_size: int, extras: Sequence[Any] = ()) -> list[int]:
    """`chain(ids, block_size, extras)`, reusing the cached prefix's hashes; the next
    turn's prefix keeps its part, so that turn hashes only its own new blocks."""
    memo = getattr(ids, "chains", None)
    key = (block_size, repr(list(extras[:1])))
    if memo is not None and key in memo:
        return memo[key]
    static = getattr(ids, "static", None)
    head = static.chain(block_size, extras) if static is not None else []
    if not head or any(extras[len(head) :]):  # extra keys past the prefix: hash it all
        hashes = chain(ids, block_size, extras)
    else:
        hashes = head + chain(ids[len(head) * block_size :], block_size, (), parent=head[-1])
    next_turn = getattr(ids, "next_turn", None)
    if next_turn is not None:
        next_turn.seed(block_size, extras, hashes)
    if memo is not None and len(memo) < CHAINS_PER_PREFIX:
        memo[key] = hashes
    return hashes

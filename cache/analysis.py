"""One analysis per document: what every request over the same bytes computed again.

Each analysis (a document's readable-script check, its sentence set, ...) is a pure
function of one text, so its result is kept by content: `get(kind, tenant, text,
compute)` runs `compute(text)` once per (kind, tenant, text) and hands back the same
result after, while kept. Why: docs/decisions/0012-fast-extractive-scoring-and-memos.md.

Keyed by tenant, like every content cache (cache/keys.py): a hit is faster than a miss,
so no tenant may learn from the time whether another sent a document. In process only:
an analysis costs microseconds per kilobyte, less than a Redis round trip would. Bounded
in bytes (an estimate of what Python holds) and shared fairly between tenants
(cache/lru.py). Thread-safe: the compress stage runs big contexts' analyses in worker
threads.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from cache.keys import tenant_tag
from cache.lru import OVERHEAD, ByteLRU

T = TypeVar("T")
ANALYSIS_BYTES = 32 << 20  # compression.analysis_bytes' default
MAX_TAGS = 4096  # tenants' tags kept (they are configured keys: a handful)


Key = tuple[str, str, Any]  # (tenant tag, kind, the content itself)


def analysis_key(
    kind: str, tenant: str, content: str | tuple[str, ...], tag: str | None = None
) -> Key:
    """The entry of `content` for `tenant`: the content itself, not a digest of it. A
    dict hashes a str once per object (Python caches it) and compares bytes only on a
    hash match, so a follow-up's lookups cost no pass over its documents beyond that one
    hash, where a digest per lookup cost a copy and a pass each (blake2b was ~3 µs per
    1k tokens, per kind, per request). Exact: equal keys are equal bytes, no digest
    collision to reason about. The tag keeps tenants apart and is the LRU's owner."""
    return (tenant_tag(tenant) if tag is None else tag, kind, content)


def document_digest(text: str) -> str:
    """A document's name in store keys (the memo's, the features', a stable form's): its
    sha256, so a key names the bytes without carrying them."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def document_names(
    analyses: DocumentAnalyses | None, tenant: str, documents: Sequence[str]
) -> list[str]:
    """Each document's digest, hashed once per (tenant, document) while the analyses keep
    it: every store key of a request is made from these (a follow-up's keys cost no pass
    over its documents). Per tenant, like every analysis: a hit tells nothing of another."""
    if analyses is None:
        return [document_digest(d) for d in documents]
    return list(analyses.each("digest", tenant, documents, document_digest))


@dataclass(frozen=True)
class Each:
    """One small result per text of a set (a digest, a flag, a count), in order."""

    values: tuple[Any, ...]

    @property
    def nbytes(self) -> int:  # a slot and a small object each, a string's characters
        return sum(40 + len(v) if isinstance(v, str) else 40 for v in self.values)


def _chars(content: str | tuple[str, ...]) -> int:
    return len(content) if isinstance(content, str) else sum(map(len, content))


class Weighed(Protocol):
    """A result that states what it holds (a prepared document set's arrays)."""

    @property
    def nbytes(self) -> int: ...


def held_bytes(value: Any, chars: int) -> int:
    """What Python holds for a result, roughly: a flag, a string of its own (a digest),
    what a `Weighed` result states, or pieces of the text (strings, and the tuple and
    set around them: about twice the text's `chars`)."""
    if isinstance(value, bool | int | float):
        return OVERHEAD
    if isinstance(value, str):
        return OVERHEAD + len(value)
    stated = getattr(value, "nbytes", None)  # a Weighed result (isinstance on a runtime
    if isinstance(stated, int):  # protocol cost ~2 µs a call, once per miss)
        return OVERHEAD + stated
    return OVERHEAD + 2 * chars


class DocumentAnalyses:
    def __init__(self, max_bytes: int = ANALYSIS_BYTES):
        self.order = ByteLRU(max_bytes, owner=_owner)
        self._values: dict[Key, Any] = {}
        self._lock = threading.Lock()
        self._tags: dict[str, str] = {}  # tenant -> its tag (a hash: once per tenant)
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._values)

    def get(self, kind: str, tenant: str, text: Any, compute: Callable[[Any], T]) -> T:
        """`compute(text)`, computed once per (kind, tenant, text) while kept. `text`: a
        document, or a tuple of them (a set's analysis)."""
        tag = self._tags.get(tenant)
        if tag is None:
            if len(self._tags) >= MAX_TAGS:
                self._tags.clear()
            tag = self._tags[tenant] = tenant_tag(tenant)
        key = analysis_key(kind, tenant, text, tag)
        with self._lock:
            if key in self._values:
                self.hits += 1
                self.order.touch(key)
                return self._values[key]
        value = compute(text)  # outside the lock: another thread may compute it too
        with self._lock:
            self.misses += 1
            self._values[key] = value
            chars = _chars(text)  # the key holds the content: counted with the result
            for old in self.order.set(key, OVERHEAD + chars + held_bytes(value, chars)):
                self._values.pop(old, None)
        return value

    def each(
        self, kind: str, tenant: str, texts: Sequence[str], compute: Callable[[str], T]
    ) -> tuple[T, ...]:
        """`compute(text)` for each of `texts`, a small result each: one lookup when the
        set recurs whole (a follow-up's documents; a lookup per text costs ~2 µs), and
        each text's own entry for a set not seen whole (its seen texts still hit)."""

        def every(whole: tuple[str, ...]) -> Each:
            return Each(tuple(self.get(kind, tenant, t, compute) for t in whole))

        return self.get(kind + "[]", tenant, tuple(texts), every).values


def _owner(key: Key) -> str:
    return key[0]

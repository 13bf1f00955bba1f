"""Prefix affinity: send requests that share a static prefix to the same backend.

Rendezvous (highest-random-weight) hashing on `ctx.prefix_key`: every backend gets a
weight `H(key, url)` and the heaviest one wins. The hash is a keyed blake2b of the key
and the backend URL, never Python's `hash()`, so every ragtrim replica (any process,
any PYTHONHASHSEED) ranks the backends of one key identically without talking to the
others. Adding a backend moves only the keys it now wins (about 1/n of them); removing
one moves only the keys it held, each to the next backend in that key's order.

Backends are identified by URL: replicas must be configured with the same URL strings
(a trailing slash is ignored).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext
from proxy.routing.router import Cycle

_PERSON = b"ragtrim-hrw-v1"  # blake2b personalisation: a version for the hash itself
_M64 = (1 << 64) - 1


def _canonical_url(url: str) -> str:
    return url.rstrip("/")


def hrw_weight(key: str, url: str) -> int:
    """The rendezvous weight of `url` for `key`: 64 bits, the same in every process."""
    digest = hashlib.blake2b(digest_size=8, person=_PERSON)
    digest.update(key.encode())
    digest.update(b"\x00")
    digest.update(_canonical_url(url).encode())
    return int.from_bytes(digest.digest(), "big")


def mix64(x: int) -> int:
    """splitmix64's finalizer (Steele et al., 2014): 64 well-mixed bits from 64, for a
    rendezvous weight of an int key and a URL's own weight, `mix64(key ^ weight)`:
    about 1 µs, against a blake2b per URL (the kv scorer does 16 per request)."""
    x &= _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


class PrefixAffinity:
    """Scores the key's rendezvous order by rank: first 1.0, then 1 - rank/n.

    Without a prefix key every candidate scores 0.0: no preference, so the other
    scorers (and the picker's URL tie-break) decide.
    """

    name = "affinity"

    def score(
        self, ctx: RequestContext, endpoints: Sequence[Endpoint], cycle: Cycle | None = None
    ) -> dict[Endpoint, float]:
        key = ctx.prefix_key
        if key is None:
            return dict.fromkeys(endpoints, 0.0)
        n = len(endpoints)
        ordered = sorted(endpoints, key=lambda ep: (-hrw_weight(key, ep.url), ep.url))
        return {ep: 1.0 - rank / n for rank, ep in enumerate(ordered)}

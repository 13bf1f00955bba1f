"""The rendezvous order a key gives, as a test oracle: the product ranks by score
(proxy/routing/affinity.py `PrefixAffinity`), the tests check it against this."""

from __future__ import annotations

from collections.abc import Iterable

from proxy.routing.affinity import hrw_weight


def rendezvous_order(key: str, urls: Iterable[str]) -> list[str]:
    """`urls` ordered by rendezvous weight for `key`, heaviest first (ties by URL)."""
    return sorted(urls, key=lambda url: (-hrw_weight(key, url), url))

"""The kv_cache scorer's third role: what the kv pickers read of a request
(proxy/routing/kv/picker.py `Held`, written into the ranking's Cycle under `HELD`): each
in-sync candidate's share of the request's leading blocks, the tokens it holds, the
candidates with room, and the tokens each lacks priced by how often their blocks are
reused (proxy/routing/kv/reuse.py), which `learn` keeps up to date from every ranking.
"""

from __future__ import annotations

from typing import NamedTuple

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext
from proxy.routing.kv.index import KvIndex
from proxy.routing.kv.picker import ROOM_WINDOW_S, Held
from proxy.routing.kv.reuse import Prices, Reuse, prices, sampled


class Share(NamedTuple):
    """One in-sync candidate's hold on the request: the leading-block share, the
    request's hashes at the candidate's block size, the tokens held, the block size and
    the leading blocks held."""

    share: float
    hashes: list[int]
    tokens: int
    size: int
    leading: int


class Stakes:
    def __init__(self) -> None:
        self.reuse = Reuse()

    def stake(self, ctx: RequestContext, shares: dict[Endpoint, Share] | None,
              index: KvIndex) -> Held | None:  # fmt: skip
        """What the picker reads; None when no candidate holds any of the request."""
        held = {ep: s.share for ep, s in (shares or {}).items()}
        if not shares or not held or max(held.values()) <= 0:
            return None
        roomy = index.roomy([ep.url for ep in held], ROOM_WINDOW_S)
        tokens = {ep: s.tokens for ep, s in shares.items()}
        total = len(ctx.token_ids or ())
        return Held(held, frozenset(ep for ep in held if ep.url in roomy), tokens, total,
                    self._priced(shares, total))  # fmt: skip

    def learn(self, shares: dict[Endpoint, Share] | None) -> None:
        """The request's blocks, sampled, into the reuse counts (one chain per size)."""
        for s in {s.size: s for s in (shares or {}).values()}.values():
            self.reuse.learn(sampled(s.hashes))

    def _priced(self, shares: dict[Endpoint, Share], total: int) -> dict[Endpoint, float]:
        """Each candidate's missing tokens, a block worth a second home at 1/its reuse;
        a trailing partial block at full price."""
        by_size: dict[int, Prices] = {}
        out = {}
        for ep, s in shares.items():
            if s.size not in by_size:
                by_size[s.size] = self._prices(s.size, shares)
            missing = by_size[s.size].missing(s.leading)
            out[ep] = min(total - s.tokens, missing + max(0, total - len(s.hashes) * s.size))
        return out

    def _prices(self, size: int, shares: dict[Endpoint, Share]) -> Prices:
        same = [s for s in shares.values() if s.size == size]
        return prices(self.reuse, same[0].hashes, [s.leading for s in same], size, len(shares))

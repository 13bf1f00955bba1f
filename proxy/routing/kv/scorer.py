"""The `kv_cache` scorer: the share of the request's full blocks a backend holds.

    score(backend) = leading blocks of the request found in its index / full blocks

counting from the first block and stopping at the first miss: vLLM's prefix cache
reuses a block only when every block before it is reused too. The request's blocks are
ragtrim's chain hashes (proxy/routing/kv/chain.py) over its token ids as vLLM
tokenizes them (proxy/routing/kv/chat_tokens.py), with its cache_salt in the first block's extra
keys as vLLM puts it there, so another tenant's identical prompt scores 0. The block
size is each backend's own, from its events.

Ties (a new conversation that only shares the system prompt with everyone) would all
go to the first URL; a small rendezvous term (TIE_WEIGHT, on the request's last full
block) spreads them, so that equal scores still spread over replicas while any
difference of one block in a request of up to 1/TIE_WEIGHT blocks wins. A request
held nowhere (a new prefix; its concurrent copies cannot see each other's blocks
before the first one's events arrive) gets the rendezvous affinity scores instead
(counted, reason "cold"), so copies of a new prefix land together as with affinity.
With kv_events the bounded-load floor scales with what a spill would lose
(proxy/routing/kv/picker.py), and the `cost` picker (proxy/routing/kv/cost.py) weighs
the tokens each replica holds against its queue: the scorer leaves each request's
shares and held tokens in the ranking's `Cycle` (proxy/routing/router.py).
A prefix held by one replica only (one application's system prompt) would otherwise
draw every new conversation there; spilled once, its blocks are stored on the other
replica too, the index sees them, and the floor for requests that share only it drops.

Fallback, counted (ragtrim_kv_fallbacks_total{reason}): a backend whose events are not
in sync (never subscribed, replay failed, disconnected; reason "stale") or a request
without token ids (no local tokenizer, a pass-through route; reason "no_tokens") gets
the rendezvous affinity score (proxy/routing/affinity.py) instead, the routing
ragtrim had before the events.

The scorer's roles, one home each: the token ids before ranking
(proxy/routing/kv/request_ids.py: `prepare`, awaited by Router.prepare, in a worker
thread when at least `thread_bytes` of text would be encoded, so a long conversation's
template and BPE never hold the event loop); each backend's share of the request (here);
what the kv pickers read and the blocks' reuse (proxy/routing/kv/stakes.py); the score
with its fallbacks and tie term (here). A prefix already cached
(a static prefix or a conversation's last turn, proxy/routing/kv/prompt_prefixes.py)
does not count: a 6k-token tenant context costs 0.2 ms then, and under load a thread
hop waits for the GIL behind the loop (up to its 5 ms switch interval). Its chain
hashes are cached with it (proxy/routing/kv/prefix_chain.py), so only the blocks after
it are hashed. A request ranked without
`prepare` (warm-up's replays) is tokenized inline, as before.

Composes with `load` and the `bounded` picker like any scorer, named in
routing.scorers (e.g. `kv_cache:1,load:0.3`; kv_events.enabled requires it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext
from proxy.routing.affinity import PrefixAffinity, hrw_weight, mix64
from proxy.routing.kv.chain import block_hash
from proxy.routing.kv.chat_tokens import RequestTokens
from proxy.routing.kv.index import KvIndex
from proxy.routing.kv.picker import HELD
from proxy.routing.kv.prefix_chain import request_chain
from proxy.routing.kv.request_ids import (
    DEFAULT_BLOCK_SIZE,
    cache_salt_extras,
    prepare_ids,
    request_ids,
)
from proxy.routing.kv.stakes import Share, Stakes
from proxy.routing.router import Cycle

TIE_WEIGHT = 0.002
MAX_URLS = 4096  # URL weights kept for the tie term


class KvCacheScorer:
    name = "kv_cache"

    def __init__(
        self,
        index: KvIndex,
        tokens: RequestTokens,
        on_fallback: Callable[[str], None] | None = None,
        *,
        thread_bytes: int,
    ):
        """`thread_bytes` comes from KvEventsSettings.tokenize_thread_bytes."""
        self.index, self.tokens, self.thread_bytes = index, tokens, thread_bytes
        self.affinity = PrefixAffinity()
        self.stakes = Stakes()
        self._url_weights: dict[str, int] = {}
        self.on_fallback = on_fallback or (lambda reason: None)

    async def prepare(self, ctx: RequestContext) -> None:
        """ctx.token_ids before ranking (proxy/routing/kv/request_ids.py)."""
        await prepare_ids(ctx, self.index, self.tokens, self.thread_bytes)

    def shares(self, ctx: RequestContext, endpoints: Sequence[Endpoint]) -> dict | None:
        """A Share per in-sync endpoint (None: no token ids); the others are left out."""
        if ctx.token_ids is None:
            ctx.token_ids = request_ids(ctx, self.index, self.tokens) or []
        ids = ctx.token_ids
        if not ids:
            return None
        extras = cache_salt_extras(ctx)
        by_size: dict[int, list[int]] = {}
        out: dict[Endpoint, Share] = {}
        # No lock: reads are single dict lookups (proxy/routing/kv/index.py KvIndex).
        states = {ep: self.index.backend(ep.url) for ep in endpoints}
        fleet_size = next(
            (st.block_size for st in states.values() if st and st.block_size), DEFAULT_BLOCK_SIZE
        )
        for ep, state in states.items():
            if state is None or not state.synced:
                continue
            size = state.block_size or fleet_size  # one that stored nothing yet: the fleet's
            hashes = by_size.get(size)
            if hashes is None:
                hashes = request_chain(ids, size, extras) or [block_hash(None, ids)]
                by_size[size] = hashes
            leading = state.leading(hashes)
            held = min(len(ids), leading * size)
            out[ep] = Share(leading / len(hashes), hashes, held, size, leading)
        return out

    def _tie(self, block: int, url: str) -> float:
        """`url`'s rendezvous weight in [0, 1) for the request's last block, the same in
        every ragtrim process; the URL's part is hashed once."""
        seed = self._url_weights.get(url)
        if seed is None:
            if len(self._url_weights) >= MAX_URLS:  # churn: replicas come and go
                self._url_weights.clear()
            seed = self._url_weights[url] = hrw_weight("", url)
        return mix64(block ^ seed) / 2**64

    def score(
        self, ctx: RequestContext, endpoints: Sequence[Endpoint], cycle: Cycle | None = None
    ) -> dict[Endpoint, float]:
        shares = self.shares(ctx, endpoints)
        if cycle is not None:  # for the kv pickers
            stake = self.stakes.stake(ctx, shares, self.index)
            if stake is not None:
                cycle.write(HELD, stake)
        self.stakes.learn(shares)
        if shares is None:
            self.on_fallback("no_tokens")
            return self.affinity.score(ctx, endpoints)
        if shares and max(s.share for s in shares.values()) == 0:
            self.on_fallback("cold")  # held nowhere: rendezvous keeps its copies together
            return self.affinity.score(ctx, endpoints)
        scores = {
            ep: (1 - TIE_WEIGHT) * share + TIE_WEIGHT * self._tie(hashes[-1], ep.url)
            for ep, (share, hashes, *_) in shares.items()
        }
        stale = [ep for ep in endpoints if ep not in shares]
        if stale:
            for _ in stale:
                self.on_fallback("stale")
            fallback = self.affinity.score(ctx, endpoints)
            scores.update({ep: fallback[ep] for ep in stale})
        return scores

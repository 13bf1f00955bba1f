"""KV-event routing's long-lived parts, built from settings with their metrics.

proxy/components.py builds one (`build_kv`) when `routing.kv_events.enabled`, hands
it to the router registry (the `kv_cache` scorer reads its index and token ids and
leaves each request's shares in the ranking's `Cycle` for the kv pickers) and
starts/stops its subscriptions with the app's lifespan.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from proxy.backends.endpoint import Endpoint, EndpointPool
from proxy.metrics import Metrics
from proxy.routing.kv.chat_tokens import RequestTokens
from proxy.routing.kv.index import BYTES_PER_BLOCK, KvIndex
from proxy.routing.kv.subscriber import Hooks
from proxy.routing.kv.subscriptions import KvSubscriptions
from proxy.settings import KvEventsSettings


@dataclass
class KvRouting:
    index: KvIndex
    tokens: RequestTokens
    subscriptions: KvSubscriptions
    on_loaded: Callable[[], None] = lambda: None  # a tokenizer loaded (the app's hook)

    async def start(self) -> None:
        await self.subscriptions.start()

    async def stop(self) -> None:
        await self.subscriptions.stop()

    async def warm(self, ep: Endpoint) -> None:
        """A backend turned healthy: load its model's tokenizer and template off the
        event loop (the first request would block the loop for seconds, and with it
        every subscriber: events queue, their lag grows). A new tokenizer is then
        reported to `on_loaded` (a served process freezes it: proxy/server/heap.py)."""
        for card in ep.model_cards:
            model = card.get("id")
            fresh = not self.tokens.loaded(model)
            await asyncio.to_thread(self._load, model)
            if fresh and self.tokens.loaded(model):
                self.on_loaded()

    def _load(self, model: str | None) -> None:
        tok = self.tokens.tokenizer(model)
        if tok is not None:
            tok.chat({"messages": [{"role": "user", "content": "warm"}]})


def build_kv(
    settings: KvEventsSettings,
    pool: EndpointPool,
    m: Metrics,
    tokenizer_dir: str,
    on_loaded: Callable[[], None] = lambda: None,
) -> KvRouting | None:
    if not settings.enabled:
        return None
    index = KvIndex(
        settings.max_blocks_per_backend, on_orphan=m.kv_orphans.inc, on_evict=m.kv_evicted.inc
    )
    m.kv_index_blocks.set_function(index.blocks)
    m.kv_index_bytes.set_function(lambda: index.blocks() * BYTES_PER_BLOCK)
    hooks = Hooks(
        lag=m.kv_event_lag.observe,
        resync=lambda why: m.kv_resyncs.labels(why).inc(),
        batch=m.kv_batches.inc,
        bad=m.kv_bad_messages.inc,
    )
    tokens = RequestTokens(
        pool,
        on_cost=m.kv_tokenize_cost.observe,
        explicit_dir=tokenizer_dir,
        max_tokens=settings.max_prefix_tokens,
    )
    return KvRouting(index, tokens, KvSubscriptions(pool, index, settings, hooks), on_loaded)

"""The kv_cache scorer's first role: the token ids vLLM will see for a request, and their
chain hashes at each block size the index knows (kept with the ids:
proxy/routing/kv/prefix_chain.py), computed before ranking (`prepare_ids`, awaited by
`Router.prepare`): in a worker thread when at least `thread_bytes`
(kv_events.tokenize_thread_bytes) of text would be encoded, inline below, where the
thread hop costs about what the tokenizing does. A request ranked without `prepare`
(warm-up's replays) is tokenized inline, once (`request_ids`).
"""

from __future__ import annotations

import asyncio

from proxy.context import RequestContext
from proxy.routing.kv.chain import request_extras
from proxy.routing.kv.chat_tokens import RequestTokens
from proxy.routing.kv.index import KvIndex
from proxy.routing.kv.prefix_chain import request_chain

DEFAULT_BLOCK_SIZE = 16  # GPU vLLM's: a backend that stored nothing yet is taken to use it


async def prepare_ids(ctx: RequestContext, index: KvIndex, tokens: RequestTokens,
                      thread_bytes: int) -> None:  # fmt: skip
    """ctx.token_ids before ranking; [] when there are none (fail-open: counted as
    "no_tokens" when scored, and routed by affinity)."""
    if ctx.route not in ("chat", "completions"):
        return
    try:
        pending = tokens.pending_bytes(ctx.route, ctx.body, ctx.model)
        if pending >= thread_bytes:
            ids = await asyncio.to_thread(request_ids, ctx, index, tokens)
        else:
            ids = request_ids(ctx, index, tokens)
    except Exception:  # noqa: BLE001 - routing never fails for want of token ids
        ids = None
    ctx.token_ids = ids or []


def request_ids(ctx: RequestContext, index: KvIndex, tokens: RequestTokens) -> list[int] | None:
    """The ids, and their chain at each block size the index knows: in `prepare_ids`'s
    thread for a big request, so ranking on the loop hashes nothing new."""
    ids = tokens.ids(ctx.route, ctx.body, ctx.model, wait=False)  # never loads here
    if ids:
        extras = cache_salt_extras(ctx)
        sizes = {st.block_size for st in list(index.backends.values()) if st.block_size}
        for size in sizes or {DEFAULT_BLOCK_SIZE}:  # a backend that stored nothing yet
            request_chain(ids, size, extras)
    return ids


def cache_salt_extras(ctx: RequestContext) -> list:
    """The first block's extra keys, as vLLM puts the request's cache_salt there."""
    salt = ctx.body.get("cache_salt")
    return request_extras(salt if isinstance(salt, str) else None)

"""What the backends hold of a candidate prompt, by ragtrim's record of what it forwarded:
the proxy's side of cache/forwarded.py. Why: docs/decisions/0015-prefix-cache-reuse.md.

Before anything is sent, the compress stage asks `held` for the client's prompt and for
a compressed form sent before (proxy/compression/stable.py); the request's `CachePlan`
then carries the blocks of what was sent, and the response hooks close the loop:
`expect` when the backend is known (its headers), `confirm` with the `cached_tokens`
vLLM reports.

Which backend: the decision comes before routing, so `held` answers for the backend
holding the most; the router, by prefix affinity (rendezvous or KV events), sends the
request where that prefix lives. A backend that left the pool is forgotten (the pool's
`on_removed`, proxy/compression/parts.py); one that restarted empty at the same address
is corrected by its first `cached_tokens`, which shortens its horizon
(cache/forwarded.py).

Units: the prompt's text (proxy/prompt/cache_text.py) in fixed-width blocks, converted
to tokens with the tenant's characters per token; the partition is the model and the
client's `cache_salt`, as vLLM keys its blocks. The KV index (routing.kv_events) would
answer exactly, from token ids; it is not consulted here.
"""

from __future__ import annotations

from cache.analysis import DocumentAnalyses
from cache.forwarded import ForwardedRecord
from cache.prompt_blocks import Blocks
from proxy.backends.endpoint import EndpointPool
from proxy.context import CachePlan

MAX_HASHED_CHARS = 262_144  # ~64k tokens of a prompt's head: what a record holds of it


class CacheView:
    """The record of forwarded prompts, asked per candidate; not thread-safe (event loop).
    `analyses`: where a candidate's recurring head keeps its chain (per tenant, by
    content), so a follow-up hashes only what changed after its documents."""

    def __init__(
        self,
        record: ForwardedRecord,
        pool: EndpointPool,
        block_size: int,
        analyses: DocumentAnalyses | None = None,
    ):
        self.record = record
        self.pool = pool
        self.block_size = block_size
        self.analyses = analyses

    def blocks(
        self, tenant: str, text: str, partition: str, chars_per_token: float, head: int = 0
    ) -> Blocks:
        """The chain of the first MAX_HASHED_CHARS of `text` (hashing runs on the event
        loop; docs/decisions/0044-compression-service-path.md). Beyond the bound nothing
        counts as held: the safe side (the tokens are priced as uncached). `head`: where
        the part of `text` that recurs across requests ends (its documents' end)."""
        memo = self.analyses
        heads = None if memo is None else (lambda kind, t, make: memo.get(kind, tenant, t, make))
        return self.record.blocks(
            tenant,
            text[:MAX_HASHED_CHARS],
            self.block_size,
            partition=partition,
            chars_per_token=chars_per_token,
            head=head,
            heads=heads,
        )

    def held(self, blocks: Blocks) -> int:
        """Leading tokens of `blocks` held by the backend that holds the most."""
        return max((self.record.held(ep.url, blocks) for ep in self.pool.endpoints), default=0)

    def expect(self, plan: CachePlan | None, backend: str) -> None:
        """The request went to `backend`: what the record predicts, kept for `confirm`."""
        if plan is not None and plan.sent is not None:
            plan.receipt = self.record.expect(backend, plan.sent)

    def confirm(self, plan: CachePlan | None, cached_tokens: int | None) -> None:
        """The backend prefilled it: its blocks are held from now, and the `cached_tokens`
        it reported (None: not reported) corrects the record's horizon."""
        if plan is None or plan.receipt is None:
            return
        self.record.confirm(plan.receipt, cached_tokens)
        plan.receipt = None  # confirmed once

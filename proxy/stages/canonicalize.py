"""Canonicalize stage: the static prefix byte-stable and first (proxy/prompt/prefix); its key.

Runs after compress: the segmenter's `static_end` lies before every document, so
compressing documents never moves it, while canonicalizing would shift document
offsets — this order needs no offset bookkeeping.

A body above `offload_bytes` is canonicalized in a worker thread (why:
docs/decisions/0044-compression-service-path.md); the shape caps of proxy/request/parse.py bound the
messages and tools it walks, and its steps are short calls that let the loop in.
"""

from __future__ import annotations

import asyncio

from proxy.context import RequestContext
from proxy.metrics import Metrics
from proxy.prompt.prefix import CanonicalRules, prefix_key
from proxy.settings import CanonicalSettings


def rules_from(settings: CanonicalSettings) -> CanonicalRules:
    return CanonicalRules(
        normalize_newlines=settings.normalize_newlines,
        strip_trailing_whitespace=settings.strip_trailing_whitespace,
        sort_tools=settings.sort_tools,
        move_volatile=settings.move_volatile,
        extra_volatile=tuple(settings.extra_volatile),
    )


class CanonicalizeStage:
    name = "canonicalize"

    def __init__(self, settings: CanonicalSettings, metrics: Metrics, offload_bytes: int):
        self.rules = rules_from(settings)  # volatile patterns compiled once, here
        self.metrics = metrics
        self.offload_bytes = offload_bytes  # compression.limits.offload_bytes

    async def __call__(self, ctx: RequestContext) -> None:
        seg = ctx.segmentation
        end = seg.static_end if seg else None
        if len(ctx.raw) > self.offload_bytes:
            result = await asyncio.to_thread(ctx.prompt.canonicalize, self.rules, end)
        else:
            result = ctx.prompt.canonicalize(self.rules, end)
        if result is None:
            return
        if result.changed:
            self.metrics.canonical_rewrites.inc()
        if result.static_prefix in ("", "[]") and not result.tools_json:
            return  # no static part: nothing to route on or to warm
        salt = str(ctx.body.get("cache_salt", ""))
        model = ctx.model or ""  # a body may name none: vLLM's served model
        ctx.prefix_key = prefix_key(model, result.static_prefix, result.tools_json, salt)
        ctx.replay = ctx.prompt.replay(result.static_end)
        ctx.outcome.prefix_key = ctx.prefix_key

"""Compress stage: the request's documents through the compression service
(proxy/compression/service.py `CompressionService.decide_and_run`, which says how and
when), written back into the body. The rate is the request's own
(proxy/prompt/ragtrim_options.py) or the settings'.

With tenancy on, the headers that time the compression or count its cache hits never
reach a client (issue 44): a hit is many times faster than a miss, and a client that
could read which of its documents or sentences were already known would learn what was
sent before it (vLLM's CVE-2025-46570 class). Every content cache is per tenant too;
the headers go anyway, as the backend's URL does (`tenancy.backend_header`)."""

from __future__ import annotations

from dataclasses import dataclass

from proxy.compression.service import CompressionService
from proxy.context import RequestContext

# what a cache hit shows: the time taken, the memo's hits, the features already seen
CACHE_TELLING = ("x-ragtrim-compress-ms", "x-ragtrim-cache-hits", "x-ragtrim-features-seen")


@dataclass(eq=False)
class CompressStage:
    """`default_rate` None: compression.enabled is false (only a request's own rate).
    `show_timings`: send CACHE_TELLING to the client (false when tenancy.api_keys is set)."""

    service: CompressionService
    default_rate: float | None
    show_timings: bool
    name = "compress"

    async def __call__(self, ctx: RequestContext) -> None:
        seg = ctx.segmentation
        if seg is None:
            return
        rate = ctx.options.keep_rate(self.default_rate)
        try:
            new_texts = await self.service.decide_and_run(ctx, seg.texts, seg.question, rate)
        finally:
            if not self.show_timings:
                for name in CACHE_TELLING:
                    ctx.response_headers.pop(name, None)
        if seg.must_apply(new_texts):  # markers (tags) go even when nothing shrinks
            ctx.prompt.apply(seg, new_texts)

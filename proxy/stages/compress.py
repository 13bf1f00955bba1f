"""Compress stage: the request's documents through the compression service
(proxy/compression/service.py `CompressionService.decide_and_run`, which says how and
when), written back into the body. The rate is the request's own
(proxy/prompt/ragtrim_options.py) or the settings'."""

from __future__ import annotations

from dataclasses import dataclass

from proxy.compression.service import CompressionService
from proxy.context import RequestContext


@dataclass(eq=False)
class CompressStage:
    """`default_rate` None: compression.enabled is false (only a request's own rate)."""

    service: CompressionService
    default_rate: float | None
    name = "compress"

    async def __call__(self, ctx: RequestContext) -> None:
        seg = ctx.segmentation
        if seg is None:
            return
        rate = ctx.options.keep_rate(self.default_rate)
        new_texts = await self.service.decide_and_run(ctx, seg.texts, seg.question, rate)
        if seg.must_apply(new_texts):  # markers (tags) go even when nothing shrinks
            ctx.prompt.apply(seg, new_texts)

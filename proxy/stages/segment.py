"""Segment stage: find the context documents and the question (compressors.segment)."""

from __future__ import annotations

from compressors.segment import Segmenter
from proxy.context import RequestContext


class SegmentStage:
    name = "segment"

    def __init__(self, segmenter: Segmenter):
        self.segmenter = segmenter  # built once, in the composition root

    async def __call__(self, ctx: RequestContext) -> None:
        seg = ctx.prompt.segment(self.segmenter, ctx.options.field)
        if seg is not None:
            ctx.segmentation = seg
            ctx.response_headers["x-ragtrim-template"] = seg.template

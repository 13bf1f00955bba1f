"""Segment stage: find the context documents and the question (proxy.prompt.segment).

Bounded work: the documents named in the request's `ragtrim` field are
checked against `compression.limits` before any is looked for (400 for too many, 413
for too long: the client asked for them explicitly), and segmentation itself is linear
(proxy/prompt/segment). A prompt larger than `offload_bytes` is segmented in a worker
thread, so a 2 MB prompt never holds the event loop (health probes, other requests);
a small one stays on the loop, where the thread hop (~50 µs) would cost more than the
work.

The question the compressor scores documents against is capped at
`requests.max_question_chars` (why: docs/decisions/0044-compression-service-path.md):
a longer one keeps its head and tail for scoring. Only the scoring sees the cut; the
prompt upstream is unchanged, so a client who pastes a long text into its last message
is served, not refused.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from proxy.compression.limits import cap_question, check_documents
from proxy.context import RequestContext
from proxy.prompt.segment import Segmentation, Segmenter
from proxy.settings import CompressionLimitSettings, RequestLimitSettings


class SegmentStage:
    name = "segment"

    def __init__(
        self,
        segmenter: Segmenter,
        limits: CompressionLimitSettings | None = None,
        requests: RequestLimitSettings | None = None,
    ):
        self.segmenter = segmenter  # built once, in the composition root
        self.limits = limits or CompressionLimitSettings()
        self.max_question_chars = (requests or RequestLimitSettings()).max_question_chars

    async def __call__(self, ctx: RequestContext) -> None:
        field = ctx.options.field
        check_documents(_named(field), self.limits, "ragtrim.documents")
        if len(ctx.raw) > self.limits.offload_bytes:
            seg = await asyncio.to_thread(ctx.prompt.segment, self.segmenter, field)
        else:
            seg = ctx.prompt.segment(self.segmenter, field)
        if seg is not None:
            ctx.segmentation = capped_question(seg, self.max_question_chars)
            ctx.outcome.template = seg.template


def capped_question(seg: Segmentation, cap: int) -> Segmentation:
    """The segmentation with its question cut to `cap` characters (cap_question)."""
    if len(seg.question) <= cap:
        return seg
    return dataclasses.replace(seg, question=cap_question(seg.question, cap))


def _named(field: Any) -> list[Any]:
    docs = field.get("documents") if isinstance(field, dict) else None
    return docs if isinstance(docs, list) else []

"""The segment stage: a big body is segmented in a worker thread, a small one on the
event loop (issue 23: a 2 MB prompt held the loop, and /healthz, for 23 s)."""

import asyncio
import json
import threading

from proxy.context import RequestContext
from proxy.prompt.segment import Segmenter
from proxy.settings import CompressionLimitSettings
from proxy.stages.segment import SegmentStage


class Recording(Segmenter):
    def chat(self, messages, body_field=None):
        self.thread = threading.current_thread()
        return super().chat(messages, body_field)


def _segment_in(size: int) -> threading.Thread:
    body = {"model": "m", "messages": [{"role": "user", "content": "x" * size}]}
    ctx = RequestContext("r", "chat", json.dumps(body).encode(), body, {})
    segmenter = Recording()
    stage = SegmentStage(segmenter, CompressionLimitSettings(offload_bytes=1000))
    asyncio.run(stage(ctx))
    return segmenter.thread


def test_big_bodies_are_segmented_off_the_loop_small_ones_on_it():
    assert _segment_in(2000) is not threading.main_thread()
    assert _segment_in(10) is threading.main_thread()

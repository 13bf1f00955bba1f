"""The question the compressor scores against is capped (issue 33: a 900k-character
question held the GIL 517 ms in the worker); the prompt upstream is unchanged."""

import json

from proxy.context import RequestContext
from proxy.prompt.segment import Segmenter
from proxy.settings import RequestLimitSettings
from proxy.stages.options import OptionsStage
from proxy.stages.segment import SegmentStage

DOC = "The bridge was opened in 1932 and carries eight lanes."


async def test_a_long_question_keeps_its_head_and_tail_for_scoring_only():
    question = "HEAD " + "word " * 10_000 + "TAIL"
    messages = [{"role": "system", "content": "Context:\n\n" + DOC},
                {"role": "user", "content": question}]  # fmt: skip
    body = {"model": "m", "messages": messages, "ragtrim": {"documents": [DOC]}}
    ctx = RequestContext("r", "chat", json.dumps(body).encode(), body, {})
    await OptionsStage()(ctx)
    stage = SegmentStage(Segmenter(), requests=RequestLimitSettings(max_question_chars=100))
    await stage(ctx)
    seg = ctx.segmentation
    assert seg is not None and seg.texts == [DOC]
    assert len(seg.question) == 100
    assert seg.question.startswith("HEAD ") and seg.question.endswith(" TAIL")
    assert ctx.body["messages"][1]["content"] == question  # what goes upstream


async def test_a_short_question_is_left_as_is():
    messages = [{"role": "system", "content": "Context:\n\n" + DOC},
                {"role": "user", "content": "When?"}]  # fmt: skip
    body = {"model": "m", "messages": messages, "ragtrim": {"documents": [DOC]}}
    ctx = RequestContext("r", "chat", json.dumps(body).encode(), body, {})
    await OptionsStage()(ctx)
    await SegmentStage(Segmenter())(ctx)
    assert ctx.segmentation.question == "When?"
